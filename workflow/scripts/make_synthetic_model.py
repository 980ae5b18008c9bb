from job_spec import run_job

run_job(snakemake, "make_synthetic_model")  # mnnrepro/jobs/make_synthetic_model.py
