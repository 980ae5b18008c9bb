"""Every figure README, docs and configs cite comes from a committed, stamped results file, and
equals that file where it is machine-readable (benchmarks/results/*.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def results(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.name)
def test_every_results_json_says_when_where_at_which_commit_and_how(path):
    measured = json.loads(path.read_text()).get("measured")
    assert measured, f"{path.name}: no `measured` field"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", measured["date"]), measured["date"]
    assert re.fullmatch(r"[0-9a-f]{7,40}", measured["commit"] or ""), measured["commit"]
    assert measured["machine"] and "CPUs" in measured["machine"]
    assert (measured["command"] or "").startswith("python benchmarks/"), measured["command"]
    script = measured["command"].split()[1]
    assert (ROOT / script).is_file(), f"{path.name}: its command names {script}, not committed"


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.md")), ids=lambda p: p.name)
def test_every_results_page_carries_its_measured_on_line(path):
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# ") and lines[2].startswith("Measured 20"), path.name


def number(text: str) -> float:
    return float(text.replace(",", ""))


def test_the_readme_test_time_is_test_time_json():
    """README cites the run on a new machine (an empty compiler cache, CI's case: the goal's
    measure), once; docs/development.md points to the file instead of restating it."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    cited = re.findall(
        r"the tests (\d+) s \(`benchmarks/results/test_time-cold-ccache\.md`\)", readme
    )
    assert len(cited) == 1, "README cites the test time once, in the form this test reads"
    assert int(cited[0]) == round(results("test_time-cold-ccache")["test_s"])
    development = (ROOT / "docs" / "development.md").read_text()
    assert not re.search(r"\d+ passed in\s+\d+ s", development), "a restated figure"


def test_the_quickstart_time_is_quickstart_timing_json():
    """README's seconds, blocks and seconds per block are the timed cold run's."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    timing = results("quickstart_timing")
    cited = re.search(
        r"the quickstart (\d+) s .*? settled after (\d+) blocks, (\d+) s each", readme
    )
    assert cited, "README's quickstart time"
    blocks = int(re.search(r"after (\d+) blocks", timing["benchmark_stopped"]).group(1))
    per_block = timing["cold_job_seconds"]["run_bench"] / blocks
    assert tuple(map(int, cited.groups())) == (round(timing["cold_s"]), blocks, round(per_block))


def test_the_install_figures_are_install_public_json():
    rows = {r["case"]: r for r in results("install_public")["rows"]}
    install = (ROOT / "docs" / "install.md").read_text()
    cited = re.search(
        r"the full\s+install (\d+) s, a ([\d,]+) MB venv; the light install (\d+) s, a ([\d,]+) MB "
        r"venv, and the replay of the\s+shipped archive in it (\d+) s",
        install,
    )
    assert cited, "docs/install.md no longer cites the install in the form this test reads"
    full, light = rows["full"], rows["light"]
    assert [number(g) for g in cited.groups()] == [
        round(full["install_s"]),
        full["venv_mb"],
        round(light["install_s"]),
        light["venv_mb"],
        round(light["replay_s"]),
    ]
    readme = (ROOT / "README.md").read_text()
    light_cited = re.search(r"a ([\d.]+) GB environment from PyPI", readme)
    assert light_cited and round(light["venv_mb"] / 1000, 1) == number(light_cited.group(1))


def test_the_quickstart_reference_gains_are_quickstart_pair_md():
    """config/config.yaml shows the reference machine's gains from quickstart_pair.md (and
    claims none: they hold on that machine only): the figures its comment quotes are the
    file's, and the reference gains are those figures rounded."""
    import yaml

    text = (ROOT / "config" / "config.yaml").read_text()
    quoted = re.search(
        r"prefill ([+-][\d.]+) % \(SD ([\d.]+)\), decode ([+-][\d.]+) % \(SD ([\d.]+)\)", text
    )
    assert quoted, "config/config.yaml no longer quotes the pair's figures in the form read here"
    pair = (RESULTS / "quickstart_pair.md").read_text()
    for phase, gain, sd in (("prefill", *quoted.groups()[:2]), ("decode", *quoted.groups()[2:])):
        line = f"- thread_num 1 -> 2, {phase}: {gain}% ± {sd}%"
        assert line in pair, f"quickstart_pair.md has no line {line!r}"
    comparison = yaml.safe_load(text)["comparison"]
    assert not comparison.get("claims")
    assert comparison["reference_gains"] == {
        "prefill": round(number(quoted.group(1)) / 100, 2),
        "decode": round(number(quoted.group(3)) / 100, 2),
    }


def test_the_paper_stopping_rule_is_the_one_simulated_and_meets_its_goals():
    """config/paper.yaml's `bench.repetitions` is the rule benchmarks/sequential_stopping.py
    simulated (re-run it after a change: the dry run's expected phone time comes from it), and
    the committed simulation meets the goals of stopping on the verdict: coverage at the stop
    where the noise cancels in the ratio, and for the builds' own wander, of the gain itself;
    where one build drifts against the other (heat, throttling) of the gain under the run's
    conditions; the claim reproduced when true and refused a tolerance outside the band; the
    expected phone time within half an hour and the worst within the budget; the same boundary
    never widened for dependence and the plain t interval falling short (the checks can
    fail)."""
    import yaml

    paper = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    result = json.loads((RESULTS / "sequential_stopping.json").read_text())
    assert result["repetitions"] == paper["bench"]["repetitions"], (
        "re-run benchmarks/sequential_stopping.py"
    )
    assert result["runs"] >= 2000
    scenarios = {s["scenario"]: s for s in result["scenarios"]}
    drifting = [n for n in scenarios if "heat" in n or "throttled" in n]
    not_cancelling = [n for n, s in scenarios.items() if not s["noise_cancels_in_the_ratio"]]
    assert len(not_cancelling) >= 3 and len(drifting) == 2
    for name, found in scenarios.items():
        rule = found["workflow"]
        held = rule["coverage_of_the_run_gain"] if name in drifting else rule["coverage"]
        assert held >= 0.95, name
    assert min(scenarios[n]["independent"]["coverage"] for n in not_cancelling) < 0.95
    at_claim = scenarios["3 % noise, gain at the claim"]["workflow"]["verdict_shares"]
    assert at_claim["both reproduced"] >= 0.95
    outside = scenarios["3 % noise, gain a tolerance outside the band"]["workflow"]
    assert outside["verdict_shares"]["both reproduced"] <= 0.05
    assert result["paper_phone_s"]["expected"] <= 1800
    assert result["paper_phone_s"]["worst"] <= paper["bench"]["repetitions"]["budget_s"] <= 2700
    assert min(s["plain_t"]["coverage"] for s in scenarios.values()) < 0.95
    seconds = [t["invocation_s"] for t in result["phone_times"]]
    assert seconds[0] <= 30 and seconds[-1] >= 110


def test_the_quickstart_stopping_rule_is_the_one_simulated_and_keeps_its_level():
    """config/config.yaml's rule (two planned looks, on the level calibrated for them) is the
    one benchmarks/sequential_stopping.py simulated under a real quickstart run's noise:
    coverage at the stop of 95 % in every scenario, and with equal gains in both phases the
    mechanism check `shown` in at most 2.5 % of runs (its one-sided error; 3 % allows for
    2,000 runs' Monte Carlo error)."""
    import yaml

    quickstart = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    result = json.loads((RESULTS / "sequential_stopping.json").read_text())["quickstart_rule"]
    planned = [s for s in result["scenarios"] if s["rule"] == "2 planned looks, calibrated"]
    assert planned and all(
        s["repetitions"] == quickstart["bench"]["repetitions"] for s in planned
    ), "re-run benchmarks/sequential_stopping.py"
    assert all(s["runs"] >= 2000 and s["coverage"] >= 0.95 for s in result["scenarios"])
    null = [s for s in planned if "no mechanism" in s["scenario"]]
    assert null and all(s["mechanism_shown"] <= 0.03 for s in null)


def local_rules() -> set[str]:
    """Rules that say `localrule: True`: they run on the controller, no cluster resources."""
    local = set()
    for path in (ROOT / "workflow" / "rules").glob("*.smk"):
        for block in re.split(r"\n(?=rule \w+:)", path.read_text()):
            name = re.match(r"rule (\w+):", block)
            if name and re.search(r"^    localrule: True", block, re.M):
                local.add(name.group(1))
    return local


def test_the_slurm_profile_leaves_room_over_what_the_rules_were_measured_to_need():
    """profiles/slurm sizes every submitted rule's memory and time from rule_resources.json:
    at least 1.5 x the largest max RSS and 2 x the longest wall time measured; it sets
    resources only for rules that exist and are submitted, and no resource no rule requests."""
    import yaml

    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "profile.yaml").read_text())
    measured = json.loads((RESULTS / "rule_resources.json").read_text())["rules"]
    local = local_rules()
    rules = set(
        re.findall(
            r"^rule (\w+):",
            "\n".join(p.read_text() for p in (ROOT / "workflow" / "rules").glob("*.smk")),
            re.M,
        )
    )
    assert "resources" not in profile, "a global resource no rule requests"
    assert set(profile["set-resources"]) <= rules - local
    submitted = {rule: m for rule, m in measured.items() if rule not in local}
    assert {"build_engine", "export_mnn_model", "compute_summary"} <= set(submitted)
    for rule, m in submitted.items():
        res = {**profile["default-resources"], **profile["set-resources"].get(rule, {})}
        assert res["mem_mb"] >= 1.5 * m["max_rss_mb"], f"{rule}: {res} vs {m}"
        assert res["runtime"] * 60 >= 2 * m["wall_s"], f"{rule}: {res} vs {m}"


def test_the_sme2_share_the_docs_cite_is_kernel_attribution_json():
    readme = (ROOT / "docs" / "attribution.md").read_text()
    cited = re.search(
        r"\*\*(\d+\.\d+) % of the engine's executed blocks\*\* at one thread \(([\d,]+)\s+blocks",
        readme,
    )
    assert cited, "docs/attribution.md no longer cites the SME2 share in the form this test reads"
    (row,) = [
        r
        for r in results("kernel_attribution-emulated-sme2")["phases"]
        if (r["device"], r["variant"], r["phase"]) == ("qemu-sme2-vl512", "one-thread", "prefill")
    ]
    assert float(cited.group(1)) == round(100 * row["sme2_share"], 2)
    assert number(cited.group(2)) == row["sme2_count"]
    none = [
        r
        for r in results("kernel_attribution-emulated-sme2")["phases"]
        if r["device"] == "qemu-no-sme"
    ]
    assert none and all(r["sme2_count"] == 0 for r in none)  # README: "none" without SME


# Every figure in README and docs: a measured number (a percentage, a time, a size, a rate)
# stands in a paragraph (a table goes with the paragraph before it) that names where it comes
# from, and where that is a committed results file, the number is in that file.
FIGURE = re.compile(
    r"(?<![\w.#/-])[+−-]?\d[\d,]*(?:\.\d+)?\s?(?:%|tok/s|GB/s|MB/s|MB|GB|kB|s\b|ms\b|×|°C|minutes?\b)"
)
CITED_FILE = re.compile(r"benchmarks/results/([\w.-]+?)\.(?:md|json|csv)")
SOURCE = re.compile(
    r"benchmarks/results/|results/|https?://|arXiv|learn\.arm\.com|issue #\d+|#\d{4}|《|"
    r"an estimate"
)
# Paragraphs whose figures are settings, bounds or definitions, not measurements: (document,
# the paragraph's first words) -> why it needs no source
SETTINGS = {
    ("docs/method.md", "- **engine**: the prebuilt"): "the CI level and target: settings",
    ("docs/verdicts.md", "**The A/A rule** is"): "the A/A margin and its consequences: settings",
    ("docs/verdicts.md", "**A quiet machine, or a"): "the quiet gate's settings",
    ("docs/verdicts.md", "**What the intervals assume, checked"): "the check's level: a setting",
    ("docs/verdicts.md", "**The level: per row or for the"): "the CI level: a setting",
    ("docs/verdicts.md", "**Devices in parallel.**"): "how often a waiting job speaks: a setting",
    ("docs/paper.md", "- **Host** (`config/host-sme2.yaml`)"): "the equality band: a setting",
    ("docs/phone.md", "   **Checked**: `collect_device_facts`"): "limits and placeholder values",
    ("docs/attribution.md", "- **The mix per token.**"): "the interval's level and draws",
}
DOCS = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]


def paragraphs(text: str) -> list[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        if block.lstrip().startswith("|") and out:
            out[-1] += "\n" + block  # a table belongs to the paragraph that introduces it
        else:
            out.append(block)
    return out


def numbers_in(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


# what the configs set (the claim, pinned sizes) may be quoted beside a file's figures
CONFIG_NUMBERS = numbers_in("".join(p.read_text() for p in (ROOT / "config").glob("*.yaml")))


def file_numbers(names: set[str]) -> list[float]:
    text = "".join(
        (RESULTS / f"{n}.{ext}").read_text()
        for n in names
        for ext in ("md", "json", "csv")
        if (RESULTS / f"{n}.{ext}").is_file()
    )
    return numbers_in(text) + CONFIG_NUMBERS


def in_file(figure: str, numbers: list[float]) -> bool:
    """The figure as printed, or rounded from the file's number (a share printed as a
    percentage, MB printed as GB)."""
    value = re.search(r"\d[\d,]*(?:\.\d+)?", figure).group(0).replace(",", "")
    decimals = len(value.partition(".")[2])
    target = float(value)
    return any(
        round(scaled, decimals) == target
        for x in numbers
        for scaled in (x, x * 100, x / 1000, x / 1e6)
    )


@pytest.mark.parametrize("doc", DOCS)
def test_every_figure_has_its_source(doc):
    unsourced = []
    for para in paragraphs((ROOT / doc).read_text()):
        setting = any(d == doc and para.startswith(start) for d, start in SETTINGS)
        if FIGURE.search(para) and not SOURCE.search(para) and not setting:
            unsourced.append(para[:120])
    assert not unsourced, f"{doc}: figures without a source (name the file): {unsourced}"


@pytest.mark.parametrize("doc", DOCS)
def test_every_figure_is_in_the_results_file_its_paragraph_cites(doc):
    missing = []
    for para in paragraphs((ROOT / doc).read_text()):
        cited = set(CITED_FILE.findall(para))
        if not cited or "《" in para:  # the article's own figures sit beside the file's
            continue
        numbers = file_numbers(cited)
        missing += [(f, sorted(cited)) for f in FIGURE.findall(para) if not in_file(f, numbers)]
    assert not missing, f"{doc}: figures not in the files their paragraphs cite: {missing}"


def test_the_figure_check_fails_for_an_invented_figure():
    numbers = numbers_in((RESULTS / "test_time.json").read_text())
    measured = results("test_time")["test_s"]
    assert in_file(f"{round(measured)} s", numbers) and in_file(f"{measured} s", numbers)
    assert not in_file("98765 s", numbers)  # a figure no run of this suite takes
    para = "Measured: 12.5 % faster.\n"
    assert FIGURE.search(para) and not SOURCE.search(para)


def test_the_ci_halfwidth_source_is_committed_and_its_hash_recorded():
    """ci_halfwidth.md's figures come from a bench.csv committed beside them, whose sha256
    the results file records (anyone can recompute every cell from it)."""
    from mnnrepro.files import sha256_file

    result = results("ci_halfwidth")
    assert sha256_file(RESULTS / result["source"]) == result["source_sha256"]
    method = (ROOT / "docs" / "verdicts.md").read_text()
    cited = re.search(r"was\s+([\d.]+) % \(prefill\) and ([\d.]+) % \(decode\)", method)
    assert cited, "docs/verdicts.md no longer cites the half-widths in the form read here"
    at10 = {r["phase"]: r["median"] for r in result["rows"] if r["n"] == 10}
    assert [float(g) for g in cited.groups()] == [
        round(100 * at10["prefill"], 1),
        round(100 * at10["decode"], 1),
    ]


def test_the_quickstart_mechanism_tally_is_quickstart_mechanism_json():
    """docs/explaining.md's count of each word the quickstart's mechanism check said in quiet
    cold runs, and what the loaded run said, are the study's; README's "never shown" too."""
    readme = " ".join((ROOT / "docs" / "explaining.md").read_text().split())
    runs = results("quickstart_mechanism")["runs"]
    cited = re.search(
        r"in (\d+) quiet cold runs the mechanism check \(`prefill gain > decode gain`\) said "
        r"`inconclusive` in (\d+) and `contradicted` in (\d+), never `shown`; the one run beside "
        r"a busy process said `(\w+)` with both gains negative",
        readme,
    )
    assert cited, "docs/explaining.md's tally of the quickstart's mechanism check"
    quiet = [r["status"] for r in runs if not r["loaded"]]
    (busy,) = [r for r in runs if r["loaded"]]
    assert tuple(map(int, cited.groups()[:3])) == (
        len(quiet),
        quiet.count("inconclusive"),
        quiet.count("contradicted"),
    )
    assert "shown" not in quiet
    top = " ".join((ROOT / "README.md").read_text().split())
    assert f"never `shown` in {len(quiet)} quiet cold runs" in top
    assert cited.group(4) == busy["status"] and max(busy["prefill_gain"], busy["decode_gain"]) < 0
