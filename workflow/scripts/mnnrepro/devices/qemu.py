"""`qemu`: an emulated arm64 Linux device, QEMU user mode (SME2-capable, with a chosen CPU and
streaming vector length) over the pinned userland; its timings are recorded, never judged.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mnnrepro.config import ConfigError
from mnnrepro.devices import profilers, qemu_blocks
from mnnrepro.devices.base import run_process
from mnnrepro.devices.instruction_mix import block_encodings, block_instructions, translated_classes
from mnnrepro.devices.local import LocalDevice
from mnnrepro.errors import DataError

AT_HWCAP2 = 26


HWCAP2_SME2 = 1 << 37  # arch/arm64/include/uapi/asm/hwcap.h
PR_SME_GET_VL = 64  # include/uapi/linux/prctl.h: the vector length and flags, or -1 (EINVAL)
PR_SME_VL_LEN_MASK = 0xFFFF
# every profiled run reserves the guest's address space: the same libraries land at the same
# addresses run after run (QemuDevice.profile)
QEMU_RESERVE = ("-R", qemu_blocks.QEMU_RESERVED_VA)


VECTOR_LENGTH_OPTION = "sme-default-vector-length"  # QEMU's -cpu option, in bytes
SME_VECTOR_BYTES = (16, 32, 64, 128, 256)  # the lengths SME has: 128 to 2048 bits


def asked_vector_length(cpu: str) -> str | None:
    """The `-cpu` string's sme-default-vector-length, as written (None: not given)."""
    options = dict(part.partition("=")[::2] for part in cpu.split(",") if "=" in part)
    return options.get(VECTOR_LENGTH_OPTION)


def vector_length_bits(cpu: str) -> int | None:
    value = asked_vector_length(cpu)
    return int(value) * 8 if value and value.isdigit() else None


def vector_length_problems(devices: dict) -> list[str]:
    """A QEMU CPU asked for a streaming vector length SME does not have: QEMU gives the process
    a supported one instead (the largest below it, or the maximum), and the run would measure
    another CPU than its configuration says; one line each, naming the key."""
    problems = []
    for name, spec in sorted(devices.items()):
        value = asked_vector_length((spec.get("qemu") or {}).get("cpu", ""))
        if value is not None and not (value.isdigit() and int(value) in SME_VECTOR_BYTES):
            problems.append(
                f"config key `devices.{name}.qemu.cpu`: {VECTOR_LENGTH_OPTION}={value} is no SME "
                f"vector length (bytes: {', '.join(map(str, SME_VECTOR_BYTES))}, i.e. 128 to 2048 "
                "bits); QEMU would run another one"
            )
    return problems


def vector_length_mismatch(name: str, configured: int | None, measured: int | None) -> None:
    """The streaming vector length the emulated process got is the one configured, or the
    device is refused before any run: one line naming the key."""
    if configured is not None and measured != configured:
        raise ConfigError(
            f"config key `devices.{name}.qemu.cpu`: asks for {configured}-bit streaming "
            f"vectors, but the emulated process got {measured} bits (prctl PR_SME_GET_VL)"
        )


def counted_profile(rows: list[dict]) -> dict:
    """A counting run's profile (profilers.answer)."""
    return profilers.answer("qemu -d exec,nochain", "executed blocks", rows)


class QemuDevice(LocalDevice):
    """arm64 Linux under QEMU user mode, on this host's file system (so staging, fetching and
    verifying are the local device's); its timings are recorded but never judged."""

    kind = "qemu"
    emulated = True
    marks_phases = True  # profile_phases: a process's marked phases counted apart
    profile_counts = "instructions by class"  # devices/instruction_mix.py

    @classmethod
    def of_spec(cls, name: str, spec: dict) -> QemuDevice:
        return cls(name, spec)  # its own entry, not the local device's `python`

    def __init__(self, name: str, spec: dict):
        receipt_path = spec.get("userland", "resources/emulation/userland.json")
        try:
            self.userland = json.loads(Path(receipt_path).read_text())
        except OSError:
            raise DataError(
                receipt_path,
                f"missing: device {name} runs in the emulated userland it describes",
                "it is made by the rule fetch_emulation_userland",
            ) from None
        super().__init__(name, python=self.userland["python"])
        self.cpu = spec["cpu"]  # the plan filled it
        self._mappings = {}  # sorted libraries -> where QEMU maps them (profile)

    def run(self, argv, timeout, env=None, qemu_options=()):
        qemu = [self.userland["qemu"], "-cpu", self.cpu, "-L", self.userland["sysroot"]]
        env = dict(env or {})
        # the userland's packages always stay importable: a PYTHONPATH asked for (an engine's
        # staged wheels) comes before them
        python_path = [p for p in (env.pop("PYTHONPATH", ""), self.userland["site"]) if p]
        guest_env = {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONPATH": ":".join(python_path),
            **env,
        }
        command = [*qemu, *qemu_options, *argv]
        return run_process(argv, command, timeout, self.workdir, guest_env, clean_env=True)

    def profile(self, argv, timeout, env, libraries, hz):
        """Executed blocks per function (devices/profilers.py): a first run finds where the
        engine's libraries are mapped, a second counts every block executed in them. QEMU
        maps the same libraries at the same addresses in every run (`-R` reserves the guest's
        address space), so the next invocations of the same libraries on this device (other
        variants and phases) reuse the mapping and run once; the counting run logs its own
        mappings, and where they differ it is run again after a fresh first run."""
        result, segments = self._profiled(argv, timeout, env, libraries, None)
        return result, segments.get(qemu_blocks.OUTSIDE_PHASES, {})

    def profile_phases(self, argv, timeout, env, libraries, hz, marker: str, phases):
        """Device.profile_phases, one counting run for every phase: each phase's blocks are
        those between its markers (their names are in the strace log, so `phases` is not
        needed to tell them apart)."""
        return self._profiled(argv, timeout, env, libraries, marker)

    def _profiled(self, argv, timeout, env, libraries, marker: str | None):
        key = tuple(sorted(libraries))
        known = self._mappings.get(key)
        if known is not None:
            result, segments = self._count_blocks(argv, timeout, env, libraries, known, marker)
            if segments is not None:
                return result, segments
            del self._mappings[key]
        maps_log = self.scratch("qemu-strace.log")
        first = self.run(argv, timeout, env, [*QEMU_RESERVE, "-d", "strace", "-D", maps_log])
        if not first.ok:
            return first, {}
        maps = qemu_blocks.exec_mappings(Path(maps_log).read_text(errors="replace"), set(libraries))
        if not maps:
            raise profilers.ProfilerError(
                f"device {self.name}: none of the engine's libraries {sorted(libraries)} was "
                "mapped executable in the run (QEMU strace)"
            )
        result, segments = self._count_blocks(argv, timeout, env, libraries, maps, marker)
        if segments is None:
            raise profilers.ProfilerError(
                f"device {self.name}: QEMU mapped the engine's libraries differently in the "
                f"counting run than in the run before it: its block counts cannot be placed"
            )
        self._mappings[key] = maps
        return result, segments

    def _count_blocks(self, argv, timeout, env, libraries, maps, marker):
        """The counting run, logging blocks in maps' ranges: segment -> its profile (the
        whole run's under OUTSIDE_PHASES, without a marker; with one, OUTSIDE_PHASES holds
        only the total of the blocks outside the phases); (result, None) when the run
        mapped the libraries elsewhere (its counts cannot be placed)."""
        reader = qemu_blocks.LogReader(qemu_blocks.phase_marker(marker) if marker else None)
        items = ["-d", "strace,exec,nochain,in_asm", "-dfilter", qemu_blocks.dfilter(maps)]
        result = self.run(argv, timeout, env, [*QEMU_RESERVE, *items, "-D", reader.path])
        segments, unplaced, other = reader.finish()
        if result.ok and qemu_blocks.exec_mappings(other, set(libraries)) != maps:
            return result, None
        placed = {int(pc, 16) for blocks in segments.values() for pc in blocks}
        instructions = block_instructions(other.splitlines(), placed)  # theirs, translated
        classes, words = translated_classes(instructions), block_encodings(instructions)
        profiles = {
            name: counted_profile(
                qemu_blocks.attribute_blocks(blocks, maps, libraries, classes, words)
            )
            for name, blocks in segments.items()
        }
        if marker:  # outside the phases: counted, not placed
            profiles[qemu_blocks.OUTSIDE_PHASES] = {**counted_profile([]), "total": unplaced}
        return result, profiles

    def site_dirs(self):
        return [self.userland["site"]]

    def power_reader(self):
        return "emulated: the host's power says nothing about an arm64 CPU's"

    def facts(self):
        # the CPU's own answers, in the emulated process: HWCAP2, and the streaming vector
        # length the kernel gives a new process (prctl PR_SME_GET_VL; -1 without SME)
        probe = (
            "import ctypes; libc = ctypes.CDLL(None, use_errno=True); libc.getauxval.restype = "
            f"ctypes.c_ulong; print(libc.getauxval({AT_HWCAP2}), libc.prctl({PR_SME_GET_VL}, "
            "0, 0, 0, 0))"
        )
        out = self.run([self.python(), "-c", probe], timeout=120)
        words = out.stdout.split() if out.ok else []
        hwcap2 = int(words[0]) if len(words) == 2 and words[0].isdigit() else None
        vl = int(words[1]) if len(words) == 2 and words[1].lstrip("-").isdigit() else -1
        measured_vl = (vl & PR_SME_VL_LEN_MASK) * 8 if vl >= 0 else None
        vector_length_mismatch(self.name, vector_length_bits(self.cpu), measured_vl)
        return {
            "device": self.name,
            "kind": self.kind,
            "emulated": True,
            "cpu_model": f"QEMU {self.cpu}",
            "cpu": self.cpu,
            # measured in the emulated process; the configured one beside it
            "sme_vector_length_bits": measured_vl,
            "sme_vector_length_bits_configured": vector_length_bits(self.cpu),
            "hwcap2": hwcap2,
            "sme2": bool(hwcap2 and hwcap2 & HWCAP2_SME2),
            "cpu_features": ["sme2"] if hwcap2 and hwcap2 & HWCAP2_SME2 else [],
            "cpu_count": os.cpu_count(),
            "os": "Linux (QEMU user mode)",
            "qemu": self.userland.get("qemu_version", ""),
            "thermal_c": {},
        }
