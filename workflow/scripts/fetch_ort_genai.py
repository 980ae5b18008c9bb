from job_spec import run_job

run_job(snakemake, "fetch_ort_genai")  # mnnrepro/jobs/fetch_ort_genai.py
