# Models: seeded synthetic Qwen3 checkpoints, converted to MNN with llmexport.


rule make_synthetic_model:
    output:
        hf=temp(directory("results/models/{model}/hf")),
    log:
        "logs/make_synthetic_model/{model}.log",
    conda:
        "../../envs/export.yaml"
    params:
        spec=get_model_spec,
    message:
        "Building synthetic Qwen3 checkpoint for model {wildcards.model}"
    script:
        "../scripts/make_synthetic_model.py"


rule export_mnn_model:
    input:
        hf="results/models/{model}/hf",
    output:
        model=directory("results/models/{model}/mnn"),
        manifest="results/models/{model}/manifest.json",
    log:
        "logs/export_mnn_model/{model}.log",
    benchmark:
        "logs/export_mnn_model/{model}.benchmark.tsv"
    conda:
        "../../envs/export.yaml"
    resources:
        mem_mb=6000,
    params:
        spec=get_model_spec,
    message:
        "Converting model {wildcards.model} to MNN with llmexport (4-bit weights)"
    script:
        "../scripts/export_mnn_model.py"
