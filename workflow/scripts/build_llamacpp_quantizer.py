from job_spec import run_job

run_job(snakemake, "build_llamacpp_quantizer")  # mnnrepro/jobs/build_llamacpp_quantizer.py
