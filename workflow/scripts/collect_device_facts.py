from job_spec import run_job

run_job(snakemake, "collect_device_facts")  # mnnrepro/jobs/collect_device_facts.py
