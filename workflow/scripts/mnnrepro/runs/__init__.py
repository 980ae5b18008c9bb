"""Runs on a device (rules in workflow/rules/bench.smk): staging by hash (staging), the
interleaved schedule (schedule), engine kinds with their command lines and output readers
(engine_kinds, llmbench), the on-device runner of the prebuilt engine (prebuilt_runner), the
resumable benchmark (benchmark), the greedy answers of the correctness gate (greedy), the
memory-bandwidth probe's run (bandwidth) and power sampling for energy per token (power)."""
