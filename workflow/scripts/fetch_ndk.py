from job_spec import run_job

run_job(snakemake, "fetch_ndk")  # mnnrepro/jobs/fetch_ndk.py
