# Runs on a device: push (deduplicated by hash), the greedy correctness run, then the
# interleaved benchmark schedule.


rule push_to_device:
    input:
        model=PLAN.model_dirs,
        manifest="results/models/{model}/manifest.json",
        facts="results/{experiment}/devices/{device}.json",
        userland=PLAN.userland,
        engines=PLAN.staged_engine_dirs,
        gate_tools=PLAN.gate_tool_dirs,
        sme_mask=PLAN.sme_mask_dir,  # preloaded by the variants that hide SME (hide_sme)
        runner=PLAN.engine_runner,
    output:
        receipt="results/{experiment}/pushed/{device}/{model}.json",
    log:
        "logs/push_to_device/{experiment}/{device}/{model}.log",
    localrule: True
    conda:
        "../../envs/bench.yaml"
    params:
        device=PLAN.device_spec,
        engine_names=PLAN.staged_engines,
        tool_engines=PLAN.tool_engines,
        model_formats=PLAN.model_formats,
    message:
        "Pushing model {wildcards.model} and the engine runner to device {wildcards.device}"
    script:
        "../scripts/push_to_device.py"


rule run_greedy:
    input:
        model=PLAN.model_dirs,
        manifest="results/models/{model}/manifest.json",
        engines=PLAN.engine_files,
        gate_tools=PLAN.gate_tool_records,
        # each pair's mode here (decided from the device's facts; refused if one cannot hold)
        modes="results/{experiment}/modes/{device}.json",
        userland=PLAN.userland,
        receipt="results/{experiment}/pushed/{device}/{model}.json",
        runner=PLAN.engine_runner,
        images=list(PLAN.prompt_images.values()),
        reference=PLAN.reference_greedy,
    output:
        greedy="results/{experiment}/greedy/{device}/{model}.json",
    log:
        "logs/run_greedy/{experiment}/{device}/{model}.log",
    localrule: True
    conda:
        "../../envs/bench.yaml"
    threads: get_bench_threads
    params:
        device=PLAN.device_spec,
        variants=PLAN.variant_specs,
        correctness=PLAN.settings.correctness,
        image_names=list(PLAN.prompt_images),
        model_formats=PLAN.model_formats,
        design=PLAN.design_spec,
        timeout_s=PLAN.design.bench.timeout_s,
        prompt_tokens=PLAN.design.bench.prompt_tokens,  # the gate runs the benchmark's settings
        emulation_reference=PLAN.settings.emulation_reference,
    message:
        "Greedy answers of every variant on device {wildcards.device}, model {wildcards.model}"
    script:
        "../scripts/run_greedy.py"


# What a benchmark (the main point's or a sweep point's) runs from.
BENCH_INPUTS = dict(
    model=PLAN.model_dirs,
    manifest="results/models/{model}/manifest.json",
    engines=PLAN.engine_files,
    gate_tools=PLAN.gate_tool_records,  # the tool a kind asks the vision phase with is in its key
    modes="results/{experiment}/modes/{device}.json",  # the rows a verdict stop judges
    userland=PLAN.userland,
    greedy="results/{experiment}/greedy/{device}/{model}.json",
    receipt="results/{experiment}/pushed/{device}/{model}.json",
    runner=PLAN.engine_runner,
)
# What it runs: the device, the variants in the main point's settings, in the model's formats.
BENCH_PARAMS = dict(
    device=PLAN.device_spec,
    variants=PLAN.variant_specs,
    bench=PLAN.main_bench,
    design=PLAN.design_spec,  # the rows a verdict stop judges, at which level
    image_names=list(PLAN.vision_images),
    model_formats=PLAN.model_formats,
)


rule run_bench:
    input:
        **BENCH_INPUTS,
        bandwidth=PLAN.bandwidth,  # the probe runs first, on a device not yet warm
        images=list(PLAN.vision_images.values()),  # the vision phase's, for a vision model
    output:
        runs="results/{experiment}/runs/{device}/{model}.json",
    log:
        "logs/run_bench/{experiment}/{device}/{model}.log",
    localrule: True
    conda:
        "../../envs/bench.yaml"
    threads: get_bench_threads
    params:
        **BENCH_PARAMS,
        raw_dir="results/{experiment}/raw/{device}/{model}",
        # `--config remeasure=<label>`: measure again what was not measured under that label
        remeasure=PLAN.settings.remeasure,
        point="",  # the main benchmark, not a sweep point
        vision_phase=(
            f"; the vision phase asks {', '.join(PLAN.vision_images)} if the model has a vision encoder"
            if PLAN.vision_images
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
        images=list(PLAN.vision_images.values()),  # the image questions' own profile
    output:
        index="results/{experiment}/profiles/{device}/{model}.json",
    log:
        "logs/profile_kernels/{experiment}/{device}/{model}.log",
    localrule: True
    conda:
        "../../envs/bench.yaml"
    threads: get_bench_threads
    params:
        **BENCH_PARAMS,
        out_dir="results/{experiment}/profiles/{device}/{model}",
        attribution=PLAN.settings.profiler,  # its rate; where a start-up is profiled
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
        images=[],  # a sweep point asks no image questions
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
        device=PLAN.device_spec,
        variants=PLAN.point_variants,
        bench=PLAN.point_bench,
        design=PLAN.design_spec,
        image_names=[],
        model_formats=PLAN.model_formats,
        remeasure=PLAN.settings.remeasure,
        point="{point}",
    message:
        "Sweep point {wildcards.point} on device {wildcards.device}, model {wildcards.model}"
    script:
        "../scripts/run_bench.py"


# The decode ceiling's read bandwidth, measured on the device before its benchmark.
rule measure_bandwidth:
    input:
        records=PLAN.probe_records,
        probes=PLAN.probe_dirs,
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
        device=PLAN.device_spec,
        engine_names=PLAN.probed_engines,
        bandwidth=PLAN.settings.bandwidth,
        variant_threads=PLAN.variant_threads,
        bench=PLAN.main_bench,  # its quiet gate
    message:
        "Memory read bandwidth of device {wildcards.device} (bandwidth_probe)"
    script:
        "../scripts/measure_bandwidth.py"


# `snakemake runs_all`: every device run (gate, bandwidth, benchmark, sweep), no analysis.
rule runs_all:
    input:
        PLAN.greedy_files,
        PLAN.run_indexes,
        PLAN.bandwidth_files,
        PLAN.sweep_indexes,
    localrule: True
