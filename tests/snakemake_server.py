"""`python -m snakemake ARGS` for the tests, forked from a server that imported Snakemake once.

Each run is the command line's own entry point (`snakemake.cli.main`, what `python -m
snakemake` calls) in a new process, with the test's working directory, arguments, environment
and its own stdout and stderr, exiting with Snakemake's code; what it does not pay again is
the interpreter's start and Snakemake's imports (its plugin registry imports every installed
plugin, the Slurm one pandas): a dry run of the quickstart took 1.75 CPU-s started anew and
0.54 forked (the suite starts Snakemake about 120 times).

The server is a new interpreter started with the environment the runs ask for (one server per
environment but pytest's name of the current test, so a variable read at import is read as in
a new process; the child runs with the request's whole environment), and it holds nothing
but installed modules, Snakemake's and those the runs before imported (their list, which each
child writes: the next child is forked with them), and no test's state, threads or warning
filters, and none of this repository's code (a run imports its own checkout's `mnnrepro`, as
a new process does). A child
is a fork of it, as multiprocessing's forkserver makes them; only Python's hash seed is the
server's in all of its children (a new process draws its own).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def serve() -> None:
    """The server: one JSON request per line on stdin, {"args", "cwd", "env", "stdout",
    "stderr"}; one line back per request, {"returncode"}, once its child has exited."""
    responses = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything an import prints goes to stderr, not into the answers
    import snakemake.cli  # noqa: F401  (what every run would import again)

    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            run_child(request)
        _, status = os.waitpid(pid, 0)
        imported = listed(Path(request["stderr"]).with_name("imported"))  # before it is gone
        responses.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        responses.flush()
        import_installed(imported)


def listed(listing: Path) -> list[str]:
    """The module names a child wrote (none if it wrote no list)."""
    with contextlib.suppress(OSError):
        return listing.read_text().split()
    return []


def import_installed(names: list[str]) -> None:
    """Imports the installed modules a run imported, so that the next run is forked with them:
    Snakemake's API, DAG and plugins, the libraries its Snakefile reads the config with. A
    module that does not import is left to the runs."""
    for name in names:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def installed_modules() -> list[str]:
    """The names of the loaded modules whose files are the interpreter's or its installed
    packages' (never a checkout's: this repository's `mnnrepro` is imported by each run)."""
    import sysconfig

    places = tuple(
        {os.path.join(sysconfig.get_path(key), "") for key in ("stdlib", "purelib", "platlib")}
    )
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if (getattr(module, "__file__", None) or "").startswith(places)
    )


def run_child(request: dict) -> None:
    """In the forked child: the request's files as stdin (none), stdout and stderr, its
    directory as the working one and sys.path[0] (as `python -m` sets it), then Snakemake's
    main and the interpreter's exit handlers; never returns."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(out, fd)
            os.close(out)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.path[0] = os.getcwd()
        import snakemake.cli
        import snakemake.workflow

        # the one value Snakemake reads at import: the directory it ran from (the header's
        # "Run directory", the root of generated unit tests), here the server's
        snakemake.workflow.Workflow._rundir = os.getcwd()
        sys.argv = [str(Path(snakemake.cli.__file__).with_name("__main__.py")), *request["args"]]
        try:
            snakemake.cli.main(request["args"])
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
            if isinstance(exit.code, str):
                print(exit.code, file=sys.stderr)
        atexit._run_exitfuncs()
        listing = Path(request["stderr"]).with_name("imported")
        listing.write_text("\n".join(installed_modules()))
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


class SnakemakeServer:
    """The test side: a server process for one environment."""

    def __init__(self, env: dict[str, str]):
        self.process = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=tempfile.gettempdir(),
            text=True,
        )

    def run(self, args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as tmp:
            stdout, stderr = Path(tmp) / "stdout", Path(tmp) / "stderr"
            files = {"stdout": str(stdout), "stderr": str(stderr)}
            request = {"args": args, "cwd": str(cwd), "env": env, **files}
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the Snakemake fork server exited ({self.process.wait()})")
            return subprocess.CompletedProcess(
                [sys.executable, "-m", "snakemake", *args],
                json.loads(line)["returncode"],
                stdout.read_text() if stdout.exists() else "",
                stderr.read_text() if stderr.exists() else "",
            )

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


SERVERS: dict[tuple, SnakemakeServer] = {}


def snakemake(args, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m snakemake ARGS` in cwd with env (None: this process's environment), as
    subprocess.run(..., capture_output=True, text=True) returns it."""
    env = dict(os.environ if env is None else env)
    key = tuple(sorted((k, v) for k, v in env.items() if k != "PYTEST_CURRENT_TEST"))
    if key not in SERVERS:
        if not SERVERS:
            atexit.register(lambda: [server.close() for server in SERVERS.values()])
        SERVERS[key] = SnakemakeServer(env)
    return SERVERS[key].run([str(a) for a in args], Path(cwd).resolve(), env)


if __name__ == "__main__":
    serve()
