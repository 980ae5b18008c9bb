from job_spec import run_job

run_job(snakemake, "run_engine_tests")  # mnnrepro/jobs/run_engine_tests.py
