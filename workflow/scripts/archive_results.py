from job_spec import run_job

run_job(snakemake, "archive_results")  # mnnrepro/jobs/archive_results.py
