from job_spec import run_job

run_job(snakemake, "run_bench")  # mnnrepro/jobs/run_bench.py
