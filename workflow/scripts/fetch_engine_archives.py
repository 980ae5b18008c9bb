from job_spec import run_job

run_job(snakemake, "fetch_engine_archives")  # mnnrepro/jobs/fetch_engine_archives.py
