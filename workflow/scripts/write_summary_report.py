from job_spec import run_job

run_job(snakemake, "write_summary_report")  # mnnrepro/jobs/write_summary_report.py
