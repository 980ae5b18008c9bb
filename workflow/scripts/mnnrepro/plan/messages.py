"""What each job's message says about the pins, checks and intervals of this run, derived
from the resolved config in one place, so that a message names only what the rule really
pins, checks or computes (`tests/workflow/test_messages.py` holds every shipped config's dry
run against its config)."""

from __future__ import annotations

from mnnrepro.models.modelscope import what_is_pinned as model_pins
from mnnrepro.stats import interval_name
from mnnrepro.toolchain.source import what_is_pinned as source_pins


class JobMessages:
    """Input functions (wildcards -> text) for the rules' `message:` params."""

    def __init__(self, plan):
        self.plan = plan
        # the interval compute_summary gives every speedup (stats.interval)
        self.interval = interval_name(plan.config["stats"], None)

    def model_pins(self, wildcards) -> str:
        return model_pins(self.plan.config["models"][wildcards.model]["modelscope"])

    def checkpoint_pins(self, wildcards) -> str:
        spec = self.plan.config["models"][wildcards.model]
        source = spec["export"]["from"] if "export" in spec else spec["checkpoint"]
        return model_pins(source["modelscope"])

    def source_pins(self, wildcards) -> str:
        return source_pins(self.plan.sources.tree(wildcards.tree, wildcards.source))
