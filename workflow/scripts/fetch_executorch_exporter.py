from job_spec import run_job

run_job(snakemake, "fetch_executorch_exporter")  # mnnrepro/jobs/fetch_executorch_exporter.py
