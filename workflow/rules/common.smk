# The glue: resolve the experiment, build its plan (mnnrepro/plan/plan.py), constrain the
# wildcards. The rules read PLAN: its names, settings, paths and input functions.
import re


def plan_of_this_run():
    """The experiment's plan: the config given (or the default, or a replayed archive's),
    checked and completed, then resolved once (mnnrepro/plan/plan.py: every name, kind, key,
    setting and path the rules use, tested without Snakemake); before the job list, what this
    will do and for how long. This workflow's own files are found from this file (not
    workflow.basedir, which is the including workflow's when this one is a `module`)."""
    import sys
    from pathlib import Path

    root = Path(workflow.current_basedir).resolve().parents[1]
    scripts = root / "workflow" / "scripts"
    sys.path.insert(0, str(scripts))
    from mnnrepro.config import use_this_package
    from mnnrepro.errors import ReproError
    from mnnrepro.plan.experiment import resolve
    from mnnrepro.plan.overview import overview
    from mnnrepro.plan.plan import Plan

    use_this_package(scripts)  # jobs import this workflow's package, whatever is installed
    try:
        experiment = resolve(
            config, workflow.configfiles, default_config=root / "config" / "config.yaml"
        )
        plan = Plan(config, experiment, scripts)
        said = overview(plan) if workflow.is_main_process else []  # reads earlier tables
    except ReproError as err:  # names the key, file or archive, before any job runs
        # SystemExit, not WorkflowError: Snakemake prints a WorkflowError with this file's
        # name, line and frame around it; an exit prints the one line (after Snakemake's own
        # profile line, which comes before the Snakefile is read)
        raise SystemExit(f"error: {err}") from None
    if said:
        print("\n".join(said), file=sys.stderr)
    return plan


PLAN = plan_of_this_run()  # what the rules read, and nothing else


# Rules that touch a device (the phones hang off the host Snakemake runs on), download (compute
# nodes often have no network) or only name targets say `localrule: True`: they run where
# Snakemake runs. Builds, exports and analysis go to the cluster (profiles/slurm).


wildcard_constraints:
    experiment=re.escape(PLAN.experiment.results_key),
    engine=PLAN.alternatives(sorted(PLAN.engine_of_key)),
    model=PLAN.alternatives(PLAN.models),
    device=PLAN.alternatives(PLAN.devices),
    point=PLAN.alternatives([re.escape(p) for p in PLAN.sweep]),


def all_cores():
    """--cores N, or 1 where no job runs and none is given (--report, --lint, -n):
    Snakemake's workflow.cores raises there."""
    try:
        return max(1, workflow.cores)
    except WorkflowError:
        return 1


def get_bench_threads(wildcards):
    # A local device is this machine: the benchmark takes every core so nothing else runs.
    return all_cores() if PLAN.device_kinds[wildcards.device].is_this_host else 1
