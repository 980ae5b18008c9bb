from job_spec import run_job

run_job(snakemake, "convert_gguf_model")  # mnnrepro/jobs/convert_gguf_model.py
