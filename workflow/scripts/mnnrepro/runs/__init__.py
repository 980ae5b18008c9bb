"""Runs on a device (rules in workflow/rules/bench.smk): staging by hash (staging), the
interleaved schedule (schedule), the resumable benchmark (benchmark) with its thermal and quiet
gates (thermal) and stopping rule (precision), the greedy answers of the correctness gate
(greedy), the memory-bandwidth probe's run (bandwidth), power sampling for energy per token
(power), the device lock (device_lock) and the on-device runner of the prebuilt engine
(python_runner). What an engine runs and how its output is read is
its kind's (mnnrepro.engines)."""
