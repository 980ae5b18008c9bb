from job_spec import run_job

run_job(snakemake, "fetch_source")  # mnnrepro/jobs/fetch_source.py
