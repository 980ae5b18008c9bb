"""A PEP 503 package index on loopback serving the lock's own torch wheel.

PyTorch's CPU wheel index (where Python 3.11's `torch==2.13.0+cpu` lives) cannot be reached
from this workplace. Tests and benchmarks of the public install put this index beside PyPI
through pip's own PIP_EXTRA_INDEX_URL; pip then takes the wheel only if its sha256 is the
lock's, exactly as it would from PyTorch's index.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import html
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

from packaging import tags
from packaging.utils import parse_wheel_filename

ROOT = Path(__file__).resolve().parents[1]
TORCH_LOCK = ROOT / "locks" / "py311-pytorch-cpu.txt"
sys.path.insert(0, str(ROOT / "envs"))
import closure  # noqa: E402  (envs/closure.py: how locks are read)


def public_pip_env(extra_index: str | None = None, compile_bytecode: bool = True) -> dict:
    """This process's environment for a pip that knows only public indexes: no pip settings of
    this machine (config files, find-links, mirrors), no cache, no active venv; an unreachable
    index is tried once, not five times. `extra_index` is added as pip's own
    PIP_EXTRA_INDEX_URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    env.update(PIP_CONFIG_FILE="/dev/null", PIP_NO_CACHE_DIR="1", PIP_RETRIES="0")
    if not compile_bytecode:
        env["PIP_NO_COMPILE"] = "1"
    if extra_index:
        env["PIP_EXTRA_INDEX_URL"] = extra_index
    return env


def torch_wheel(dest: Path) -> Path:
    """The lock's torch wheel, fetched hash-checked with this machine's own pip set-up (which
    reaches PyTorch's index on a developer's machine, or a local copy of it)."""
    dest.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--require-hashes"]
    only = ["--python-version", "3.11", "--only-binary=:all:"]
    env = {**os.environ, "PIP_RETRIES": "0"}  # an unreachable index: once, not five times
    subprocess.run([*pip, *only, "-r", str(TORCH_LOCK), "-d", str(dest)], check=True, env=env)
    (wheel,) = dest.glob("torch-*.whl")
    return wheel


@contextlib.contextmanager
def wheel_index(*wheels: Path):
    """Serve `/simple/<project>/` pages listing the wheels (with their sha256) on 127.0.0.1;
    yields the index URL."""
    projects: dict[str, list[Path]] = {}
    for wheel in wheels:
        projects.setdefault(wheel.name.split("-")[0].lower().replace("_", "-"), []).append(wheel)
    files = {wheel.name: wheel for wheel in wheels}
    digests = {wheel: hashlib.sha256(wheel.read_bytes()).hexdigest() for wheel in wheels}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            parts = [p for p in self.path.split("?")[0].split("/") if p]
            if len(parts) == 2 and parts[0] == "simple" and parts[1] in projects:
                links = []
                for wheel in projects[parts[1]]:
                    href = f"/files/{quote(wheel.name)}#sha256={digests[wheel]}"
                    links.append(f'<a href="{href}">{html.escape(wheel.name)}</a><br>')
                page = "<html><body>" + "".join(links) + "</body></html>"
                self._send("text/html", page.encode())
            elif len(parts) == 2 and parts[0] == "files" and parts[1] in {quote(n) for n in files}:
                name = next(n for n in files if quote(n) == parts[1])
                self._send("application/octet-stream", files[name].read_bytes())
            else:
                self.send_error(404)

        def _send(self, kind: str, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


# ---- checking a lock against PyPI's simple index (PEP 691 JSON) ---------------------------


def lock_hashes(lock: Path) -> dict[tuple[str, str], set[str]]:
    """(name, version) -> the sha256 hashes a pip lock lists for it."""
    entries = {}
    for name, lines in closure.lock_blocks(lock).items():
        version = re.match(r"^[^=]+==([^ ;\\]+)", lines[0]).group(1)
        entries[(name, version)] = set(
            re.findall(r"--hash=sha256:([0-9a-f]{64})", "\n".join(lines))
        )
    return entries


@functools.cache
def supported_tags(python: str) -> frozenset:
    """The wheel tags this platform accepts under CPython `python` (computing them probes the
    C library for every manylinux version: once per Python, not once per file)."""
    major, minor = (int(x) for x in python.split("."))
    return frozenset(tags.cpython_tags(python_version=(major, minor))) | frozenset(
        tags.compatible_tags(python_version=(major, minor))
    )


def installable(filename: str, python: str) -> bool:
    """Whether a distribution file installs on this platform under CPython `python`."""
    if not filename.endswith(".whl"):
        return True  # an sdist builds anywhere (install.sh builds it with the pinned setuptools)
    _, _, _, file_tags = parse_wheel_filename(filename)
    return bool(file_tags & supported_tags(python))


@functools.cache
def index_files(name: str) -> list[dict]:
    request = urllib.request.Request(
        f"https://pypi.org/simple/{name}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["files"]


def index_problems(lock: Path, pythons: list[str]) -> list[str]:
    """What PyPI does not serve of a lock: unknown hashes, no installable file per Python."""
    entries = {k: v for k, v in lock_hashes(lock).items() if "+" not in k[1]}  # local builds
    with ThreadPoolExecutor(16) as pool:
        pages = dict(zip(entries, pool.map(lambda k: index_files(k[0]), entries), strict=True))
    problems = []
    for (name, version), hashes in sorted(entries.items()):
        files = {f["hashes"].get("sha256"): f["filename"] for f in pages[(name, version)]}
        unknown = sorted(hashes - files.keys())
        if unknown:
            problems.append(f"{lock.name}: {name}=={version}: no file with sha256 {unknown[0]}")
        for python in pythons:
            if not any(installable(files[h], python) for h in hashes if h in files):
                problems.append(f"{lock.name}: {name}=={version}: nothing installs on {python}")
    return problems
