from job_spec import run_job

run_job(snakemake, "plot")  # mnnrepro/jobs/plot.py
