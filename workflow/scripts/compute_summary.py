from job_spec import run_job

run_job(snakemake, "compute_summary")  # mnnrepro/jobs/compute_summary.py
