"""Engine kinds as plugins (mnnrepro/engines/): every kind says what defines it, and the rest of
the workflow asks the kind instead of testing its name."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from mnnrepro.engines.base import EngineKind
from mnnrepro.engines.executorch.kind import ExecutorchEngine
from mnnrepro.engines.llamacpp.kind import LlamaCppEngine
from mnnrepro.engines.mnn_source.kind import BuiltEngine
from mnnrepro.engines.mnn_wheel.kind import PrebuiltEngine
from mnnrepro.engines.ort_genai.kind import OrtGenaiEngine
from mnnrepro.engines.registry import KINDS, EngineRecord, kind_of_record, kind_of_spec

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "workflow" / "scripts" / "mnnrepro"


def test_every_kind_is_registered_once_and_says_what_defines_it():
    assert set(KINDS) == {
        PrebuiltEngine,
        BuiltEngine,
        LlamaCppEngine,
        OrtGenaiEngine,
        ExecutorchEngine,
    }
    for attribute in ("kind", "config_key"):
        values = [getattr(kind, attribute) for kind in KINDS]
        assert all(values) and len(set(values)) == len(values), attribute
    assert all(issubclass(kind, EngineKind) and kind.record_name for kind in KINDS)
    assert {k: k.model_format for k in KINDS} == {
        PrebuiltEngine: "mnn",
        BuiltEngine: "mnn",
        LlamaCppEngine: "gguf",
        OrtGenaiEngine: "onnx",
        ExecutorchEngine: "pte",
    }
    assert [k for k in KINDS if k.from_source] == [BuiltEngine, LlamaCppEngine]
    assert all(k.config_section for k in KINDS if k.from_source)
    assert [k for k in KINDS if k.runs_through_runner] == [PrebuiltEngine, OrtGenaiEngine]
    assert [k for k in KINDS if k.sme_switch] == [LlamaCppEngine, OrtGenaiEngine]
    # what a device stages of an engine: a build's files, or its unpacked wheels
    staged = [BuiltEngine, LlamaCppEngine, OrtGenaiEngine, ExecutorchEngine]
    assert [k for k in KINDS if k.stages_files] == staged
    # every kind not run through the Python runner runs a gate tool built for it
    assert all(k.builds_gate_tool({k.config_key: {}}) for k in (BuiltEngine, ExecutorchEngine))


def test_a_config_entry_and_a_record_find_their_kind_and_nothing_else():
    assert kind_of_spec({"prebuilt": {"pypi": "mnn==3.6.1"}}) is PrebuiltEngine
    assert kind_of_spec({"build": {"platform": "host"}}) is BuiltEngine
    assert kind_of_record({"kind": "build"}) is BuiltEngine
    with pytest.raises(ValueError, match="unknown kind 'gguf'"):
        kind_of_record({"kind": "gguf"})
    assert kind_of_spec({"llamacpp": {"platform": "host"}}) is LlamaCppEngine
    with pytest.raises(ValueError, match="names no engine kind"):
        kind_of_spec({"onnx": {}})


def test_sme2_questions_are_the_kinds():
    """A prebuilt wheel has no kernels of ours to check; a build for x86 cannot have SME2."""
    wheel = EngineRecord.of({"kind": "prebuilt", "files": []})
    arm = EngineRecord.of({"kind": "build", "target_arch": "aarch64", "files": []})
    x86 = EngineRecord.of({"kind": "build", "target_arch": "x86_64", "files": []})
    assert not PrebuiltEngine.carries_sme2_kernels(wheel)
    assert not PrebuiltEngine.sme2_impossible(wheel)
    assert BuiltEngine.carries_sme2_kernels(arm) and not BuiltEngine.sme2_impossible(arm)
    assert BuiltEngine.sme2_impossible(x86)
    # ONNX Runtime's wheels: SME2 exists where their library's kernel tables name SME2 kernels
    # (the aarch64 wheel's), and cannot where they name none (the x86-64 wheel has no KleidiAI)
    ort_arm = EngineRecord.of(
        {"kind": "ort-genai", "library": {"sme2_kernels": ["kai_run_x_sme2_mopa"]}}
    )
    ort_x86 = EngineRecord.of({"kind": "ort-genai", "library": {"sme2_kernels": []}})
    assert OrtGenaiEngine.needs_sme2(ort_arm) and not OrtGenaiEngine.sme2_impossible(ort_arm)
    assert OrtGenaiEngine.sme2_impossible(ort_x86) and not OrtGenaiEngine.needs_sme2(ort_x86)
    # a profile names each SME2 kernel's run function and its assembly body (devices/stripped)
    assert OrtGenaiEngine.sme2_kernel_names(ort_arm) == [
        "kai_kernel_x_sme2_mopa",
        "kai_run_x_sme2_mopa",
    ]


# ort_genai_tool bench's line on the tiny synthetic model (x86-64 wheel, warm-up 1, P=16, N=4),
# as captured from the tool built by the workflow
TOOL_BENCH_LINE = (
    '{"tool": "ort_genai_tool", "warmup": 1, "prompt_tokens": 16, "generate_tokens": 4, '
    '"prefill_s": 0.000517443, "decode_s": 0.000423064, "context_after_prefill": 16, '
    '"context_after_decode": 20, "last_token": 429}'
)
TOOL_SUPPORTS = "The process supports (AT_HWCAP2, x86_64: no Arm features): sme:0, sme2:0"


def test_onnx_runtimes_c_api_runner_is_its_engines_choice_and_its_output_is_checked():
    """`runner: c-api` gets a gate tool (ort_genai_tool) and leaves the Python runner; the
    tool's bench line becomes the runner's payload (tok/s = tokens / seconds), and a line that
    ran something else than asked, or none, is refused in one line."""
    from mnnrepro.engines.device_io import ToolOutputError, parse_tool_bench
    from mnnrepro.engines.ort_genai.kind import TOOL, overlay

    c_api = {"ort_genai": {"platform": "host", "runner": "c-api"}}
    python = {"ort_genai": {"platform": "host"}}
    assert OrtGenaiEngine.builds_gate_tool(c_api) and not OrtGenaiEngine.builds_gate_tool(python)
    assert not OrtGenaiEngine.through_runner(
        EngineRecord.of({"kind": "ort-genai", "runner": "c-api"})
    )
    # records from before: python
    assert OrtGenaiEngine.through_runner(EngineRecord.of({"kind": "ort-genai"}))
    assert LlamaCppEngine.builds_gate_tool({}) and not PrebuiltEngine.builds_gate_tool({})
    # a measurement through the C API tool is valid for the tool's sources; one through the
    # Python runner keeps the identity it had before the tool existed
    record = {"kind": "ort-genai", "platform": "host", "wheels": [], "files": []}
    assert "runner" not in OrtGenaiEngine.identity(EngineRecord.of(record))
    c_api_record = EngineRecord.of({**record, "runner": "c-api"})
    tool = OrtGenaiEngine.identity(c_api_record)["tool_sources"]
    assert {"ort_genai_tool.cpp", "oga_api.h", "gate_output.hpp"} <= set(tool)
    runtime = {"thread_num": 2, "session_options": {"mlas.disable_kleidiai": "1"}}
    options = {"intra_op_num_threads": 2, "mlas.disable_kleidiai": "1"}
    assert overlay(runtime) == json.dumps({"model": {"decoder": {"session_options": options}}})

    parsed = parse_tool_bench(TOOL_BENCH_LINE + "\n", TOOL_SUPPORTS + "\n", 16, 4, TOOL)
    ran = json.loads(TOOL_BENCH_LINE)
    prefill, decode = parsed["results"]
    assert (prefill["phase"], prefill["tokens"], prefill["context_start"]) == ("prefill", 16, 0)
    assert prefill["tps"] == 16 / ran["prefill_s"] and decode["tps"] == 4 / ran["decode_s"]
    assert (decode["tokens"], decode["context_start"]) == (4, 16)
    assert parsed["engine"]["device_supports"] == TOOL_SUPPORTS
    with pytest.raises(
        ToolOutputError, match=r"ran 16 \+ 4 tokens to a context of \(16, 20\), asked 32 \+ 4"
    ):
        parse_tool_bench(TOOL_BENCH_LINE, "", 32, 4, TOOL)
    with pytest.raises(ToolOutputError, match="printed no JSON line"):
        parse_tool_bench("Failed to load onnxruntime\n", "", 16, 4, TOOL)


def test_a_phones_onnx_runtime_needs_the_c_api_runner():
    """A phone runs no Python: an android-arm64 ONNX Runtime engine without `runner: c-api` is
    one line naming the key."""
    phone = {"ort_genai": {"platform": "android-arm64"}}
    (line,) = OrtGenaiEngine.config_problems({"ort": phone}, {}, {})
    assert line.startswith("config key `engines.ort.ort_genai.runner`: android-arm64 has no")
    c_api = {"ort_genai": {"platform": "android-arm64", "runner": "c-api"}}
    assert OrtGenaiEngine.config_problems({"ort": c_api}, {}, {}) == []


SOURCES = [
    *PACKAGE.rglob("*.py"),
    ROOT / "Snakefile",
    *(ROOT / "workflow" / "rules").glob("*.smk"),
    *(ROOT / "workflow" / "scripts").glob("*.py"),
]


def spelled_outside(pattern: str, allowed) -> list[str]:
    """Every line of the package, the rules and their shims, outside `allowed` (a path ->
    bool), that compares a name matching `pattern`."""
    spelled = re.compile(pattern)
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in SOURCES
        if not allowed(path)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if spelled.search(line)
    ]


def string_constants(path: Path) -> list[tuple[int, str]]:
    """(line, value) of every string a module spells, its docstrings aside (they may say where
    things are); the quoted strings of the Snakefile and a rule file."""
    text = path.read_text()
    if path.suffix != ".py":  # the Snakefile and the rule files
        return [
            (text.count("\n", 0, m.start()) + 1, m.group(2))
            for m in re.finditer(r"""(["'])([^"'\n]*)\1""", text)
        ]
    tree = ast.parse(text)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]


def kind_packages() -> set[str]:
    """The module prefixes of the kinds' own packages (mnnrepro.engines.<package>)."""
    return {kind.__module__.rpartition(".")[0] for kind in KINDS} - {"mnnrepro.engines"}


def kind_spellings() -> tuple[set[str], set[str]]:
    """(the names a kind is selected or recorded by: its kind, config key and source section,
    as whole strings; its runner files and tool folders, as parts of a string). A source
    section that is also a model format's name (`mnn`) is the format's (models/formats.py)."""
    from mnnrepro.engines.registry import RUNNER, RUNNER_MODULES
    from mnnrepro.models.formats import FORMATS

    names = {n for k in KINDS for n in (k.kind, k.config_key, k.config_section) if n}
    files = {RUNNER.name, *RUNNER_MODULES}
    folders = {
        k.gate_tool_source.relative_to(PACKAGE).as_posix() for k in KINDS if k.gate_tool_source
    }
    return names - set(FORMATS), files | folders


def kind_spelled_outside_engines(sources=SOURCES, root=ROOT) -> list[str]:
    """Every string of the package outside engines/, of the rules and of their shims that
    names a kind, a runner file or a tool folder, and every import of a kind's package from the
    package outside engines/ (a shim of a kind's own rule, such as convert_gguf_model.py, and
    its job's code, mnnrepro/jobs/convert_gguf_model.py, may import its kind's package: the
    rule is the kind's)."""
    names, parts = kind_spellings()
    packages = tuple(kind_packages())
    shims = root / "workflow" / "scripts"
    found = []
    for path in sources:
        if path.is_relative_to(PACKAGE / "engines"):
            continue
        where = path.relative_to(root)
        for line, value in string_constants(path):
            if value in names or any(part in value for part in parts):
                found.append(f"{where}:{line}: {value!r}")
        if path.suffix == ".py" and path.parent not in (shims, PACKAGE / "jobs"):
            for node in ast.walk(ast.parse(path.read_text())):
                module = getattr(node, "module", None) or ""
                if isinstance(node, ast.ImportFrom) and module.startswith(packages):
                    found.append(f"{where}:{node.lineno}: imports {module}")
    return found


def test_nothing_outside_the_kinds_names_a_kind_a_runner_file_or_a_tool_folder():
    """Only engines/ (the kinds) may spell a kind's name, config key or source section, its
    runner's files or its tool's folder, or import a kind's package: the rules, the config's
    checks and every stage ask the kind (engines/registry)."""
    assert kind_spelled_outside_engines() == []


def test_the_spelling_check_finds_a_kind_named_outside_the_kinds(tmp_path):
    """The check above fails for each way a kind can leak: its name, a runner file, a tool
    folder, an import of its package (a shim may import its own kind's)."""
    names, parts = kind_spellings()
    assert {"llamacpp", "ort-genai", "ort_genai", "prebuilt", "build"} <= names
    assert {"python_runner.py", "genai_llm.py", "engines/llamacpp/gate_tool"} <= parts
    assert kind_packages() >= {"mnnrepro.engines.llamacpp", "mnnrepro.engines.ort_genai"}
    leaks = {
        "name.py": 'KIND = "ort-genai"\n',
        "runner.py": 'RUNNER = "engines/runner/python_runner.py"\n',
        "tool.py": 'TOOL = Path("engines/llamacpp/gate_tool")\n',
        "imports.py": "from mnnrepro.engines.llamacpp.build import build_engine\n",
        "rule.smk": 'rule r:\n    input:\n        PLAN.host_tools["llamacpp"],\n',
        "clean.py": '"""Says llamacpp in a docstring."""\nX = "llamacpp-tree"\n',
        "workflow/scripts/shim.py": "from mnnrepro.engines.llamacpp.gguf import convert\n",
    }
    for name, text in leaks.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = kind_spelled_outside_engines([tmp_path / name for name in leaks], tmp_path)
    flagged = {line.split(":")[0] for line in found}
    assert flagged == {"name.py", "runner.py", "tool.py", "imports.py", "rule.smk"}


def test_no_module_outside_the_device_kinds_tests_a_device_kinds_name():
    """A device kind's properties are devices/kinds.py's (DEVICE_KINDS); the rules and the
    stages ask them, never `"qemu" in spec`. The device modules themselves and the factory that
    builds a device of its kind are where the names belong."""
    names = "(local|qemu|adb)"
    pattern = rf"""["']{names}["']\s*(==|!=|in\b|not in\b)|(==|!=)\s*["']{names}["']"""
    allowed = {PACKAGE / "devices" / n for n in ("kinds.py", "factory.py", "userland.py")}
    assert spelled_outside(pattern, allowed.__contains__) == []


def test_an_engine_record_is_read_by_its_fields_outside_the_kinds():
    """What a kind wrote in its record beyond the fields every stage reads (EngineRecord's
    name, version, platform, target_arch, files, compiler, ndk) is its own: only engines/ reads
    `as_written`, and files.plain writes it back. A record is no mapping to index either
    (tests/unit/test_design.py)."""

    def allowed(path):
        return path == PACKAGE / "files.py" or path.is_relative_to(PACKAGE / "engines")

    assert spelled_outside(r"\.as_written\b", allowed) == []


def test_no_module_tests_a_model_format_or_source_tree_by_name():
    """Model formats are models/formats.py's (FORMATS), source trees the engine kinds'
    (`config_section`): nothing compares `"gguf"` or `"mnn"`, or lists `("mnn", "llamacpp")`."""
    pattern = (
        r"""(==|!=|\bin\b)\s*\(?["'](mnn|gguf)["']|["'](mnn|gguf)["']\s*(==|!=|in\b)"""
        r"""|\(\s*["']mnn["'],\s*["']llamacpp["']\s*\)"""
    )

    def allowed(path):
        return path == PACKAGE / "models" / "formats.py" or path.is_relative_to(PACKAGE / "engines")

    assert spelled_outside(pattern, allowed) == []


def test_every_device_kind_is_declared_once_with_its_platforms():
    from mnnrepro.devices.kinds import DEVICE_KINDS, device_kind

    assert set(DEVICE_KINDS) == {"local", "qemu", "adb"}
    assert device_kind("p", {"adb": {}}).platforms == ("android-arm64",)
    assert device_kind("q", {"qemu": {}}).emulated and device_kind("q", {"qemu": {}}).needs_userland
    with pytest.raises(ValueError, match=r"`devices\.x`: unsupported device kind"):
        device_kind("x", {"ssh": {}})


def test_the_records_schema_accepts_the_records_of_every_kind_and_no_other(root):
    import yaml

    schema = yaml.safe_load((root / "workflow" / "schemas" / "records.schema.yaml").read_text())
    assert set(schema["$defs"]["engine"]["properties"]["kind"]["enum"]) == {k.kind for k in KINDS}


def test_the_kinds_share_one_runner_folder_without_clashes(tmp_path):
    """One runner program, and module names unique in the folder they are staged to; a kind
    that brings a second program, or another module under a taken name, is refused by name."""
    from mnnrepro.engines.registry import RUNNER, RUNNER_MODULES, runner_files

    assert RUNNER.name == "python_runner.py" and RUNNER.is_file()
    assert set(RUNNER_MODULES) >= {"runner_timing.py", "genai_llm.py"}
    assert all(path.parent == RUNNER.parent for path in RUNNER_MODULES.values())

    class OwnRunner(PrebuiltEngine):
        runner_program = tmp_path / "other_runner.py"

    class Clash(PrebuiltEngine):
        runner_modules = (tmp_path / "runner_timing.py",)

    with pytest.raises(TypeError, match="name 2 runner programs"):
        runner_files([PrebuiltEngine, OwnRunner])
    with pytest.raises(TypeError, match=r"two runner modules named runner_timing\.py"):
        runner_files([PrebuiltEngine, Clash])
