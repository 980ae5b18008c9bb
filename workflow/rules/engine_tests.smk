# The engine's own test suite on every device it is compared on (`engine_tests`;
# runs/engine_tests.py): per device and engine, each named test its own process.


rule run_engine_tests:
    input:
        record=PLAN.tested_engine_record,
        engine_dir=PLAN.tested_engine_dir,
        facts="results/{experiment}/devices/{device}.json",  # after the device is known
        userland=PLAN.userland,
    output:
        tests="results/{experiment}/engine_tests/{device}/{engine}.json",
    log:
        "logs/run_engine_tests/{experiment}/{device}/{engine}.log",
    wildcard_constraints:
        engine=PLAN.alternatives(PLAN.used_engines),
    localrule: True
    conda:
        "../../envs/bench.yaml"
    threads: get_bench_threads
    params:
        device=PLAN.device_spec,
        engine_tests=PLAN.settings.engine_tests,
    message:
        "The own tests of engine {wildcards.engine} on device {wildcards.device}"
    script:
        "../scripts/run_engine_tests.py"
