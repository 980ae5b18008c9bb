# Runs on a device: the greedy correctness run, then the interleaved benchmark schedule.


rule run_greedy:
    input:
        model="results/models/{model}/mnn",
        manifest="results/models/{model}/manifest.json",
        engines=get_engine_files,
        facts="results/{experiment}/devices/{device}.json",
    output:
        greedy="results/{experiment}/greedy/{device}/{model}.json",
    log:
        "logs/run_greedy/{experiment}/{device}/{model}.log",
    params:
        device=get_device_spec,
        variants=get_variant_specs,
        correctness=config["correctness"],
        timeout_s=config["bench"]["timeout_s"],
    threads: get_bench_threads
    message:
        "Greedy answers of every variant on device {wildcards.device}, model {wildcards.model}"
    conda:
        "../../envs/bench.yaml"
    script:
        "../scripts/run_greedy.py"


rule run_bench:
    input:
        model="results/models/{model}/mnn",
        manifest="results/models/{model}/manifest.json",
        engines=get_engine_files,
        facts="results/{experiment}/devices/{device}.json",
        greedy="results/{experiment}/greedy/{device}/{model}.json",
    output:
        runs="results/{experiment}/runs/{device}/{model}.json",
    log:
        "logs/run_bench/{experiment}/{device}/{model}.log",
    params:
        raw_dir="results/{experiment}/raw/{device}/{model}",
        device=get_device_spec,
        variants=get_variant_specs,
        bench=config["bench"],
    threads: get_bench_threads
    message:
        "Benchmark on device {wildcards.device}, model {wildcards.model}: "
        "variants interleaved, resumable"
    conda:
        "../../envs/bench.yaml"
    script:
        "../scripts/run_bench.py"
