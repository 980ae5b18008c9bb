from job_spec import run_job

run_job(snakemake, "restore_archive")  # mnnrepro/jobs/restore_archive.py
