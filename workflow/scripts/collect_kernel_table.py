from job_spec import run_job

run_job(snakemake, "collect_kernel_table")  # mnnrepro/jobs/collect_kernel_table.py
