from job_spec import run_job

run_job(snakemake, "measure_bandwidth")  # mnnrepro/jobs/measure_bandwidth.py
