from job_spec import run_job

run_job(snakemake, "collect_sweep_table")  # mnnrepro/jobs/collect_sweep_table.py
