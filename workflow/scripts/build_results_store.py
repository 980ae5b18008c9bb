from job_spec import run_job

run_job(snakemake, "build_results_store")  # mnnrepro/jobs/build_results_store.py
