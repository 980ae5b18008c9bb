"""A single-node Slurm cluster on this machine, for the tests (`pytest -k slurm`).

Debian's `slurm-wlm` and `munge` (installed by .ci/run), run as root: munged with its own run,
log and lib directories owned by `munge` (as Debian's service would), and slurmctld + slurmd
from a short slurm.conf in a temporary directory (no cgroups: proctrack/linuxproc, task/none;
no accounting, so job states come from `squeue`; MinJobAge keeps finished jobs visible to it
long enough). Clients find the cluster through $SLURM_CONF, and inside a job through
/etc/slurm/slurm.conf (the executor plugin's job step drops every SLURM_* variable but the
job's identity before its nested `srun`, as on a real cluster, whose nodes have that file): the
file is made only where none exists (a machine with its own Slurm is not touched; the tests
skip there) and removed by `stop`, which also stops the Slurm daemons (munged stays, as a
system service would)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

TOOLS = ("munged", "munge", "unmunge", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")
NODE = "repro-node"
PARTITION = "repro"


def missing() -> str | None:
    """Why this machine cannot run the cluster (None: it can)."""
    absent = [tool for tool in TOOLS if not shutil.which(tool)]
    if absent:
        return f"no {', '.join(absent)}: apt-get install slurm-wlm munge (.ci/run does)"
    if os.geteuid() != 0:
        return "slurmd runs jobs as their users only when started as root"
    if SYSTEM_CONF.exists() and not SYSTEM_CONF.is_symlink():
        return f"{SYSTEM_CONF} exists: this machine has its own Slurm, which the tests leave alone"
    return None


SYSTEM_CONF = Path("/etc/slurm/slurm.conf")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def munge_works() -> bool:
    cred = subprocess.run(["munge", "-n"], capture_output=True, check=False)
    if cred.returncode != 0:
        return False
    back = subprocess.run(["unmunge"], input=cred.stdout, capture_output=True, check=False)
    return back.returncode == 0


def start_munge() -> None:
    if munge_works():
        return
    for directory in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
        Path(directory).mkdir(parents=True, exist_ok=True)
        shutil.chown(directory, "munge", "munge")
    if not Path("/etc/munge/munge.key").exists():
        subprocess.run(["mungekey", "--create"], check=True)
        shutil.chown("/etc/munge/munge.key", "munge", "munge")
    subprocess.run(["runuser", "-u", "munge", "--", "munged"], check=True)
    deadline = time.monotonic() + 20
    while not munge_works():
        if time.monotonic() > deadline:
            raise RuntimeError("munged started but `munge -n | unmunge` still fails")
        time.sleep(0.2)


def memory_mb() -> int:
    with open("/proc/meminfo", encoding="ascii") as fh:
        kb = int(fh.readline().split()[1])
    return kb // 1024 - 512  # what Slurm may hand out, with room for the daemons


def slurm_conf(root: Path) -> str:
    return f"""ClusterName=repro
SlurmctldHost={socket.gethostname()}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=600
MpiDefault=none
NodeName={NODE} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} \
RealMemory={memory_mb()} State=UNKNOWN
PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
"""


def start(root: Path) -> dict[str, str]:
    """Start the cluster with its files in root; returns the environment its clients need."""
    start_munge()
    for sub in ("state", "spool"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    conf = root / "slurm.conf"
    conf.write_text(slurm_conf(root))
    SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
    SYSTEM_CONF.unlink(missing_ok=True)  # only ever a link an earlier test run left
    SYSTEM_CONF.symlink_to(conf)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    subprocess.run(["slurmctld", "-f", str(conf)], check=True, env=env)
    subprocess.run(["slurmd", "-f", str(conf), "-N", NODE], check=True, env=env)
    deadline = time.monotonic() + 60
    while True:
        state = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=env, check=False
        ).stdout.strip()
        if state == "idle":
            return {"SLURM_CONF": str(conf)}
        if time.monotonic() > deadline:
            logs = "\n".join(
                (root / name).read_text()[-2000:]
                for name in ("slurmctld.log", "slurmd.log")
                if (root / name).exists()
            )
            stop(root)
            raise RuntimeError(f"the Slurm node is {state or 'not listed'} after 60 s:\n{logs}")
        time.sleep(0.5)


def stop(root: Path) -> None:
    """Stop both daemons and wait until they are gone (a next cluster reuses the node name)."""
    if SYSTEM_CONF.is_symlink():
        SYSTEM_CONF.unlink()
    pids = []
    for name in ("slurmd.pid", "slurmctld.pid"):
        pid = root / name
        if pid.exists() and pid.read_text().strip().isdigit():
            pids.append(int(pid.read_text()))
            try:
                os.kill(pids[-1], 15)
            except ProcessLookupError:
                pids.pop()
    deadline = time.monotonic() + 30
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if Path(f"/proc/{p}").exists() and not zombie(p)]
        time.sleep(0.2)


def zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True
