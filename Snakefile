# mnn-sme2-repro: does building MNN with Arm SME2 kernels speed up LLM inference as claimed?
# Table of contents only: the stages are in workflow/rules/, the logic in workflow/scripts/mnnrepro/.
from snakemake.utils import min_version

min_version("9.0")


# The default experiment, unless another is given with --configfile: that one replaces it
# instead of being deep-merged into it, so models and devices of two experiments never mix, in
# every profile and in the jobs a cluster runs (which get the --configfile, not the profile's
# settings); --config overrides alone apply to this default.
if not workflow.overwrite_configfiles:

    configfile: f"{workflow.current_basedir}/config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


# A replay restores an archive's records; a live run produces them (build -> models -> devices).
if PLAN.experiment.replay:

    include: "workflow/rules/replay.smk"

else:

    include: "workflow/rules/build.smk"
    include: "workflow/rules/models.smk"
    include: "workflow/rules/engines.smk"
    include: "workflow/rules/devices.smk"
    include: "workflow/rules/emulation.smk"
    include: "workflow/rules/bench.smk"
    include: "workflow/rules/engine_tests.smk"
    include: "workflow/rules/archive.smk"
    include: "workflow/rules/store.smk"


include: "workflow/rules/analysis.smk"
include: "workflow/rules/plots.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        PLAN.final_output,
    localrule: True
