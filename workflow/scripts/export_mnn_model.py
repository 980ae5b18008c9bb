from job_spec import run_job

run_job(snakemake, "export_mnn_model")  # mnnrepro/jobs/export_mnn_model.py
