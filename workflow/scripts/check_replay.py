from job_spec import run_job

run_job(snakemake, "check_replay")  # mnnrepro/jobs/check_replay.py
