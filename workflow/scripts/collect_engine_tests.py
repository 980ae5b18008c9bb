from job_spec import run_job

run_job(snakemake, "collect_engine_tests")  # mnnrepro/jobs/collect_engine_tests.py
