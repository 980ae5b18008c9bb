# Build side: pinned NDK, the engines' source trees (MNN's, llama.cpp's: the control engine,
# each + KleidiAI) at pinned commits, engines per platform, and per engine the correctness
# gate's token-id tool.


rule fetch_ndk:
    output:
        receipt="resources/ndk/{version}.json",
    log:
        "logs/fetch_ndk/{version}.log",
    localrule: True  # the network is where Snakemake runs, not a compute node
    conda:
        "../../envs/analysis.yaml"
    params:
        pin=PLAN.settings.ndk_pin,
    message:
        "Providing Android NDK {wildcards.version} (an installed NDK of the pinned revision, else the pinned download)"
    script:
        "../scripts/fetch_ndk.py"


# Each from-source engine kind's tree (MNN's, llama.cpp's: engines/registry.kind_of_tree), at
# the pinned commit or archive, with KleidiAI from its pinned tag and any patches applied;
# {source} is the key of what the tree is made of (toolchain/records.source_key).
rule fetch_source:
    input:
        patches=PLAN.source_patches,
    output:
        receipt="resources/{tree}/{source}/source.json",
    log:
        "logs/fetch_source/{tree}/{source}.log",
    wildcard_constraints:
        tree=PLAN.alternatives(PLAN.sources.sections),
    localrule: True  # the network is where Snakemake runs, not a compute node
    conda:
        "../../envs/analysis.yaml"
    params:
        tree=PLAN.source_tree,
        pins=PLAN.messages.source_pins,
    message:
        "Providing the {wildcards.tree} source tree ({params.pins})"
    script:
        "../scripts/fetch_source.py"


rule build_engine:
    input:
        source=PLAN.source_receipt,
        ndk=PLAN.ndk_receipt,
        phones_ready=PLAN.phones_ready,  # a phone not ready is refused before any build
    output:
        build="results/engines/{engine}/build.json",
        bin=directory("results/engines/{engine}/bin"),
    log:
        "logs/build_engine/{engine}.log",
    benchmark:
        "logs/build_engine/{engine}.benchmark.tsv"
    wildcard_constraints:
        engine=PLAN.keys_of(PLAN.built_engines),
    conda:
        "../../envs/build.yaml"
    threads: all_cores()
    params:
        name=PLAN.engine_name,
        spec=PLAN.engine_spec,
        build_dir="resources/build/{engine}",
    message:
        "Building engine {wildcards.engine} from source (CMake + Ninja, ccache where installed); log: {log}"
    script:
        "../scripts/build_engine.py"


rule build_gate_tool:
    input:
        source=PLAN.gate_tool_source,
        record=PLAN.keyed_engine_record,
        bin="results/engines/{engine}/bin",
    output:
        record="results/engines/{engine}/gate-tool.json",
        tool=directory("results/engines/{engine}/gate-tool"),
    log:
        "logs/build_gate_tool/{engine}.log",
    benchmark:
        "logs/build_gate_tool/{engine}.benchmark.tsv"
    conda:
        "../../envs/build.yaml"
    params:
        build_dir="resources/build/{engine}-gate-tool",
        code=PLAN.gate_tool_code,
    message:
        "Building the correctness gate's token-id tool (an MNN engine's vision-phase tool; "
        "ONNX Runtime GenAI's C API runner) against engine {wildcards.engine}"
    script:
        "../scripts/build_gate_tool.py"


# The decode ceiling's bandwidth probe, built with the engine's toolchain (the prebuilt
# engine's: this host's compiler).
rule build_bandwidth_probe:
    input:
        engine=PLAN.keyed_engine_record,
    output:
        record="results/engines/{engine}/bandwidth-probe.json",
        probe=directory("results/engines/{engine}/bandwidth-probe"),
    log:
        "logs/build_bandwidth_probe/{engine}.log",
    benchmark:
        "logs/build_bandwidth_probe/{engine}.benchmark.tsv"
    conda:
        "../../envs/build.yaml"
    params:
        build_dir="resources/build/{engine}-bandwidth-probe",
        code=PLAN.probe_code,
    message:
        "Building the bandwidth probe with the toolchain of engine {wildcards.engine}"
    script:
        "../scripts/build_bandwidth_probe.py"


# The SME mask a variant with `hide_sme: true` preloads, built for the platform of the devices
# that run it (toolchain/sme_mask/sme_mask.c).
rule build_sme_mask:
    input:
        ndk=PLAN.mask_ndk_receipt,
    output:
        record="results/tools/sme-mask/{platform}.json",
        mask=directory("results/tools/sme-mask/{platform}"),
    log:
        "logs/build_sme_mask/{platform}.log",
    wildcard_constraints:
        platform=PLAN.alternatives(PLAN.mask_platforms),
    conda:
        "../../envs/build.yaml"
    params:
        build_dir="resources/build/sme-mask-{platform}",
        code=PLAN.mask_code,
    message:
        "Building the SME mask (a preloaded getauxval without SME) for platform {wildcards.platform}"
    script:
        "../scripts/build_sme_mask.py"


# `snakemake build_all`: every engine of the experiment (and its gate tool), nothing else.
rule build_all:
    input:
        PLAN.engine_files,
        PLAN.gate_tool_records,
    localrule: True
