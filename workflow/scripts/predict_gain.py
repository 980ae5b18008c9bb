from job_spec import run_job

run_job(snakemake, "predict_gain")  # mnnrepro/jobs/predict_gain.py
