from job_spec import run_job

run_job(snakemake, "explain_gain")  # mnnrepro/jobs/explain_gain.py
