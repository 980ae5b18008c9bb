from job_spec import run_job

run_job(snakemake, "fetch_modelscope_model")  # mnnrepro/jobs/fetch_modelscope_model.py
