from job_spec import run_job

run_job(snakemake, "profile_kernels")  # mnnrepro/jobs/profile_kernels.py
