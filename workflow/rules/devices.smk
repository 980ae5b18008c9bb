# Devices: facts about where the engine runs (saved with every experiment).


rule collect_device_facts:
    input:
        userland=PLAN.userland,
    output:
        facts="results/{experiment}/devices/{device}.json",
    log:
        "logs/collect_device_facts/{experiment}/{device}.log",
    localrule: True
    conda:
        "../../envs/bench.yaml"
    params:
        spec=PLAN.device_spec,
    message:
        "Collecting facts of device {wildcards.device}"
    script:
        "../scripts/collect_device_facts.py"
