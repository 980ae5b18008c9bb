from job_spec import run_job

run_job(snakemake, "collect_bench_table")  # mnnrepro/jobs/collect_bench_table.py
