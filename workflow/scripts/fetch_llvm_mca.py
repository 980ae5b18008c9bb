from job_spec import run_job

run_job(snakemake, "fetch_llvm_mca")  # mnnrepro/jobs/fetch_llvm_mca.py
