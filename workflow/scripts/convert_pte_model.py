from job_spec import run_job

run_job(snakemake, "convert_pte_model")  # mnnrepro/jobs/convert_pte_model.py
