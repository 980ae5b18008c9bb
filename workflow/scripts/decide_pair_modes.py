from job_spec import run_job

run_job(snakemake, "decide_pair_modes")  # mnnrepro/jobs/decide_pair_modes.py
