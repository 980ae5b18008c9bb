from job_spec import run_job

run_job(snakemake, "compute_sweep_summary")  # mnnrepro/jobs/compute_sweep_summary.py
