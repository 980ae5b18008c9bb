# Build side: pinned NDK, MNN source (+ KleidiAI) at a pinned commit, engines per platform.


rule fetch_ndk:
    output:
        receipt="resources/ndk/{version}.json",
    log:
        "logs/fetch_ndk/{version}.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        pin=config["toolchains"].get("ndk", {}),
    message:
        "Providing Android NDK {wildcards.version} (a matching $ANDROID_NDK, else the pinned download)"
    script:
        "../scripts/fetch_ndk.py"


rule fetch_mnn_source:
    output:
        receipt="resources/mnn/source.json",
    log:
        "logs/fetch_mnn_source.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        source=config.get("mnn", {}).get("source", {}),
        kleidiai=config.get("mnn", {}).get("kleidiai", {}),
    message:
        "Providing MNN source at the pinned commit"
    script:
        "../scripts/fetch_mnn_source.py"


rule build_engine:
    input:
        source="resources/mnn/source.json",
        ndk=get_ndk_receipt,
    output:
        build="results/engines/{engine}/build.json",
        bin=directory("results/engines/{engine}/bin"),
    log:
        "logs/build_engine/{engine}.log",
    benchmark:
        "logs/build_engine/{engine}.benchmark.tsv"
    conda:
        "../../envs/build.yaml"
    threads: workflow.cores
    params:
        spec=get_build_spec,
        build_dir="resources/build/{engine}",
    message:
        "Building MNN engine {wildcards.engine} (CMake + Ninja + ccache)"
    script:
        "../scripts/build_engine.py"
