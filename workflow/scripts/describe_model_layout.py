from job_spec import run_job

run_job(snakemake, "describe_model_layout")  # mnnrepro/jobs/describe_model_layout.py
