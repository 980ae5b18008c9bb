"""Shared fixtures: a real tiny synthetic model, built and exported once per test session."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from xdist.scheduler import LoadGroupScheduling

from mnnrepro.engines.registry import EngineRecord

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))  # loopback_adbd


def _temp_dir_per_worker() -> None:
    """Each pytest-xdist worker stands for a machine of its own: its own temp directory, so the
    device locks (under the temp directory, keyed by the host) of one worker's runs do not
    hold up the other's. Within a worker, the locks work as on a user's machine (and are
    tested there, tests/unit/test_device_lock.py)."""
    import os
    import tempfile

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        path = Path(tempfile.gettempdir()) / f"mnnrepro-tests-{os.getppid()}-{worker}"
        path.mkdir(parents=True, exist_ok=True)
        os.environ["TMPDIR"] = str(path)
        tempfile.tempdir = None  # gettempdir() reads TMPDIR again


_temp_dir_per_worker()


# What a test not marked `slow` may not start: the workflow run for real (a dry run or lint
# may), an emulator, a compiler or build, an install, a profiler, a cluster job. The guard
# below fails such a test (pytest names it), so `pytest -m "not slow"` stays the inner loop it is
# said to be (docs/development.md) without a timing in any test.
COMPILER_NAMES = r"g?cc|g\+\+|c\+\+|clang[\w+.-]*|aarch64-linux-gnu-(gcc|g\+\+)[\w.-]*"
SLOW_PROGRAMS = re.compile(
    rf"snakemake|qemu-[\w-]+|cmake|ninja|make|{COMPILER_NAMES}|ccache|sccache"
    r"|aarch64-linux-gnu-[\w+.-]+|pip\d*(\.\d+)?|valgrind|perf|sbatch|srun|salloc"
)
# a compiler asked only its version compiles nothing (a plan's engine keys ask it: plan_of)
COMPILERS = re.compile(COMPILER_NAMES)
SLOW_PYTHON_MODULES = {"pip", "snakemake", "venv", "ensurepip"}
SNAKEMAKE_ALLOWED_FAST = {"-n", "--dry-run", "--lint"}
running_slow_test = True  # outside a test (collection, session teardown): nothing to hold to


def words_of(line: str) -> list[str]:
    """A command line's words as a shell splits them (an unbalanced quote: the line whole)."""
    try:
        return shlex.split(line)
    except ValueError:
        return [line]


def asks_its_version(name: str, words: list[str]) -> bool:
    return bool(COMPILERS.fullmatch(name)) and words[1:] == ["--version"]


def slow_program(argv: list[str]) -> str | None:
    """The program in argv a test not marked slow may not start (None: it may), looking
    through `env`, `sh -c` and `python -m`."""
    words = list(argv)
    while words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
        while words and "=" in words[0]:
            words = words[1:]
    if not words:
        return None
    name = Path(words[0]).name
    if name in ("sh", "bash") and "-c" in words:  # each command of the line
        line = words_of(words[words.index("-c") + 1].replace(";", " ; "))
        starts = [0] + [i + 1 for i, w in enumerate(line) if w in ("&&", "||", ";", "|")]
        found = (slow_program(line[i:]) for i in starts if i < len(line))
        return next((program for program in found if program), None)
    if name.startswith("python") and "-m" in words:
        name = words[words.index("-m") + 1].split(".")[0]
        if name not in SLOW_PYTHON_MODULES:
            return None
    elif not SLOW_PROGRAMS.fullmatch(name) or asks_its_version(name, words):
        return None
    return None if name == "snakemake" and SNAKEMAKE_ALLOWED_FAST & set(words) else name


def refuse_in_a_fast_test(what: str) -> None:
    if not running_slow_test:
        pytest.fail(
            f"a test not marked slow starts {what}: mark it `slow` (pyproject.toml's markers; "
            "the inner loop, docs/development.md, runs without it)",
            pytrace=False,
        )


_popen_init = subprocess.Popen.__init__


def _guarded_popen_init(self, args, *more, **options):
    argv = words_of(args) if isinstance(args, str) else [str(a) for a in args]
    if (program := slow_program(argv)) is not None:
        refuse_in_a_fast_test(program)
    _popen_init(self, args, *more, **options)


subprocess.Popen.__init__ = _guarded_popen_init


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Holds each test, with the fixtures it sets up and tears down, to its `slow` marker, and
    starts its CPU account (pytest_runtest_makereport)."""
    global running_slow_test, cpu_at_last_report
    running_slow_test = item.get_closest_marker("slow") is not None
    cpu_at_last_report = cpu_seconds()  # not the collection's, nor the gap since the last test
    try:
        yield
    finally:
        running_slow_test = True


def benchmark_script(name: str):
    """benchmarks/<name>.py as a module, loaded by its path, with the import path left as it
    was: a script puts the benchmarks folder first, whose fault_matrix would shadow the
    tests' own."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module, import_path = importlib.util.module_from_spec(spec), list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = import_path
    return module


def cpu_seconds() -> float:
    """CPU seconds of this process and its descendants: those alive (the Snakemake server's
    forks, an emulator, an adb server) and those their parents have waited for (a build's
    compilers): what a test phase costs the machine. A process orphaned before it ends (a
    daemon) leaves uncounted what it spends after."""
    total = 0.0
    me = psutil.Process()
    for process in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # ended since it was listed
            t = process.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


CPU_PROPERTY = "cpu_s"
cpu_at_last_report = 0.0  # set as each test starts (pytest_runtest_protocol)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report (setup, call, teardown) carries the CPU seconds spent since the
    worker's last report (CPU_PROPERTY): pytest's durations are wall time, which the other
    workers' tests stretch; the CPU time is the phase's own work. The terminal summary lists
    the largest (pytest_terminal_summary), benchmarks/test_time.py keeps them."""
    global cpu_at_last_report
    outcome = yield
    now = cpu_seconds()
    outcome.get_result().user_properties.append((CPU_PROPERTY, round(now - cpu_at_last_report, 2)))
    cpu_at_last_report = now


def pytest_terminal_summary(terminalreporter, config):
    """The 15 test phases that cost the most CPU (CPU_PROPERTY), as pytest lists durations;
    with `--cpu-times FILE`, every phase's CPU and wall seconds written there as JSON."""
    rows = [
        {
            "nodeid": r.nodeid,
            "when": r.when,
            "cpu_s": dict(r.user_properties).get(CPU_PROPERTY, 0.0),
            "wall_s": round(r.duration, 2),
        }
        for listed in terminalreporter.stats.values()
        for r in listed
        if isinstance(r, pytest.TestReport)
    ]
    if not rows:
        return
    if path := config.getoption("--cpu-times"):
        Path(path).write_text(json.dumps(rows, indent=1))
    terminalreporter.write_sep("=", "largest CPU times (seconds, with its processes)")
    for row in sorted(rows, key=lambda row: -row["cpu_s"])[:15]:
        terminalreporter.write_line(f"{row['cpu_s']:.2f}s {row['when']:<8} {row['nodeid']}")


@contextlib.contextmanager
def shared_by_fast_tests():
    """Within it a test not marked slow may run what the guard refuses: the synthetic models'
    export (made_model), made once per test run and read by the inner loop's tests too."""
    global running_slow_test
    held, running_slow_test = running_slow_test, True
    try:
        yield
    finally:
        running_slow_test = held


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: two workers more than the CPUs (at most 4, `--maxprocesses`). Part of the
    suite waits rather than computes (PyPI and Debian downloads, Slurm's scheduling, adb
    timeouts, quiet and thermal gates): on 2 CPUs, 2 workers left them idle a quarter of the
    run, and 3 still left them idle in stretches while two waited. Clean clones with an empty
    compiler cache: 3 workers 635 s (benchmarks/results/test_time-cold-ccache-3-workers.md),
    4 workers 609 s and 631 s (test_time-cold-ccache.md at 4e0c269 and 35f555d), then 579 s
    and 552 s with the scheduler below (the same file at 594db0e and 98fd4e1); 5 workers 632 s
    (test_time-cold-ccache-5-workers.md). This machine's speed drifts by about as much
    between runs."""
    import os

    return (os.cpu_count() or 1) + 2


# The test modules that take longest, longest first (a group's tests count together; their
# times on 2 CPUs: benchmarks/results/test_time-cold-ccache.md). pytest-xdist hands out work in
# collection order (with `--no-loadscope-reorder`, pyproject.toml), so these start first, and
# the hundreds of short tests fill the gaps after them: before, the control engine's 18 minutes
# started 6 minutes into the run and the emulated device's 8 minutes 24 minutes in, after every
# short test, and the run took the sum of their tails.
LONGEST_FIRST = (
    "tests/workflow/test_control.py",
    "tests/workflow/test_emulation_workflow.py",
    "tests/workflow/test_ort.py",
    "tests/workflow/test_executorch.py",
    "tests/workflow/test_workflow.py",
    "tests/workflow/test_slurm.py",
    "tests/workflow/test_readme.py",
    "tests/workflow/test_workflow_adb.py",
    "tests/workflow/test_install.py",
    "tests/workflow/test_sweep_workflow.py",
    "tests/workflow/test_module.py",
    "tests/unit/test_envs.py",
)


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def is_long(nodeid: str) -> bool:
    return module_of(nodeid) in LONGEST_FIRST


# Session fixtures each xdist worker would make again for itself (a whole workflow run), and
# the group whose one worker makes them once: every test that uses one runs in its group. The
# quickstart's run was made twice, in two workers, when a unit test used it outside the group.
SHARED_RUN_GROUPS = {"quickstart_repo": "quickstart"}


def shared_group(item) -> str | None:
    """The xdist group a test runs in to share what it uses with the tests that make it once:
    its shared run's (SHARED_RUN_GROUPS), else its module's where it uses a module-scoped
    fixture (made once per worker that runs the module's tests); None where it has a group
    of its own or shares nothing."""
    if item.get_closest_marker("xdist_group"):
        return None
    for name in item.fixturenames:
        if name in SHARED_RUN_GROUPS:
            return SHARED_RUN_GROUPS[name]
    definitions = item._fixtureinfo.name2fixturedefs  # pytest is pinned (pyproject.toml)
    if any(d[-1].scope == "module" for d in definitions.values() if d):
        return module_of(item.nodeid)
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into node ids
def pytest_collection_modifyitems(config, items):
    """Each test in the group it shares a fixture with (shared_group); longest first
    (LONGEST_FIRST), then everything else in collection order."""
    for item in items:
        group = shared_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(module_of(item.nodeid), len(rank)))


class LongestFirstScheduling(LoadGroupScheduling):
    """`--dist loadgroup`, except that a worker holding a long test (LONGEST_FIRST) is given a
    short one to hold next, never the next long one. A worker starts a test only once it holds
    the one after it (its teardown depends on it), and xdist gives it the head of the queue:
    the next long test, which then waited for the first to end while other workers ran short
    ones (the README's tests, queued behind the emulated device's)."""

    def _assign_work_unit(self, node) -> None:
        held = self.assigned_work.get(node, {}).values()
        if any(is_long(test) for unit in held for test, done in unit.items() if not done):
            short = next(
                (k for k, unit in self.workqueue.items() if not any(map(is_long, unit))), None
            )
            if short is not None:
                self.workqueue.move_to_end(short, last=False)
        super()._assign_work_unit(node)


def pytest_xdist_make_scheduler(config, log):
    """LongestFirstScheduling for the suite's `--dist loadgroup` (pyproject.toml); another
    `--dist` as asked. Kept over the public `--dist loadgroup` / `worksteal` because it was
    measured faster (pytest_xdist_auto_num_workers' figures); it overrides a private method of
    pytest-xdist (pinned exactly in pyproject.toml and the locks), so a release without it
    stops the run here rather than silently scheduling as plain loadgroup."""
    if config.getvalue("dist") != "loadgroup":
        return None
    if not callable(getattr(LoadGroupScheduling, "_assign_work_unit", None)):
        raise RuntimeError(
            "pytest-xdist no longer has LoadGroupScheduling._assign_work_unit, which "
            "tests/conftest.py's LongestFirstScheduling overrides: adapt it or drop it"
        )
    return LongestFirstScheduling(config, log)


def pytest_addoption(parser):
    """The phone tier (tests/phone/, marker `device`) runs on the loopback phone unless given a
    real phone's serial: `pytest -m device --phone-serial SERIAL --phone-engine DIR ...`."""
    parser.addoption("--phone-serial", default="", help="run the phone tier on this phone")
    parser.addoption(
        "--cpu-times",
        default="",
        help="write every test phase's CPU and wall seconds to this JSON file "
        "(benchmarks/test_time.py)",
    )
    parser.addoption(
        "--phone-engine",
        action="append",
        default=[],
        help="a built engine's results/engines/<key>/ directory (repeat for each build)",
    )
    parser.addoption("--phone-model", default="", help="a small exported model directory")
    parser.addoption(
        "--phone-sme2",
        choices=["yes", "no"],
        default="yes",
        help="whether the phone must have SME2 (no: a negative-control phone)",
    )
    parser.addoption(
        "--phone-config",
        default="config/paper.yaml",
        help="the experiment whose limits the phone must meet (bench.max_temp_c, max_other_load)",
    )
    parser.addoption(
        "--phone-loopback-cpuinfo",
        default="dimensity9500",
        help="without --phone-serial: the real cpuinfo the loopback phone carries "
        "(tests/data/devices/<name>.cpuinfo; dimensity9400plus has no SME2)",
    )


def reachable(host: str, port: int) -> bool:
    import socket

    try:
        socket.create_connection((host, port), timeout=5).close()
        return True
    except OSError:
        return False


def pypi_reachable() -> bool:
    """Whether PyPI answers (tests that install packages need it; they skip, saying so)."""
    return reachable("pypi.org", 443)


def debian_archive_reachable() -> bool:
    """Whether Debian's archive answers (the emulated device's pinned packages come from it)."""
    return reachable("deb.debian.org", 80)


# where the tests fetch from: a keyword of network_marks -> (its name, whether it answers)
SOURCES = {
    "PyPI": ("PyPI", pypi_reachable),
    "Debian": ("Debian's archive", debian_archive_reachable),
}


def network_marks(**fetched: str) -> list:
    """The marks of a slow test that fetches (fetched: what it fetches, by source, SOURCES'
    keywords): slow, network, and a skip naming each source that does not answer and what the
    test needed of it."""
    missing = [
        f"{SOURCES[source][0]}: {what}"
        for source, what in fetched.items()
        if not SOURCES[source][1]()
    ]
    reason = f"needs the network ({'; '.join(missing)})"
    return [pytest.mark.slow, pytest.mark.network, pytest.mark.skipif(bool(missing), reason=reason)]


# SMSTART, SMSTOP, RET (A64): enter and leave streaming mode, as every SME2 kernel begins
STREAMING_MODE_PROGRAM = """
import ctypes, mmap
code = b"".join(i.to_bytes(4, "little") for i in (0xD503477F, 0xD503467F, 0xD65F03C0))
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
"""


def streaming_mode_faults(userland: Path, cpu: str) -> bool:
    """Whether an SME instruction kills a process on this emulated CPU (SIGILL), run by the
    workflow's QEMU device in the userland it fetched. Where it does, a run that completes on
    that CPU executed no SME2 kernel: what the fallback's gate and rows then show."""
    from mnnrepro.devices.qemu import QemuDevice

    device = QemuDevice("probe", {"cpu": cpu, "userland": str(userland)})
    try:
        result = device.run([device.python(), "-c", STREAMING_MODE_PROGRAM], timeout=120)
    finally:
        device.close()
    assert result.returncode in (0, -4), result.stderr[-500:]  # ran, or SIGILL
    return result.returncode == -4


def assert_no_sme2_kernel_ran_without_sme(
    workdir: Path, cfg: dict, bench, without: str = "qemu-no-sme", sme2: str = "qemu-sme2-vl512"
) -> None:
    """The emulated CPU without SME ran every variant's prefill and decode to the end, where an
    SME instruction kills the process (and runs on the SME2 CPU): no SME2 kernel ran there,
    whatever the engine chose; what its profile would show, without the profile's cost."""
    userland = Path(workdir) / "resources/emulation/userland.json"
    assert streaming_mode_faults(userland, cfg["devices"][without]["qemu"]["cpu"])
    assert not streaming_mode_faults(userland, cfg["devices"][sme2]["qemu"]["cpu"])
    rows = bench[bench["device"] == without].groupby(["variant", "phase"]).size()
    assert set(rows.index) == {(v, p) for v in cfg["variants"] for p in ("prefill", "decode")}


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def tiny_model(workflow_model) -> Path:
    """A real MNN model: the tiny seeded Qwen3 (seed 0) as the workflow's own model rules
    export it (results/models/<name>/mnn of workflow_model, which the workflow's tests seed
    from), made once per test run and shared by its workers (read only)."""
    return workflow_model("synth-tiny", TINY) / "mnn"


TINY = {"synthetic": {"shape": "tiny", "seed": 0}}  # config/emulated-sme2.yaml's synth-tiny
TINY_VL = {"synthetic": {"shape": "tiny-vl", "seed": 0}}  # config-tiny.yaml's synth-tiny-vl


def shared_dir(tmp_path_factory) -> Path:
    """The directory every worker of this test run sees (pytest-xdist's workers each have a
    base directory below it)."""
    import os

    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def made_once(path: Path):
    """Holds `path`'s lock (another worker may be making it: wait for it) and yields whether
    it is still to be made; a making that fails leaves nothing under `path`."""
    import fcntl

    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = Path(f"{path}.done")
        try:
            yield not done.exists()
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        done.touch()


# ---- the workflow's synthetic models, made once per test run ------------------------------


@pytest.fixture(scope="session")
def workflow_model(tmp_path_factory):
    """made(name, spec) -> results/models/<name>/ of a run of the workflow's model rules alone
    for the synthetic model `spec` (see made_model): made once per test run, shared by its
    workers (a lock per model), read only."""
    cache = shared_dir(tmp_path_factory) / "workflow-models"
    cache.mkdir(exist_ok=True)
    return lambda name, spec: made_model(cache, name, spec)


@pytest.fixture(scope="session")
def seed_models(workflow_model):
    """seed(workdir, models, checkpoint=False): copies into workdir what the workflow's model
    rules write for each synthetic model of `models` (results/models/<name>/: the MNN export,
    its manifest, its layout; with `checkpoint`, the transformers checkpoint `hf/` too, which
    a run deletes once its consumers are done, for a workflow that converts it again: the
    control engine's GGUF), made by the workflow itself (workflow_model) once per test run.
    Snakemake then treats them as made (the copies keep their times, and without records of
    their own no rerun trigger fires) and runs only the stages a test is about: a test of the
    devices, the schedule, a cluster or the control engine does not make and export the same
    tiny checkpoint again. The model rules themselves run here (with config-tiny.yaml), in
    the quickstart and in tests/workflow/test_slurm.py's experiment (as Slurm jobs)."""

    def seed(workdir: Path, models: dict, checkpoint: bool = False) -> None:
        for name, spec in models.items():
            leave = None if checkpoint else shutil.ignore_patterns("hf")
            target = Path(workdir) / "results" / "models" / name
            shutil.copytree(workflow_model(name, spec), target, ignore=leave)

    return seed


def made_model(cache: Path, name: str, spec: dict) -> Path:
    """results/models/<name>/ of a run of the workflow's model rules alone (`snakemake --notemp`:
    with the checkpoint, hf/), in cache."""
    import hashlib
    import json

    import yaml

    assert set(spec) == {"synthetic"}, f"only synthetic models are seeded, not {name}: {spec}"
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
    workdir = cache / f"{name}-{key}"
    made = workdir / "results" / "models" / name
    with made_once(workdir) as missing, shared_by_fast_tests():
        if missing:
            config = yaml.safe_load((ROOT / "tests/workflow/config-tiny.yaml").read_text())
            config["models"] = {name: spec}
            workdir.mkdir()
            (workdir / "models.yaml").write_text(yaml.safe_dump(config))
            targets = [f"results/models/{name}/{f}" for f in ("manifest.json", "layout.json")]
            run_snakemake(
                ROOT,
                "--cores",
                "2",
                "--configfile",
                workdir / "models.yaml",
                "--directory",
                workdir,
                "--notemp",
                *targets,
            )
    return made


# ---- the quickstart, run once per test session in a copy of the repository ----------------


def tracked_files(root: Path) -> list[str]:
    import subprocess

    out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True).stdout
    return out.split()


def copy_repository(root: Path, dest: Path) -> Path:
    """The committed files of the repository (and the ones git is told about), as a user's
    clone has them."""
    for name in tracked_files(root):
        src = root / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture(scope="session")
def quickstart_repo(tmp_path_factory) -> Path:
    """A copy of the repository in which the README's `snakemake --cores 4` has run.

    Shared by every test that needs the quickstart's results or its exported model (the
    README commands, the sweep): the Qwen3-0.6B export and the default experiment run once.
    The copy's default experiment measures the load before each invocation but does not wait
    for a quiet machine: tests must pass on a busy one (the quiet gate is tested apart); it
    runs 4 fixed blocks instead of 6-10; and its model, under the same name, has the `tiny` shape
    instead of Qwen3-0.6B's: the same rules, export, schedule and statistics, without the
    ~3 minutes of making and exporting 0.6B parameters and the ~9 of benchmarking them (twice:
    the docs' `--forcerun run_bench`) that test nothing a size changes. The full quickstart,
    its time and what README says it shows are measured by benchmarks/quickstart_timing.py.
    """
    import yaml

    repo = copy_repository(ROOT, tmp_path_factory.mktemp("quickstart") / "repo")
    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    config["bench"]["quiet_timeout_s"] = 0
    config["bench"]["quiet_window_s"] = 0.1  # the shortest load sample, not 0.5 s each time
    # 4 fixed interleaved blocks, not 6-10 until the mechanism check settles: the same DAG
    # and schedule (the CI needs 2; stopping on the verdict is tests/unit/test_verdict_stop.py);
    # the full-size quickstart is timed by benchmarks/quickstart_timing.py, not here
    config["bench"]["repetitions"] = 4
    for model in config["models"].values():
        model["synthetic"]["shape"] = "tiny"
    (repo / "config" / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    run_snakemake(repo, "--cores", "4")
    return repo


# ---- adb: the real adb server from the adbutils wheel, and a loopback phone ---------------

ILLUSTRATIVE_PROPS = {  # a test device's own values, not a real phone's
    "ro.product.manufacturer": "LoopbackCo",
    "ro.product.model": "Loopback SME2 Phone",
    "ro.product.name": "loopback_sme2",
    "ro.product.device": "loopback",
    "ro.soc.manufacturer": "Mediatek",
    "ro.soc.model": "MT6993 (illustrative)",
    "ro.build.fingerprint": "loopback/loopback_sme2/loopback:16/TEST/1:user/test-keys",
    "ro.build.version.release": "16",
    "ro.build.version.sdk": "36",
    "ro.product.cpu.abi": "arm64-v8a",
}


def private_adb_server():
    """Start a private adb server (never a developer's real one on 5037) on a free port; yields
    the port and kills the server afterwards."""
    import socket
    import subprocess

    from mnnrepro.devices.adb_server import adb_binary, ensure_server

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ensure_server(port)
    yield port
    subprocess.run([adb_binary(), "-P", str(port), "kill-server"], capture_output=True, check=False)


@pytest.fixture(scope="session")
def adb_server_port():
    """A private adb server, killed at the end of the session."""
    yield from private_adb_server()


@pytest.fixture(scope="session")
def second_adb_server_port():
    """Another private adb server: a second "host" that phones hang off."""
    yield from private_adb_server()


@pytest.fixture
def phones_on_two_adb_servers(tmp_path, adb_server_port, second_adb_server_port):
    """A loopback phone behind each of two adb servers: [(phone, spec), (phone, spec)]."""
    ports = (adb_server_port, second_adb_server_port)
    phones = [start_loopback_phone(tmp_path / f"host{i}", port) for i, port in enumerate(ports)]
    yield phones
    for (phone, _), port in zip(phones, ports, strict=True):
        stop_loopback_phone(phone, port)


def start_loopback_phone(root: Path, adb_server_port: int, cpuinfo: str = "dimensity9500"):
    """A loopback ADB device with a real phone's /proc/cpuinfo in sandbox root (by default a
    Dimensity 9500's, with sme2; tests/data/devices/<cpuinfo>.cpuinfo); returns (phone, its adb
    device spec). Stop it with stop_loopback_phone."""
    from loopback_adbd import LoopbackAdbDevice, make_sandbox

    cpuinfo = (ROOT / "tests" / "data" / "devices" / f"{cpuinfo}.cpuinfo").read_text()
    sandbox = make_sandbox(root, ILLUSTRATIVE_PROPS, cpuinfo)
    phone = LoopbackAdbDevice(sandbox, ILLUSTRATIVE_PROPS)
    spec = full_adb_spec(
        serial=phone.serial,
        connect=True,
        server_port=adb_server_port,
        workdir=str(sandbox / "data" / "local" / "tmp" / "mnn-repro"),
        python=sys.executable,
    )
    return phone, spec


def stop_loopback_phone(phone, adb_server_port: int) -> None:
    import adbutils

    adbutils.AdbClient(host="127.0.0.1", port=adb_server_port).disconnect(phone.serial)
    phone.close()


@pytest.fixture
def two_phones(tmp_path, adb_server_port):
    """Two loopback phones on the same adb server: [(phone, spec), (phone, spec)]."""
    phones = [start_loopback_phone(tmp_path / f"phone{i}", adb_server_port) for i in (1, 2)]
    yield phones
    for phone, _ in phones:
        stop_loopback_phone(phone, adb_server_port)


@pytest.fixture
def loopback_phone(tmp_path, adb_server_port):
    """A loopback ADB device with a Dimensity 9500's /proc/cpuinfo (sme2), connected."""
    phone, spec = start_loopback_phone(tmp_path / "phone", adb_server_port)
    yield phone, spec
    stop_loopback_phone(phone, adb_server_port)


def greedy_answers(model_dir: Path, prompts: list[str], out: Path) -> dict:
    """The engine runner's greedy payload for prompts (8 new tokens), in a fresh process."""
    import json
    import subprocess

    from mnnrepro.runs.staging import RUNNER

    argv = [sys.executable, str(RUNNER), "greedy", "--config", str(model_dir / "config.json")]
    argv += ["--prompts", json.dumps(prompts), "--max-new-tokens", "8", "--out", str(out)]
    subprocess.run(argv, check=True, capture_output=True)
    return json.loads(out.read_text())


def snakemake_rules(root: Path):
    """(file name, rule name, rule body) of every rule in workflow/rules/*.smk, as text."""
    import re

    rule = re.compile(r"^(?:rule|checkpoint) (\w+):\n((?:[ \t]+.*\n|\n)*)", re.M)
    for smk in sorted((root / "workflow" / "rules").glob("*.smk")):
        for name, body in rule.findall(smk.read_text()):
            yield smk.name, name, body


def snakemake_argv(*args) -> list[str]:
    return [sys.executable, "-m", "snakemake", *map(str, args)]


def run_snakemake(cwd: Path, *args: str, check: bool = True, env: dict | None = None):
    """`python -m snakemake ARGS` in cwd, as a user runs it (in env: the whole environment;
    None: this one's), forked from a server that imported Snakemake once
    (tests/snakemake_server.py: the same entry point in a new process, without the
    interpreter's start and Snakemake's imports).

    With check, a non-zero exit fails the test and shows the end of Snakemake's output.
    """
    from snakemake_server import snakemake

    if slow_program(["snakemake", *map(str, args)]) is not None:  # the guard's own rule
        refuse_in_a_fast_test("a Snakemake run (not a dry run)")
    proc = snakemake(args, cwd, env)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


# ---- a short benchmark of two prebuilt-engine variants, for schedule tests ----------------


def section(key: str, **given):
    """The config's section `key` as a job reads it (sections.SECTION_TYPES): the given keys,
    the schema's defaults for the rest."""
    from mnnrepro.config import with_schema_defaults
    from mnnrepro.sections import SECTION_TYPES

    return SECTION_TYPES[key].of(with_schema_defaults(dict(given), "properties", key))


def full_bench(**given):
    """A `bench` section as a job reads it (sections.Bench): the given keys, the schema's
    defaults for the rest (the plan fills them once; nothing downstream does)."""
    return section("bench", **given)


def full_device_spec(entry: dict) -> dict:
    """A `devices.<name>` entry as the plan hands it to its device: the given keys, the
    schema's defaults for the rest, its kind's entry included (no device fills any)."""
    from mnnrepro.config import with_schema_defaults

    return with_schema_defaults(entry, "$defs", "device")


def full_adb_spec(**given) -> dict:
    """A phone's `adb` entry as the plan hands it to its device: the given keys, the schema's
    defaults for the rest (devices/adb.py fills none)."""
    from mnnrepro.config import with_schema_defaults

    return with_schema_defaults(dict(given), "$defs", "device", "properties", "adb")


SHORT_SETTINGS = dict(
    **{
        "prompt_tokens": 8,
        "generate_tokens": 4,
        "warmup": 0,
        "timeout_s": 120,
        "retries": 0,
        "cooldown_s": 0,
        # no waiting at the gates (a setting left out is the schema's: a 60 s quiet gate, a 600 s
        # thermal one): tests pass on a busy machine, and the gates are tested apart
        "max_other_load": None,
        "thermal_timeout_s": 0,
    }
)
SHORT_BENCH = full_bench(**SHORT_SETTINGS)
PREBUILT_ENGINE = EngineRecord.of(
    {"engine": "e", "kind": "prebuilt", "pin": "mnn==3.6.1", "version": "3.6.1", "files": []}
)


def design_stats(**given):
    """A `stats` section as a run's design holds it (sections.Stats): given keys, the schema's
    defaults for the rest (filled here, as the plan fills the whole config once)."""
    return section("stats", **given)


def design_of(spec: dict):
    """A design from a test's partial spec: each of its sections completed from the schema as
    the plan's config is (design.Design.of itself takes only a complete spec, as the plan
    hands it), no variants and no name where the spec has none."""
    from mnnrepro.config import with_schema_defaults
    from mnnrepro.design import SECTIONS, Design

    return Design.of(
        {
            "experiment": spec.get("experiment", ""),
            "variants": spec.get("variants", {}),
            **{
                name: with_schema_defaults(dict(spec.get(name, {})), "properties", name)
                for name in SECTIONS
            },
        }
    )


def full_variant_spec(spec: dict) -> dict:
    """A `variants.<name>` entry as the plan hands it to a job: its runtime and env completed
    from the schema (design.Variant fills none)."""
    from mnnrepro.config import VARIANT_SCHEMA, with_schema_defaults

    return with_schema_defaults(spec, *VARIANT_SCHEMA)


def full_runtime(runtime: dict) -> dict:
    """A variant's runtime as the plan hands it: every key, the schema's defaults for the rest."""
    return full_variant_spec({"engine": "e", "runtime": runtime})["runtime"]


def full_variant(name: str, spec: dict):
    """design.Variant of a test's partial spec (full_variant_spec)."""
    from mnnrepro.design import Variant

    return Variant.of(name, full_variant_spec(spec))


def full_variants(specs: dict) -> dict:
    """design.variants_of a test's partial specs (full_variant_spec)."""
    from mnnrepro.design import variants_of

    return variants_of({name: full_variant_spec(spec) for name, spec in specs.items()})


def two_variant_specs(runtime_a: dict | None = None) -> dict:
    """Variants `a` (1 thread, unless runtime_a) and `b` (2 threads) of the prebuilt engine."""
    from mnnrepro.runs.raw_files import variant_specs

    variants = {
        "a": {"engine": "e", "runtime": runtime_a or {"thread_num": 1}},
        "b": {"engine": "e", "runtime": {"thread_num": 2}},
    }
    return variant_specs(full_variants(variants), {"e": PREBUILT_ENGINE}, "0" * 64, {})


def assert_png(path: Path, min_side: int = 100) -> None:
    """A real PNG image (signature, IHDR) of at least min_side pixels a side: not an empty or
    truncated file of the right name."""
    import struct

    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path}: not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    assert min(width, height) >= min_side, f"{path}: {width}x{height} pixels"
    assert data.rstrip(b"\x00")[-8:-4] == b"IEND", f"{path}: truncated (no IEND chunk)"


def assert_vega_html(path: Path, *fields: str) -> None:
    """An altair chart page: a Vega-Lite spec whose data names every field asked for."""
    text = Path(path).read_text()
    assert "vega.github.io/schema/vega-lite" in text, f"{path}: no Vega-Lite spec"
    missing = [f for f in fields if f'"{f}"' not in text]
    assert not missing, f"{path}: the chart's data has no {missing}"


def assert_archive_holds(archive: Path, results: Path, *members: str) -> None:
    """The results archive verifies against its own MANIFEST.sha256 and carries the named
    members byte for byte as the experiment wrote them (results: results/<experiment>)."""
    import tarfile
    import tempfile

    from mnnrepro.archive.pack import verify_manifest
    from mnnrepro.archive.replay import archived_names

    names = archived_names(str(archive))
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        verify_manifest(tmp, archive)
        for member in members:
            name = f"results/{results.name}/{member}"
            assert name in names, f"{archive}: no {name}"
            assert (Path(tmp) / name).read_bytes() == (results / member).read_bytes(), name


def assert_report(path: Path, *files: str) -> None:
    """Snakemake's self-contained HTML report, listing each named result file."""
    text = Path(path).read_text()
    assert "<html" in text.lower(), f"{path}: not an HTML page"
    missing = [f for f in files if f not in text]
    assert not missing, f"{path}: the report lists no {missing}"


def without_replay_section(replayed: Path) -> str:
    """A replay's summary.md less its first section (what the replay checked, which a live
    run's summary has not): the rest is what the archived run's summary.md says."""
    import json

    from mnnrepro.archive.replay_check import replay_section

    check = json.loads((replayed / "replay.json").read_text())
    text = (replayed / "summary.md").read_text()
    section = "\n" + "\n".join(replay_section(check))
    assert section in text, "the replay's summary.md does not say what it checked"
    return text.replace(section, "", 1)


def llama_record(arch="aarch64", count=145, engine="llama"):
    """A llama.cpp engine record: its architecture and KleidiAI's SME functions in its build."""
    from mnnrepro.engines.registry import EngineRecord

    return EngineRecord.of(
        {
            "engine": engine,
            "kind": "llamacpp",
            "target_arch": arch,
            "sme": {"kleidiai_sme_function_count": count},
            "files": [],
        }
    )


def pair_mode(treatment, facts: dict, policy: str = "fail") -> str:
    """The mode of a pair whose treatment runs the engine record `treatment` on a device."""
    from mnnrepro.engines.pairs import Pair
    from mnnrepro.engines.registry import EngineRecord

    record = EngineRecord.of(treatment)
    pair = Pair("comparison", "off", "on", "baseline-engine", record.name, policy)
    return pair.mode_on({record.name: record}, facts)
