from job_spec import run_job

run_job(snakemake, "build_engine")  # mnnrepro/jobs/build_engine.py
