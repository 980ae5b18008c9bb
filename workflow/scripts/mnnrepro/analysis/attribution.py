"""Where the time went, and whether the kernels the claim rests on ran: the profiles of
runs/profile.py as one table (kernels.csv), the validity check on it, and the report's section.

A function counts as an SME2 kernel when the engine's build lists it (MNN's SME2 kernels and
KleidiAI's SME functions, both found by disassembly at build time); an engine whose kind lists
none (the prebuilt wheel) is judged by the names in the profile: functions named for SME2, as
the build check names them (toolchain/kernels.SME2_SYMBOL; this includes the NEON helpers MNN
names for the SME2 tile layout, which only its SME2 path calls). Shares are of
the profile's total (perf and simpleperf count every sample of the process, the interpreter
and the OS kernel included; QEMU counts the blocks executed in the engine's libraries only);
the SME2 share is of the engine libraries' counts alone, so that the two kinds of profile, and
a small model whose process start-up dominates, say the same thing.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mnnrepro.devices.instruction_mix import CLASSES
from mnnrepro.engines.pairs import Pair
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.files import read_json
from mnnrepro.phases import PHASES
from mnnrepro.sections import Attribution
from mnnrepro.toolchain.kernels import SME2_SYMBOL

# the instructions each row's blocks executed, by class (QEMU's profiles only: empty else)
MIX_COLUMNS = [f"ins_{c}" for c in CLASSES]
INSTRUCTION_COLUMNS = ["instructions", "unlogged_blocks", *MIX_COLUMNS]
COLUMNS = [
    *("device", "model", "variant", "phase", "engine", "profiler", "unit"),
    *("library", "engine_library", "symbol", "count", "share", "sme2_kernel"),
    *INSTRUCTION_COLUMNS,
]


def mix_columns(row: dict) -> dict:
    """A profile row's instructions by class (kernels.csv's ins_* columns) and their total;
    None where its profiler counts no instructions (perf, simpleperf: samples)."""
    mix = row.get("instructions")
    if mix is None:
        return dict.fromkeys(INSTRUCTION_COLUMNS)
    by_class = {f"ins_{c}": mix.get(c, 0) for c in CLASSES}
    total = sum(by_class.values())
    return {"instructions": total, "unlogged_blocks": row["unlogged_blocks"], **by_class}


def profile_rows(profile: dict, model: str) -> list[dict]:
    listed = profile.get("sme2_kernels")
    names = set(listed) if listed is not None else None
    total = profile.get("total") or 0
    libraries = set(profile.get("libraries", []))
    rows = []
    for row in profile.get("rows", []):
        symbol = row["symbol"]
        sme2 = bool(symbol) and (
            symbol in names if names is not None else bool(SME2_SYMBOL.search(symbol))
        )
        rows.append(
            {
                "device": profile.get("device", ""),
                "model": model,
                "variant": profile.get("variant", ""),
                "phase": profile.get("phase", ""),
                "engine": profile.get("engine", ""),
                "profiler": profile.get("profiler", ""),
                "unit": profile.get("unit", ""),
                "library": row["dso"],
                "engine_library": row["dso"] in libraries,
                "symbol": symbol if symbol else "",
                "count": row["count"],
                "share": row["count"] / total if total else 0.0,
                "sme2_kernel": sme2,
                **mix_columns(row),
            }
        )
    return rows


def kernel_table(profiles: list[dict]) -> pd.DataFrame:
    """Every profile's rows (one per library x function) as one table."""
    rows = []
    for profile in profiles:
        rows += profile_rows(profile, profile.get("model", ""))
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.astype(dict.fromkeys(INSTRUCTION_COLUMNS, "Int64"))  # empty where none


def phase_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per device x model x variant x phase: total count, the engine libraries' count, the
    SME2 kernels' count and their share of the engine libraries'."""
    keys = ["device", "model", "variant", "phase"]
    if table.empty:
        return pd.DataFrame(columns=[*keys, "total", "engine_count", "sme2_count", "sme2_share"])
    engine = table["engine_library"].astype(bool)
    grouped = table.assign(
        engine_count=table["count"].where(engine, 0),
        sme2_count=table["count"].where(table["sme2_kernel"].astype(bool) & engine, 0),
    )
    out = grouped.groupby(keys, as_index=False).agg(
        total=("count", "sum"),
        engine_count=("engine_count", "sum"),
        sme2_count=("sme2_count", "sum"),
    )
    out["sme2_share"] = out["sme2_count"] / out["engine_count"].where(out["engine_count"] > 0)
    return out


def unresolved_libraries(profile: dict, max_share: float) -> dict[str, float]:
    """Engine libraries whose counts fall outside any named function more than max_share."""
    libraries = set(profile.get("libraries", []))
    per: dict[str, list[int]] = {}
    for row in profile.get("rows", []):
        if row["dso"] in libraries:
            counts = per.setdefault(row["dso"], [0, 0])
            counts[0] += row["count"]
            counts[1] += row["count"] if not row["symbol"] else 0
    return {
        lib: round(bad / total, 4)
        for lib, (total, bad) in sorted(per.items())
        if total and bad / total > max_share
    }


def sme2_share(profile: dict) -> tuple[int, float | None]:
    """The SME2 kernels' count in one profile and their share of the engine libraries'."""
    rows = [r for r in profile_rows(profile, "") if r["engine_library"]]
    count = sum(r["count"] for r in rows if r["sme2_kernel"])
    total = sum(r["count"] for r in rows)
    return count, (count / total if total else None)


def execution_checks(
    profiles: dict[tuple[str, str], dict],
    pair: Pair,
    engines: dict[str, EngineRecord],
    mode: str,
    attribution: Attribution,
) -> list[dict]:
    """The kernels that ran, per pair: the treatment's SME2 kernels in its prefill profile
    (where the pair is judged against its claim and is about SME2 kernels: mode, the pair's
    on the device, engines.pairs.modes_record), none in any of the baseline's profiled phases
    (the image questions' included), and every engine library's symbols resolved. profiles:
    (variant, phase) -> profile."""
    treat = engines[pair.treatment_engine]
    kind = treat.kind
    base_variant, treat_variant = names = pair.names
    missing = [f"{v} {p}" for v in names for p in PHASES if (v, p) not in profiles]
    if missing:
        return [
            {
                "name": f"kernel attribution of {treat_variant} vs {base_variant}",
                "pair": list(names),
                "passed": False,
                "evidence": f"no profile of {', '.join(missing)}",
                "details": {"missing": missing},
            }
        ]
    checks = [resolution_check(profiles, names, attribution)]
    if not pair.about_sme2 or not (
        kind.carries_sme2_kernels(treat) or kind.sme_switch or pair.masked
    ):
        return checks  # e.g. the prebuilt wheel's thread pairs: not about SME2 kernels
    ran = sme2_run_check(profiles, names, pair.runs_sme2(mode, engines), attribution)
    counts = ran["details"].items()
    leaked = [k for k, v in counts if k.startswith(f"{base_variant} ") and v["count"]]
    if pair.masked and leaked:  # the stack learns about SME another way than getauxval
        ran["evidence"] += (
            f"; engine {treat.name} ({kind.kind}) ran SME2 kernels under the SME mask "
            f"({', '.join(leaked)}): the mask does not hide SME from it"
        )
    checks.append(ran)
    return checks


def resolution_check(profiles: dict, pair: tuple[str, str], attribution: Attribution) -> dict:
    """Every engine library's samples of both variants fall in named functions (and every
    profiled invocation produced rows)."""
    base_variant, treat_variant = pair
    failed = [f"{v} {p}" for (v, p), prof in profiles.items() if v in pair and not prof.get("rows")]
    unresolved = {
        f"{v} {p}": bad
        for (v, p), prof in sorted(profiles.items())
        if v in pair and (bad := unresolved_libraries(prof, attribution.max_unresolved_share))
    }
    return {
        "name": f"kernel profiles resolve to functions ({treat_variant}, {base_variant})",
        "pair": list(pair),
        "passed": not unresolved and not failed,
        "evidence": (
            "; ".join(
                f"{where}: {lib} has {share:.0%} of its samples outside any symbol"
                for where, bad in unresolved.items()
                for lib, share in bad.items()
            )
            or "every engine library's samples fall in named functions"
        )
        + (f"; no profile rows (the invocation failed): {', '.join(failed)}" if failed else ""),
        "details": {"unresolved": unresolved, "failed": failed},
    }


def sme2_run_check(
    profiles: dict, pair: tuple[str, str], expect_sme2: bool, attribution: Attribution
) -> dict:
    """The treatment's SME2 kernels carried its prefill (expect_sme2: the pair is judged
    against its claim and the treatment needs SME2, engines.pairs.Pair.runs_sme2) and the
    baseline ran none, in every phase profiled for both."""
    base_variant, treat_variant = pair
    # every phase profiled for both variants: the image questions' too, where they were asked
    both = set.intersection(*({p for (v, p) in profiles if v == variant} for variant in pair))
    phases = PHASES + tuple(sorted(both - set(PHASES)))
    shares = {(v, p): sme2_share(profiles[(v, p)]) for v in pair for p in phases}
    unit = profiles[(treat_variant, "prefill")].get("unit", "samples")
    treat_count, treat_share = shares[(treat_variant, "prefill")]
    base_counts = {p: shares[(base_variant, p)][0] for p in phases}
    if expect_sme2:
        if unit == "samples":  # CPU time: a kernel that carries work carries a share of it
            minimum = attribution.min_sme2_share
            enough = (treat_share or 0.0) >= minimum
            least = f">= {minimum:.0%} of its engine code's prefill samples"
        else:  # executions, counted: one executed block proves the kernel ran
            minimum = attribution.min_sme2_blocks
            enough = treat_count >= minimum
            least = f">= {minimum} executed {unit} in prefill"
        passed = enough and not any(base_counts.values())
        expectation = f"{treat_variant}'s SME2 kernels carry {least}, {base_variant}'s none"
    else:
        passed = not any(count for count, _ in shares.values())
        expectation = "no SME2 kernel runs in either (no SME2 on this device or architecture)"
    return {
        "name": f"SME2 kernels ran in {treat_variant}, not in {base_variant} (profiled)",
        "pair": list(pair),
        "passed": passed,
        "evidence": "; ".join(
            f"{v} {p}: {count} {unit} in SME2 kernels"
            + (f" ({share:.1%})" if share is not None else "")
            for (v, p), (count, share) in shares.items()
        )
        + f"; expectation: {expectation}",
        "details": {
            f"{v} {p}": {"count": count, "share": share}
            for (v, p), (count, share) in shares.items()
        },
    }


def profile_files(index_paths) -> list[str]:
    """The profile files an index (rule profile_kernels) lists, found beside it
    (`<index without .json>/<variant>/<phase>.json`, where runs/profile.py writes them), so a
    restored archive reads its own copies."""
    files = []
    for path in index_paths:
        folder = Path(path).with_suffix("")
        for entry in read_json(path)["profiles"]:
            files.append(str(folder / entry["variant"] / f"{entry['phase']}.json"))
    return files


def read_profiles(index_paths) -> list[dict]:
    """The profiles the indexes list, each with its model."""
    return [
        {**read_json(path), "model": Path(path).parents[1].name}
        for path in profile_files(index_paths)
    ]
