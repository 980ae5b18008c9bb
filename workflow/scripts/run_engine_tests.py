from mnnrepro.devices.factory import make_device
from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.records import read_record
from mnnrepro.runs.device_lock import holding
from mnnrepro.runs.engine_tests import run_engine_tests
from mnnrepro.runs.staging import stage_engine

log = log_to(snakemake.log[0])
record = read_record(snakemake.input.record, "engine")
device = make_device(snakemake.wildcards.device, snakemake.params.device)
try:
    with holding(device.lock_key, device.name):  # never while a benchmark runs on it
        where = (
            stage_engine(device, snakemake.input.engine_dir[0])
            if snakemake.input.engine_dir
            else None
        )
        result = run_engine_tests(device, record, where, snakemake.params.engine_tests)
finally:
    device.close()
for test in result["tests"]:
    print(
        f"{test['test']}: {test['outcome']} ({test['seconds']} s) {test['command_line']}", file=log
    )
write_json(snakemake.output.tests, {"experiment": snakemake.wildcards.experiment, **result})
