from job_spec import run_job

run_job(snakemake, "fetch_emulation_userland")  # mnnrepro/jobs/fetch_emulation_userland.py
