from job_spec import run_job

run_job(snakemake, "build_gate_tool")  # mnnrepro/jobs/build_gate_tool.py
