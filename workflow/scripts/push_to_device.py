from job_spec import run_job

run_job(snakemake, "push_to_device")  # mnnrepro/jobs/push_to_device.py
