"""Each rule's job: `run(job)` in the module named as its shim in workflow/scripts/, handed
the job's spec (mnnrepro/job.py)."""
