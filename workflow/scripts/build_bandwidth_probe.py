from job_spec import run_job

run_job(snakemake, "build_bandwidth_probe")  # mnnrepro/jobs/build_bandwidth_probe.py
