"""What every engine kind is, and what the kinds share.

An engine kind says what defines an engine of its kind (its `config_key` in `engines.<name>`,
the record its rules write, `record_name`), what of a record a measurement depends on
(`identity`), which files it runs on a device (`device_files`), whether it is built from a
source here (`from_source`: the build rules, the gate tool, the kernel checks), whether
SME2 kernels of its own can exist in it (`carries_sme2_kernels`, `sme2_impossible`), the
model format it reads (`model_format`) and whether it runs through the Python runner
(`runs_through_runner`); an instance, made from an engine record and a push receipt, gives the
benchmark command and its parser (`bench_command`, `read_bench`), the profiled phases' one
process where it has one (`phases_command`) and the greedy / teacher-forced gate (`greedy`).
Rules, staging, identity, verdict and validity ask the kind (engines.registry), never its name."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mnnrepro.engines.timers import Timers
from mnnrepro.sections import Bench, EngineTests
from mnnrepro.toolchain.records import PLATFORM_COMPILERS, BuildJob


@dataclass(frozen=True)
class GreedyAsk:
    """What the correctness gate asks of an engine on a device: greedy answers to `prompts`
    with the variant's runtime and environment, each at most max_new_tokens, the engine set up
    as its benchmark of a P = prompt_tokens prompt; forced: per prompt, the tokens to feed
    instead of its own choices (teacher forcing)."""

    runtime: dict  # every key (the plan completed it, design.Variant): the kinds fill no default
    prompts: list[str]
    max_new_tokens: int
    timeout: float
    env: dict = field(default_factory=dict)
    prompt_tokens: int = 512
    forced: list[list[int]] | None = None


class EngineKind:
    kind = "abstract"  # the `kind` its engine records carry
    title = ""  # what messages call it
    config_key = ""  # the key of `engines.<name>` that selects this kind
    record_name = ""  # the record its rules write under results/engines/<key>/
    from_source = False  # built here: build rules, a gate tool, the kernel checks
    model_format = "mnn"  # the directory under results/models/<model>/ it reads
    runs_through_runner = False  # run by a Python runner program: measurements depend on it
    runner_program: Path | None = None  # that program (engines/runner/python_runner.py)
    runner_modules: tuple[Path, ...] = ()  # what the runner imports for it, staged beside it
    gate_tool_source: Path | None = None  # the sources of its gate tool (build_gate_tool)
    takes_images = False  # its benchmark asks the image questions (bench.vision; runs/vision.py)
    # the program beside its gate tool that asks them after the benchmark (vision_command);
    # "": the benchmark command asks them itself
    vision_tool = ""

    # the top-level config section it reads besides `engines`: a from-source kind's source
    # tree, a fetched kind's pinned archives ("": none)
    config_section = ""
    # what switches the kind's SME kernels off in the same binary (an environment variable,
    # or a runtime setting: switch_value), whose pairs get the switch's checks instead of
    # MNN's kernel checks
    sme_switch = ""
    switch_off = "0"  # the switch's value that turns them off (in the baseline only)
    switch_turns_off = "the engine's SME kernels"  # what the switch turns off, as the report says
    # what the kind's kernel count (sme_kernel_count) counts, for the switch's check
    sme_kernels_are = "functions that execute SME instructions"
    # its gate's engine facts say whether it chose its SME kernels (`kleidiai_sme`)
    reports_sme_choice = False
    # its files are staged on the device by hash (results/engines/<key>/bin): built or fetched
    stages_files = False
    # made of pinned libraries (`ort_genai.wheels` or `.aars`), fetched and unpacked by a rule
    fetches_archives = False
    # the streaming vector lengths (bits) its SME2 kernels are written for; () = any
    sme2_vector_lengths_bits: tuple[int, ...] = ()
    # environment variables the engine reads as integers (atoi: a word there is silently 0)
    integer_env: tuple[str, ...] = ()
    # a from-source kind: the compiler per platform whose version defines a build (engine_key)
    compilers: dict[str, str] = PLATFORM_COMPILERS
    # a from-source kind: what its `<config_section>` must give (for the message)
    source_forms = ""
    # the keys of a variant's `runtime` its engines read (MNN's SME2 settings, where its
    # binaries do: the record's `reads_settings`); any other is refused when the plan is made
    runtime_keys: tuple[str, ...] = ("thread_num",)
    # why an engine of this kind has no test suite of its own to run (test_suite)
    no_test_suite = "this kind of engine has no test suite"
    # how it learns about SME otherwise than from getauxval in a dynamically linked process
    # (reading /proc/self/auxv, trying an instruction, linked statically), which the SME mask
    # (a variant's `hide_sme`) cannot hide from it; "": it asks getauxval, the mask reaches it
    sme_mask_misses = ""
    # its threads' waiting, which a prediction leaves out of the work (analysis/token_work.py):
    # a regular expression on a profile's symbols (a thread pool's polling); "": none known
    waiting_functions = ""
    # what its benchmark's prefill and decode timers hold (engines/timers.py), read from the
    # code that times them: every kind states it (tests/unit/test_timers.py)
    timers: Timers | None = None

    @classmethod
    def builds_gate_tool(cls, spec: dict) -> bool:
        """Whether the engine of this config entry gets a gate tool (rule build_gate_tool)."""
        return cls.from_source

    @classmethod
    def through_runner(cls, record: dict) -> bool:
        """Whether this engine runs through the Python runner (runs_through_runner)."""
        return cls.runs_through_runner

    @classmethod
    def test_suite(cls, record: dict) -> tuple[str | None, str]:
        """(the engine's own test suite, relative to its directory; None: none, and why)."""
        return None, cls.no_test_suite

    @classmethod
    def config_problems(cls, engines: dict[str, dict], tree: dict, models: dict) -> list[str]:
        """What the engines of this kind (name -> config entry) need of the rest of the config
        (tree: the kind's config section, a source tree or its pins; models: `models`), one
        line per need, naming the key:
        its source tree, and a kind's own needs."""
        without = sorted(
            name
            for name, spec in engines.items()
            if cls.from_source and "source" not in cls.tree_of(spec, tree)
        )
        if without:
            return [
                f"config key `{cls.config_section}.source`: engines {without} are built "
                f"from source; give `{cls.config_section}.source` ({cls.source_forms}), or "
                f"each engine its own `engines.<name>.{cls.config_key}.source`"
            ]
        return []

    @classmethod
    def tree_of(cls, spec: dict, section: dict) -> dict:
        """The source tree an engine of this kind is built from: the config's
        `<config_section>` (section), with the engine's own `source`, `patches` and `kleidiai`
        (`engines.<name>.<config_key>`) in place of the tree's where it names them."""
        tree = dict(section)
        own = spec.get(cls.config_key, {})
        tree.update({key: own[key] for key in ("source", "patches", "kleidiai") if key in own})
        return tree

    @classmethod
    def platform(cls, spec: dict) -> str | None:
        """The platform its binaries are built for (`engines.<name>.<key>.platform`); None:
        it runs wherever its runner's Python with its wheel does."""
        return spec[cls.config_key].get("platform") if cls.from_source else None

    def __init__(self, record: dict, receipt: dict):
        self.record = record

    @classmethod
    def build(cls, job: BuildJob) -> dict:
        """A from-source kind: configure, build, collect and check one engine (build.json)."""
        raise NotImplementedError

    @classmethod
    def build_gate_tool(
        cls, record: dict, source: dict, engine_dir: str, build_dir: str, out_dir: str, log_file
    ) -> dict:
        """A from-source kind: its correctness gate's token-id tool, against its libraries."""
        raise NotImplementedError

    @classmethod
    def suite_command(
        cls, engine_dir: str, suite: str, name: str, settings: EngineTests
    ) -> list[str]:
        """The command that runs one named test of its own suite (test_suite) on a device."""
        raise NotImplementedError

    @classmethod
    def host_tools(cls, section: dict, engines: dict[str, dict], keys: dict[str, str]) -> dict:
        """What its models' conversion needs on this host, by name (PLAN.host_tools, which its
        conversion rules read): from its config section, the measured engines of its kind
        (name -> config entry, in order) and every engine's key."""
        return {}

    @classmethod
    def archive_pins(cls, spec: dict, section: dict) -> list[dict] | dict:
        """A kind that fetches archives (`fetches_archives`): the pins one engine is made of,
        from its config section."""
        raise NotImplementedError

    @classmethod
    def fetch(cls, platform: str, pins, cache: str, site: str) -> dict:
        """A kind that fetches archives: download, verify and unpack one platform's pins into
        site (published whole, rule fetch_engine_archives); its record (wheels.json)."""
        raise NotImplementedError

    @classmethod
    def archives_said(cls, platform: str, pins) -> str:
        """What a fetching kind's pins for a platform are, as the fetch rule's message says it."""
        return f"{cls.title} for {platform} ({len(pins)} wheel(s), sha256 pinned)"

    @classmethod
    def describe(cls, name: str, spec: dict) -> dict:
        """A kind installed in the workflow's env (`describe_engine`): its record, checked."""
        raise NotImplementedError

    @classmethod
    def downloads(cls, spec: dict, section: dict) -> list[tuple[str, str]]:
        """What its own fetch rule downloads for one engine, as the dry run says it: (the rule,
        what). A from-source kind's trees are fetch_source's (plan/overview.tree_downloads)."""
        return []

    @classmethod
    def runner_name(cls, spec: dict) -> str:
        """What runs an engine of the kind on a device, where the kind offers a choice."""
        return ""

    @classmethod
    def identity(cls, record: dict) -> dict:
        """What of an engine a measurement depends on."""
        raise NotImplementedError

    @classmethod
    def device_files(cls, record: dict, receipt: dict) -> dict[str, str]:
        """Device path -> sha256 of the files one engine runs from."""
        raise NotImplementedError

    @classmethod
    def switch_value(cls, variant) -> str | None:
        """The sme_switch's value in a variant (design.Variant): an environment variable."""
        return variant.env.get(cls.sme_switch)

    @classmethod
    def sme_kernel_count(cls, record: dict) -> int:
        """The SME kernels of the engine's own in its build: what its switch or the SME mask
        turns off, and what MNN_SME2=ON adds (0: none the kind can count)."""
        return 0

    @classmethod
    def provenance(cls, record) -> str:
        """What a report says the engine is: its kind and pin."""
        return f"{cls.kind} {record.as_written.get('pin')}"

    @classmethod
    def carries_sme2_kernels(cls, record: dict) -> bool:
        """Whether kernels of the engine's own can be SME2 code (its kernel checks apply)."""
        return False

    @classmethod
    def needs_sme2(cls, record: dict) -> bool:
        """Whether the engine's build holds SME2 code of its own that the comparison is about:
        on a device without SME2 the pair is then a fallback check (or refused)."""
        return False

    @classmethod
    def sme2_impossible(cls, record: dict) -> bool:
        """Whether SME2 cannot exist in this engine at all (a build for another
        architecture): the comparison then judges equality, not the claim."""
        return False

    @classmethod
    def sme2_kernel_names(cls, record: dict) -> list[str] | None:
        """The functions whose execution the SME2 comparison is about, from the build's own
        disassembly; None where the kind lists none (the profile's names then decide:
        analysis/attribution.py)."""
        return None

    @classmethod
    def profiled_libraries(cls, record: dict, built_dir: str, device) -> dict[str, str]:
        """The engine's code on the device by basename -> the ELF file here that names its
        functions (kernel attribution counts these libraries' functions); built_dir: where
        its record's files are on this host."""
        raise NotImplementedError

    @classmethod
    def model_path(cls, receipt: dict) -> str:
        """Where the model it reads is on the device (a push receipt's)."""
        return receipt["model_config"]

    def bench_command(self, device, model_config: str, runtime: dict, bench: Bench, out: str):
        raise NotImplementedError

    def vision_command(self, device, receipt: dict, runtime: dict, bench: Bench, out: str):
        """(argv, env) of a second command that asks the vision phase's image questions
        (bench.vision_set) after the text benchmark, for a kind whose benchmark tool takes no
        images; None: there is none (no image set, or the benchmark asks them itself)."""
        return None

    def read_vision(self, device, result, out: str) -> dict:
        """What vision_command's run wrote: the sums over the image set and `window`, the
        measured pass on CLOCK_BOOTTIME, as the runner's time_vision returns them."""
        raise NotImplementedError

    def phases_command(self, device, model: str, runtime: dict, phases: list, marker: str, out):
        """(argv, env) of one process that marks each profiled phase ([name, prompt tokens,
        generated tokens]) in the folder `marker` (runs/profile.py); None: none (a process each)."""
        return None

    def read_bench(self, device, result, out: str) -> dict:
        raise NotImplementedError

    def greedy(self, device, receipt: dict, ask: GreedyAsk) -> dict:
        """Greedy answers per prompt (token ids, top-k logits per step) with the runtime its
        benchmark applies for a P = ask.prompt_tokens prompt (GreedyAsk)."""
        raise NotImplementedError
