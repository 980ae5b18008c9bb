from job_spec import run_job

run_job(snakemake, "run_greedy")  # mnnrepro/jobs/run_greedy.py
