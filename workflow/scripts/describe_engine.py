from job_spec import run_job

run_job(snakemake, "describe_engine")  # mnnrepro/jobs/describe_engine.py
