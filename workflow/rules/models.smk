# Models: MNN models downloaded from ModelScope, or transformers checkpoints (seeded synthetic,
# downloaded, or local) converted to MNN with llmexport.


rule fetch_modelscope_model:
    output:
        model=directory(PLAN.model_dir["mnn"]),
        manifest="results/models/{model}/manifest.json",
    log:
        "logs/fetch_modelscope_model/{model}.log",
    wildcard_constraints:
        model=PLAN.alternatives(PLAN.downloaded_models),
    localrule: True  # the network is where Snakemake runs, not a compute node
    conda:
        "../../envs/export.yaml"
    params:
        spec=PLAN.model_spec,
        route="model",
        cache="resources/modelscope",
        pins=PLAN.messages.model_pins,
    message:
        "Downloading model {wildcards.model} from ModelScope ({params.pins})"
    script:
        "../scripts/fetch_modelscope_model.py"


# The same download, of the original weights (what an export or a GGUF conversion reads).
use rule fetch_modelscope_model as fetch_modelscope_checkpoint with:
    output:
        checkpoint=directory("resources/checkpoints/{model}"),
        manifest="resources/checkpoints/{model}.manifest.json",
    log:
        "logs/fetch_modelscope_checkpoint/{model}.log",
    wildcard_constraints:
        model=PLAN.alternatives(PLAN.checkpoint_models),
    params:
        route="checkpoint",
        pins=PLAN.messages.checkpoint_pins,
    message:
        "Downloading the original weights of model {wildcards.model} from ModelScope "
        "({params.pins})"


rule make_synthetic_model:
    output:
        hf=temp(directory("results/models/{model}/hf")),
    log:
        "logs/make_synthetic_model/{model}.log",
    benchmark:
        "logs/make_synthetic_model/{model}.benchmark.tsv"
    wildcard_constraints:
        model=PLAN.alternatives(PLAN.synthetic_models),
    conda:
        "../../envs/export.yaml"
    params:
        spec=PLAN.model_spec,
    message:
        "Building synthetic Qwen3 checkpoint for model {wildcards.model}"
    script:
        "../scripts/make_synthetic_model.py"


rule export_mnn_model:
    input:
        hf=PLAN.checkpoint,
    output:
        model=directory(PLAN.model_dir["mnn"]),
        manifest="results/models/{model}/manifest.json",
    log:
        "logs/export_mnn_model/{model}.log",
    benchmark:
        "logs/export_mnn_model/{model}.benchmark.tsv"
    wildcard_constraints:
        model=PLAN.alternatives(PLAN.synthetic_models + PLAN.exported_models),
    conda:
        "../../envs/export.yaml"
    resources:
        mem_mb=6000,
    params:
        spec=PLAN.model_spec,
    message:
        "Converting model {wildcards.model} to MNN with llmexport"
    script:
        "../scripts/export_mnn_model.py"


# The control engine's model: the same checkpoint in GGUF, Q4_0 (the type KleidiAI's kernels
# take), with the llama.cpp tree's own converter and quantizer: a host engine's build of the
# quantizer's flags holds llama-quantize; else this rule builds it alone.
QUANTIZER_DIR = PLAN.host_tools["quantizer_dir"]


rule build_llamacpp_quantizer:
    input:
        source=PLAN.host_tools["quantizer_source"],
    output:
        record=f"{QUANTIZER_DIR}.json",
        tool=directory(QUANTIZER_DIR),
    log:
        f"logs/build_llamacpp_quantizer/{Path(QUANTIZER_DIR).name}.log",
    benchmark:
        f"logs/build_llamacpp_quantizer/{Path(QUANTIZER_DIR).name}.benchmark.tsv"
    conda:
        "../../envs/build.yaml"
    threads: all_cores()
    params:
        build_dir=f"resources/build/{Path(QUANTIZER_DIR).name}",
        flags=PLAN.host_tools["quantizer_flags"],
    message:
        "Building llama.cpp's llama-quantize for this host"
    script:
        "../scripts/build_llamacpp_quantizer.py"


rule convert_gguf_model:
    input:
        hf=PLAN.checkpoint,
        source=PLAN.host_tools["quantizer_source"],
        quantizer=PLAN.host_tools["quantizer_bin"],
    output:
        model=directory(PLAN.model_dir["gguf"]),
        record="results/models/{model}/gguf.json",
        layout="results/models/{model}/layout-gguf.json",  # the decode ceiling's, like MNN's
    log:
        "logs/convert_gguf_model/{model}.log",
    benchmark:
        "logs/convert_gguf_model/{model}.benchmark.tsv"
    wildcard_constraints:
        model=PLAN.alternatives(PLAN.convertible_models),
    conda:
        "../../envs/export.yaml"
    resources:
        mem_mb=6000,
    message:
        "Converting model {wildcards.model} to GGUF Q4_0 with llama.cpp's converter and quantizer"
    script:
        "../scripts/convert_gguf_model.py"


# ONNX Runtime GenAI's model: the same checkpoint converted by genai's own model builder (in
# the pinned wheel) to int4 for the CPU, the path on which ONNX Runtime runs KleidiAI's kernels.
rule convert_onnx_model:
    input:
        hf=PLAN.checkpoint,
        site=PLAN.host_tools["builder_site"],
    output:
        model=directory(PLAN.model_dir["onnx"]),
        record="results/models/{model}/onnx.json",
        layout="results/models/{model}/layout-onnx.json",  # the decode ceiling's, like MNN's
    log:
        "logs/convert_onnx_model/{model}.log",
    benchmark:
        "logs/convert_onnx_model/{model}.benchmark.tsv"
    wildcard_constraints:
        model=PLAN.alternatives(PLAN.convertible_models),
    conda:
        "../../envs/export.yaml"
    resources:
        mem_mb=6000,
    params:
        cache="resources/build/onnx-builder/{model}",
    message:
        "Converting model {wildcards.model} to ONNX int4 with ONNX Runtime GenAI's model builder"
    script:
        "../scripts/convert_onnx_model.py"


# ExecuTorch's model: the same checkpoint exported by ExecuTorch's own LLM exporter (the pinned
# host wheels) to one program, int4 weights with dynamically quantized int8 activations lowered
# to the XNNPACK delegate, and the gate's prompts encoded beside it (no tokenizer runs on the
# device).
rule convert_pte_model:
    input:
        hf=PLAN.checkpoint,
        site=PLAN.host_tools["executorch_exporter"],
    output:
        model=directory(PLAN.model_dir["pte"]),
        record="results/models/{model}/pte.json",
        layout="results/models/{model}/layout-pte.json",  # the decode ceiling's, like MNN's
    log:
        "logs/convert_pte_model/{model}.log",
    benchmark:
        "logs/convert_pte_model/{model}.benchmark.tsv"
    wildcard_constraints:
        model=PLAN.alternatives(PLAN.convertible_models),
    conda:
        "../../envs/export.yaml"
    resources:
        mem_mb=6000,
    params:
        cache="resources/build/executorch-export/{model}",
        prompts=PLAN.settings.gate_prompts,  # encoded beside the program
    message:
        "Exporting model {wildcards.model} to an ExecuTorch program (8da4w, XNNPACK) with ExecuTorch's exporter"
    script:
        "../scripts/convert_pte_model.py"


# ExecuTorch's exporter: the host's executorch wheel and the packages it imports, pinned by
# sha256 (`executorch.exporter`), unpacked side by side where the conversion's Python finds them.
rule fetch_executorch_exporter:
    output:
        site=directory("resources/executorch/exporter"),
        record="resources/executorch/exporter.json",
    log:
        "logs/fetch_executorch_exporter.log",
    localrule: True  # the network is where Snakemake runs, not a compute node
    conda:
        "../../envs/analysis.yaml"
    params:
        pins=PLAN.host_tools["executorch_exporter_pins"],
        cache="resources/wheels",
    message:
        "Fetching ExecuTorch's exporter: the host's executorch wheel and the packages it imports"
    script:
        "../scripts/fetch_executorch_exporter.py"


# `snakemake models_all`: every model of the experiment, nothing else.
# What a decode step reads and a prefill token computes, from the model's files (the decode
# ceiling's denominator; a replay restores it from the archive).
rule describe_model_layout:
    input:
        model=PLAN.model_dir["mnn"],
        checkpoint=PLAN.checkpoint_dirs,  # its vision encoder's dimensions, where known
    output:
        layout="results/models/{model}/layout.json",
    log:
        "logs/describe_model_layout/{model}.log",
    benchmark:
        "logs/describe_model_layout/{model}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        code=PLAN.code_of("describe_model_layout.py"),
    message:
        "Bytes per decode token and operations per prefill token of model {wildcards.model}"
    script:
        "../scripts/describe_model_layout.py"


rule models_all:
    input:
        expand("results/models/{model}/manifest.json", model=PLAN.models),
    localrule: True
