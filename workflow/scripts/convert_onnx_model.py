from job_spec import run_job

run_job(snakemake, "convert_onnx_model")  # mnnrepro/jobs/convert_onnx_model.py
