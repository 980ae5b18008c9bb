# Emulated SME2 device: QEMU 11 + an arm64 userland (pinned fetch), and the checks it allows:
# the SME2 fallback and the SME vector-length sweep, from every device's greedy tokens.


rule fetch_emulation_userland:
    output:
        receipt="resources/emulation/userland.json",
    log:
        "logs/fetch_emulation_userland.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        pins=config["toolchains"].get("emulation", {}),
    message:
        "Fetching QEMU (Debian unstable) and the arm64 userland (pinned, verified)"
    script:
        "../scripts/fetch_emulation_userland.py"


rule check_emulation:
    input:
        greedy=expand("results/{{experiment}}/greedy/{device}/{{model}}.json", device=DEVICES),
        facts=expand("results/{{experiment}}/devices/{device}.json", device=DEVICES),
    output:
        table=report(
            "results/{experiment}/emulation/{model}.csv",
            caption="../report/emulation.rst",
            category="Validity",
            labels={"model": "{model}", "table": "emulated SME2 checks"},
        ),
    log:
        "logs/check_emulation/{experiment}/{model}.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        reference=config.get("emulation", {}).get("reference", ""),
        near_tie_sd=config["correctness"]["near_tie_sd"],
        code=ANALYSIS_CODE,
    message:
        "Comparing greedy tokens of every device with {params.reference}"
    script:
        "../scripts/check_emulation.py"
