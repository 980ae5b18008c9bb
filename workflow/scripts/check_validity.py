from job_spec import run_job

run_job(snakemake, "check_validity")  # mnnrepro/jobs/check_validity.py
