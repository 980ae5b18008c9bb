"""The engines' side of the plan: the paths and specs of their records, builds, sources, gate
tools and bandwidth probes, as the rules' input functions ask them (mixed into Plan, whose
names, kinds, keys and source trees they read)."""

from __future__ import annotations

from functools import cached_property

from mnnrepro.config import canonical
from mnnrepro.engines.registry import kind_of_spec
from mnnrepro.files import code_digest
from mnnrepro.toolchain.records import engine_key
from mnnrepro.toolchain.tools import MASK_SOURCE


class EngineInputs:
    def engine_record(self, engine: str) -> str:
        """What an engine's rules write: its kind's record (a build's build.json, MNN's wheel's
        engine.json, ONNX Runtime's wheels' wheels.json)."""
        name = self.engine_kinds[engine].record_name
        return f"{self.experiment.engines_dir}/{self.engine_keys[engine]}/{name}"

    def keyed_engine_record(self, wildcards) -> str:
        """The record of the engine whose key is {engine}."""
        return self.engine_record(self.engine_of_key[wildcards.engine])

    def engine_files(self, wildcards=None) -> list[str]:
        return sorted({self.engine_record(e) for e in self.used_engines})

    def _per_tool_engine(self, name: str) -> list[str]:
        return [f"results/engines/{self.engine_keys[e]}/{name}" for e in self.tool_engines]

    def _engine_key(self, name: str, spec: dict) -> str:
        kind = kind_of_spec(spec)
        if kind.fetches_archives:  # the libraries it is made of are part of what defines it
            android = kind.platform(spec) == "android-arm64"  # and its tools' NDK
            ndk = {"ndk": self.settings.ndk_pin} if android else {}
            return engine_key(name, {**spec, "wheels": self.archive_pins_of(spec), **ndk})
        if not kind.from_source:
            return engine_key(name, spec)
        tree = kind.tree_of(spec, self.config.get(kind.config_section, {}))
        ndk_pin = self.settings.ndk_pin
        return engine_key(name, spec, kind.config_key, kind.compilers, tree, ndk_pin)

    def archive_pins_of(self, spec: dict) -> list[dict] | dict:
        """The pins of an engine that runs fetched libraries (its kind's archive_pins)."""
        kind = kind_of_spec(spec)
        return kind.archive_pins(spec, self.config[kind.config_section])

    def archive_pins(self, wildcards) -> list[dict] | dict:
        """The pins the engine {engine} is made of."""
        return canonical(
            self.archive_pins_of(self.config["engines"][self.engine_of_key[wildcards.engine]])
        )

    def engine_platform(self, wildcards) -> str:
        spec = self.config["engines"][self.engine_of_key[wildcards.engine]]
        return kind_of_spec(spec).platform(spec)

    def fetched_runner(self, wildcards) -> str:
        """What runs a fetched engine on the device (its kind's runner_name)."""
        spec = self.config["engines"][self.engine_of_key[wildcards.engine]]
        return kind_of_spec(spec).runner_name(spec)

    def waiting_functions(self, wildcards=None) -> dict[str, str]:
        """Variant -> its engine kind's waiting functions (EngineKind.waiting_functions): what
        a prediction leaves out of the work."""
        variants = self.config["variants"]
        return {v: self.engine_kinds[variants[v]["engine"]].waiting_functions for v in variants}

    def keys_of(self, engines: list[str]) -> str:
        """A wildcard constraint matching the keys of these engines."""
        return "|".join(self.engine_keys[e] for e in engines) or "(?!)"

    def staged_engine_dirs(self, wildcards=None) -> list[str]:
        """The files each staged engine runs from (a build's, or unpacked wheels)."""
        return [f"results/engines/{self.engine_keys[e]}/bin" for e in self.staged_engines]

    def gate_tool_dirs(self, wildcards=None) -> list[str]:
        return self._per_tool_engine("gate-tool")

    def gate_tool_records(self, wildcards=None) -> list[str]:
        return self._per_tool_engine("gate-tool.json")

    def gate_tool_source(self, wildcards) -> list[str]:
        """The source tree a gate tool is built against: a built engine's (its headers); none
        for ONNX Runtime's C API tool, which declares what it calls."""
        built = self.engine_of_key[wildcards.engine] in self.built_engines
        return [self.source_receipt(wildcards)] if built else []

    def build_spec(self, wildcards) -> dict:
        """What the engine's kind builds from (`engines.<name>.build` or `.llamacpp`)."""
        spec = self.config["engines"][self.engine_of_key[wildcards.engine]]
        return canonical(spec[kind_of_spec(spec).config_key])

    def source_receipt(self, wildcards) -> str:
        """The source tree an engine is built from: its kind's section (MNN's, llama.cpp's),
        or its own source."""
        return self.sources.engine_receipts[self.engine_of_key[wildcards.engine]]

    def source_tree(self, wildcards) -> dict:
        """What fetch_source provides for {tree}/{source}: its source, KleidiAI pin and
        patches."""
        return canonical(self.sources.tree(wildcards.tree, wildcards.source))

    def source_patches(self, wildcards) -> list[str]:
        """The patch files of {tree}/{source} (an input: an edited patch fails its sha256 at
        once)."""
        tree = self.sources.tree(wildcards.tree, wildcards.source)
        return [p["path"] for p in tree.get("patches", [])]

    def ndk_receipt(self, wildcards) -> list[str]:
        return self.ndk_receipt_for(self.build_spec(wildcards)["platform"])

    def ndk_receipt_for(self, platform: str) -> list[str]:
        """The pinned NDK's receipt, which a build for android-arm64 needs (none otherwise)."""
        if platform != "android-arm64":
            return []
        return [f"resources/ndk/{self.config['toolchains']['ndk']['version']}.json"]

    def probed_engines(self, wildcards) -> list[str]:
        """Engines whose bandwidth probe runs on this device (none on an emulated one: its
        memory is the host's, seen through QEMU)."""
        if not self.experiment.measures_bandwidth or self.device_kinds[wildcards.device].emulated:
            return []
        return self.used_engines

    def probe_records(self, wildcards) -> list[str]:
        return [
            f"results/engines/{self.engine_keys[e]}/bandwidth-probe.json"
            for e in self.probed_engines(wildcards)
        ]

    def probe_dirs(self, wildcards) -> list[str]:
        return [
            f"results/engines/{self.engine_keys[e]}/bandwidth-probe"
            for e in self.probed_engines(wildcards)
        ]

    # ---- the SME mask (variants with `hide_sme`; toolchain/sme_mask) -------------------------

    @cached_property
    def masked_variants(self) -> list[str]:
        return [v for v in self.variants if self.config["variants"][v].get("hide_sme")]

    @cached_property
    def mask_platforms(self) -> list[str]:
        """The platforms the mask is built for: those of the devices, where a variant hides SME."""
        if not self.masked_variants:
            return []
        return sorted({self.device_kinds[d].platform for d in self.devices})

    @cached_property
    def mask_code(self) -> str:
        return code_digest(MASK_SOURCE, ("*.c", "*.txt"))  # an edit of it rebuilds the mask

    def mask_ndk_receipt(self, wildcards) -> list[str]:
        return self.ndk_receipt_for(wildcards.platform)

    def sme_mask_dir(self, wildcards) -> list[str]:
        """The mask the device {device} preloads into the variants that hide SME (none)."""
        if not self.masked_variants:
            return []
        return [f"results/tools/sme-mask/{self.device_kinds[wildcards.device].platform}"]

    # ---- the engine's own tests (config `engine_tests`; runs/engine_tests.py) ---------------

    def engine_test_files(self, wildcards=None) -> list[str]:
        """Every engine's test record on every device (none where the tests are off, or a
        replayed archive holds none)."""
        if not self.experiment.runs_engine_tests:
            return []
        return self.results(
            "engine_tests/{device}/{engine}.json", device=self.devices, engine=self.used_engines
        )

    def device_engine_tests(self, wildcards) -> list[str]:
        """The engines' test records on the job's device (the validity check's)."""
        if not self.experiment.runs_engine_tests:
            return []
        return self.results(
            "engine_tests/{device}/{engine}.json",
            device=[wildcards.device],
            engine=self.used_engines,
        )

    def engine_tests_table(self, wildcards=None) -> list[str]:
        return self.results("engine_tests.csv") if self.experiment.runs_engine_tests else []

    def tested_engine_record(self, wildcards) -> str:
        return self.engine_record(wildcards.engine)

    def tested_engine_dir(self, wildcards) -> list[str]:
        """The engine's built files, where it is built here (a prebuilt one has none)."""
        if wildcards.engine not in self.built_engines:
            return []
        return [f"results/engines/{self.engine_keys[wildcards.engine]}/bin"]
