# Emulated SME2 device: QEMU 11 + an arm64 userland (pinned fetch), and the checks it allows:
# the check of its results (the SME2 fallback, the vector-length sweep) is in analysis.smk.


rule fetch_emulation_userland:
    output:
        receipt="resources/emulation/userland.json",
    log:
        "logs/fetch_emulation_userland.log",
    localrule: True  # the network is where Snakemake runs, not a compute node
    conda:
        "../../envs/analysis.yaml"
    params:
        pins=PLAN.settings.emulation_pins,
    message:
        "Fetching QEMU (Debian unstable) and the arm64 userland (pinned, verified)"
    script:
        "../scripts/fetch_emulation_userland.py"
