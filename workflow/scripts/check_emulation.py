from job_spec import run_job

run_job(snakemake, "check_emulation")  # mnnrepro/jobs/check_emulation.py
