from job_spec import run_job

run_job(snakemake, "build_sme_mask")  # mnnrepro/jobs/build_sme_mask.py
