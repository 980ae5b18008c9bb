# Runs on a device: push (deduplicated by hash), the greedy correctness run, then the
# interleaved benchmark schedule.


rule push_to_device:
    input:
        model=get_model_dirs,
        manifest="results/models/{model}/manifest.json",
        facts="results/{experiment}/devices/{device}.json",
        userland=get_userland,
        engines=get_built_engine_dirs,
        gate_tools=get_gate_tool_dirs,
        runner=ENGINE_RUNNER,
    output:
        receipt="results/{experiment}/pushed/{device}/{model}.json",
    log:
        "logs/push_to_device/{experiment}/{device}/{model}.log",
    localrule: True
    conda:
        "../../envs/bench.yaml"
    params:
        device=get_device_spec,
        engine_names=BUILT_ENGINES,
        model_formats=MODEL_FORMATS,
    message:
        "Pushing model {wildcards.model} and the engine runner to device {wildcards.device}"
    script:
        "../scripts/push_to_device.py"


rule run_greedy:
    input:
        model=get_model_dirs,
        manifest="results/models/{model}/manifest.json",
        engines=get_engine_files,
        gate_tools=get_gate_tool_records,
        facts="results/{experiment}/devices/{device}.json",
        userland=get_userland,
        receipt="results/{experiment}/pushed/{device}/{model}.json",
        runner=ENGINE_RUNNER,
        images=list(PROMPT_IMAGES.values()),
        reference=get_reference_greedy,
    output:
        greedy="results/{experiment}/greedy/{device}/{model}.json",
    log:
        "logs/run_greedy/{experiment}/{device}/{model}.log",
    localrule: True
    conda:
        "../../envs/bench.yaml"
    threads: get_bench_threads
    params:
        device=get_device_spec,
        variants=get_variant_specs,
        correctness=canonical(config["correctness"]),
        image_names=list(PROMPT_IMAGES),
        model_formats=MODEL_FORMATS,
        comparison=canonical(config["comparison"]),
        timeout_s=config["bench"]["timeout_s"],
        prompt_tokens=config["bench"]["prompt_tokens"],  # the gate runs the benchmark's settings
        emulation_reference=config.get("emulation", {}).get("reference", ""),
    message:
        "Greedy answers of every variant on device {wildcards.device}, model {wildcards.model}"
    script:
        "../scripts/run_greedy.py"


# What a benchmark (the main point's or a sweep point's) runs from.
BENCH_INPUTS = dict(
    model=get_model_dirs,
    manifest="results/models/{model}/manifest.json",
    engines=get_engine_files,
    gate_tools=get_gate_tool_records,  # the tool a kind asks the vision phase with is in its key
    facts="results/{experiment}/devices/{device}.json",
    userland=get_userland,
    greedy="results/{experiment}/greedy/{device}/{model}.json",
    receipt="results/{experiment}/pushed/{device}/{model}.json",
    runner=ENGINE_RUNNER,
)


rule run_bench:
    input:
        **BENCH_INPUTS,
        bandwidth=get_bandwidth,  # the probe runs first, on a device not yet warm
        images=list(VISION_IMAGES.values()),  # the vision phase's, for a vision model
    output:
        runs="results/{experiment}/runs/{device}/{model}.json",
    log:
        "logs/run_bench/{experiment}/{device}/{model}.log",
    localrule: True
    conda:
        "../../envs/bench.yaml"
    threads: get_bench_threads
    params:
        raw_dir="results/{experiment}/raw/{device}/{model}",
        device=get_device_spec,
        variants=get_variant_specs,
        bench=MAIN_BENCH,
        comparison=canonical(config["comparison"]),  # the rows a verdict stop judges
        image_names=list(VISION_IMAGES),
        model_formats=MODEL_FORMATS,
        pairs=JUDGED_PAIRS,
        ci_level=config["stats"]["ci_level"],
        # `--config remeasure=<label>`: measure again what was not measured under that label
        remeasure=str(config.get("remeasure", "")),
        vision_phase=(
            f"; the vision phase asks {', '.join(VISION_IMAGES)} if the model has a vision encoder"
            if VISION_IMAGES
            else ""
        ),
    message:
        "Benchmark on device {wildcards.device}, model {wildcards.model}: "
        "variants interleaved, resumable{params.vision_phase}"
    script:
        "../scripts/run_bench.py"


# What ran: one profiled invocation per variant and phase, after the timed repetitions
# (`attribution`; runs/profile.py), resumable like them.
rule profile_kernels:
    input:
        **BENCH_INPUTS,
        runs="results/{experiment}/runs/{device}/{model}.json",
        images=list(VISION_IMAGES.values()),  # the image questions' own profile
    output:
        index="results/{experiment}/profiles/{device}/{model}.json",
    log:
        "logs/profile_kernels/{experiment}/{device}/{model}.log",
    localrule: True
    conda:
        "../../envs/bench.yaml"
    threads: get_bench_threads
    params:
        out_dir="results/{experiment}/profiles/{device}/{model}",
        device=get_device_spec,
        variants=get_variant_specs,
        bench=MAIN_BENCH,
        comparison=canonical(config["comparison"]),  # the rows a verdict stop judges
        image_names=list(VISION_IMAGES),
        model_formats=MODEL_FORMATS,
        # what the profiler needs (the checks' thresholds are the validity rule's)
        attribution={"sample_hz": config["attribution"]["sample_hz"]},
    message:
        "Profiling every variant on device {wildcards.device}, model {wildcards.model}"
    script:
        "../scripts/profile_kernels.py"


# `bench.sweep`: one job per point, each its own interleaved, resumable comparison (after the
# main point's benchmark on that device).
rule run_sweep:
    input:
        **BENCH_INPUTS,
        main="results/{experiment}/runs/{device}/{model}.json",
    output:
        runs="results/{experiment}/sweep/runs/{device}/{model}/{point}.json",
    log:
        "logs/run_sweep/{experiment}/{device}/{model}/{point}.log",
    localrule: True
    conda:
        "../../envs/bench.yaml"
    threads: get_bench_threads
    params:
        raw_dir="results/{experiment}/sweep/raw/{device}/{model}/{point}",
        device=get_device_spec,
        variants=get_point_variants,
        bench=get_point_bench,
        comparison=canonical(config["comparison"]),
        pairs=JUDGED_PAIRS,
        ci_level=config["stats"]["ci_level"],
        remeasure=str(config.get("remeasure", "")),
    message:
        "Sweep point {wildcards.point} on device {wildcards.device}, model {wildcards.model}"
    script:
        "../scripts/run_bench.py"


# The decode ceiling's read bandwidth, measured on the device before its benchmark.
rule measure_bandwidth:
    input:
        records=get_probe_records,
        probes=get_probe_dirs,
        facts="results/{experiment}/devices/{device}.json",
    output:
        bandwidth="results/{experiment}/bandwidth/{device}.json",
    log:
        "logs/measure_bandwidth/{experiment}/{device}.log",
    localrule: True
    conda:
        "../../envs/bench.yaml"
    threads: get_bench_threads
    params:
        device=get_device_spec,
        engine_names=probed_engines,
        bandwidth=canonical(config["bandwidth"]),
        variant_threads=VARIANT_THREADS,
        bench=MAIN_BENCH,  # its quiet gate
    message:
        "Memory read bandwidth of device {wildcards.device} (bandwidth_probe)"
    script:
        "../scripts/measure_bandwidth.py"


# `snakemake runs_all`: every device run (gate, bandwidth, benchmark, sweep), no analysis.
rule runs_all:
    input:
        get_greedy_files,
        get_run_indexes,
        get_bandwidth_files,
        get_sweep_indexes,
    localrule: True
