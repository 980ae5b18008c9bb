"""One job as a value: everything a rule's job reads (its inputs, outputs, log, params,
wildcards, threads, the repository it runs from), written as JSON beside its log before it
runs, so that a job can be rerun from that file alone, as Snakemake ran it:

    python -m mnnrepro.job logs/<rule>/<...>.job.json

The shims in workflow/scripts/ make it from Snakemake's object (workflow/scripts/job_spec.py);
the package reads only this value. A job's code is `run(job)` in `mnnrepro.jobs.<script>`, the
module named as the rule's shim."""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnnrepro.files import read_json, write_json

SPEC_SUFFIX = ".job.json"
SHIM_HELPER = "job_spec.py"  # workflow/scripts/: what every rule's shim hands its job to
LISTS = ("input", "output", "log", "params", "wildcards")  # Snakemake's named lists


@dataclass(frozen=True)
class NamedList:
    """Snakemake's named list as a value: the items in order, and each name's item (index,
    None) or slice of items (start, end). A name is read as an attribute or a key; the fields'
    own names start with _ so that no rule's name (`index`, `names`) can meet them."""

    _items: tuple
    _spans: Mapping[str, tuple[int, int | None]]

    @classmethod
    def of(cls, written: Mapping) -> NamedList:
        spans = {name: (span[0], span[1]) for name, span in written["names"].items()}
        return cls(tuple(written["items"]), spans)

    def _named(self, name: str):
        start, end = self._spans[name]
        return self._items[start] if end is None else NamedList(self._items[start:end], {})

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self._spans:
            raise AttributeError(name)
        return self._named(name)

    def __getitem__(self, key):
        return self._named(key) if isinstance(key, str) else self._items[key]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator:
        return iter(self._items)

    def get(self, name: str, default=None):
        return self._named(name) if name in self._spans else default


@dataclass(frozen=True)
class Job:
    script: str  # the rule's shim, workflow/scripts/<script>.py: its code is mnnrepro.jobs.<script>
    rule: str
    input: NamedList
    output: NamedList
    log: NamedList
    params: NamedList
    wildcards: NamedList
    threads: int
    repository: str  # the workflow's checkout (its git state goes into archives and checks)

    @classmethod
    def of(cls, written: Mapping[str, Any]) -> Job:
        lists = {name: NamedList.of(written[name]) for name in LISTS}
        scalars = ("script", "rule", "threads", "repository")
        return cls(**lists, **{name: written[name] for name in scalars})


def spec_path(written: Mapping[str, Any]) -> Path:
    """Beside the job's log (every rule has one), relative to where Snakemake runs."""
    return Path(str(written["log"]["items"][0]) + SPEC_SUFFIX)


def workdir_of(spec: Path, job: Job) -> Path:
    """Where the job ran: the spec's folder less its log's (relative) folders, so that a run
    copied or moved elsewhere reruns there."""
    spec = spec.resolve()
    return spec.parents[len(Path(str(job.log[0])).parts) - 1]


def start(written: Mapping[str, Any]) -> None:
    """A job as Snakemake starts it: its spec written, then run from the file read back, so
    that the run and any rerun of the spec read the same values."""
    path = spec_path(written)
    try:
        write_json(path, written)  # nothing is written where a value is not JSON
    except TypeError as error:
        raise TypeError(f"rule {written['rule']}: its job spec is not JSON ({error})") from error
    run(Job.of(read_json(path)))


def run(job: Job) -> None:
    """The job's code (its paths are relative to the directory it runs in)."""
    importlib.import_module(f"mnnrepro.jobs.{job.script}").run(job)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m mnnrepro.job", description="Rerun one job from its spec."
    )
    parser.add_argument("spec", help=f"a job's spec, written beside its log (*{SPEC_SUFFIX})")
    spec = Path(parser.parse_args(argv).spec)
    job = Job.of(read_json(spec))
    os.chdir(workdir_of(spec, job))
    run(job)


if __name__ == "__main__":
    main()
