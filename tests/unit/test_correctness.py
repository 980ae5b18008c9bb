import pytest
from conftest import full_variant, section

from mnnrepro.analysis.correctness import compare_answer, compare_answers, leading_agreement
from mnnrepro.analysis.divergence import IDENTICAL, NO_OUTPUT, ROUNDING, WRONG, GateRule
from mnnrepro.analysis.validity import correctness_check


def payload(*answers):
    return {
        "answers": [{"prompt": p, "tokens": t} for p, t in answers],
        "engine": {"device_supports": "The device supports: sme2: 1"},
    }


def test_leading_agreement():
    assert leading_agreement([1, 2, 3], [1, 2, 3]) == (3, None)
    assert leading_agreement([1, 2, 3], [1, 9, 3]) == (1, 1)
    assert leading_agreement([1, 2, 3], [1, 2]) == (2, 2)


def test_gate_fails_on_differing_tokens_and_says_where():
    base = payload(("hi", [5, 6, 7, 8]), ("你好", [1, 2, 3, 4]))
    treat = payload(("hi", [5, 6, 7, 8]), ("你好", [1, 2, 0, 0]))
    result = compare_answers(base, treat, 1.0)
    assert not result["passed"]
    assert [r["first_divergence"] for r in result["prompts"]] == [None, 2]
    check = correctness_check(
        {"off": base, "on": treat}, ("off", "on"), section("correctness", min_agreement=1.0)
    )
    assert not check["passed"]
    assert (
        "'你好': differs (no logits to tell rounding from a wrong answer), 2/4"
        in (check["evidence"])
    )


def test_gate_threshold():
    base = payload(("p", [1, 2, 3, 4]))
    treat = payload(("p", [1, 2, 3, 0]))
    assert compare_answers(base, treat, 0.75)["passed"]
    assert not compare_answers(base, treat, 0.76)["passed"]


# ---- rounding vs wrong: the near-tie rule, on constructed logits ---------------------------


def step(top, sd=4.0):
    """One greedy step as the engines record it: top-k (id, logit), best first."""
    return {"mean": 0.0, "sd": sd, "top": [list(t) for t in top]}


def answer(tokens, steps, prompt="p"):
    return {"prompt": prompt, "tokens": tokens, "steps": steps}


SAME = step([(7, 15.0), (8, 11.0), (9, 10.0)])


def test_a_flip_at_a_near_tie_is_rounding_and_passes():
    # reference: 13 leads 395 by 0.031 (0.008 SD); SME2: 395 leads 13 by 0.086 (0.02 SD) -
    # the shape measured under QEMU at 512 bits
    ref = answer([7, 13, 1], [SAME, step([(13, 13.148), (395, 13.117), (555, 12.4)]), SAME])
    other = answer([7, 395, 2], [SAME, step([(395, 13.070), (13, 12.984), (555, 12.43)]), SAME])
    judged = compare_answer(ref, other, near_tie_sd=0.25)
    assert judged["kind"] == ROUNDING
    assert judged["first_divergence"] == 1
    assert judged["reference_margin"] == pytest.approx(0.031)
    assert judged["other_margin"] == pytest.approx(0.086)
    result = compare_answers({"answers": [ref]}, {"answers": [other]}, 1.0)
    assert result["passed"]
    assert result["prompts"][0]["kind"] == ROUNDING


def test_a_confident_flip_is_wrong_and_fails():
    ref = answer([7, 13], [SAME, step([(13, 14.0), (395, 11.4)])])  # margin 2.6 = 0.65 SD
    other = answer([7, 395], [SAME, step([(395, 14.0), (13, 13.99)])])
    judged = compare_answer(ref, other, near_tie_sd=0.25)
    assert judged["kind"] == WRONG
    assert "margins 2.6 (reference) and 0.01 (other)" in judged["reason"]
    assert not compare_answers({"answers": [ref]}, {"answers": [other]}, 1.0)["passed"]
    # and no agreement threshold lets it pass (it did: min_agreement 0.5, one token in two)
    for share in (0.5, 0.0):
        assert not compare_answers({"answers": [ref]}, {"answers": [other]}, share)["passed"]


def test_a_near_tie_for_the_reference_but_not_for_the_other_engine_is_wrong():
    """A broken kernel can land on the reference's runner-up with absurd confidence."""
    ref = answer([13], [step([(13, 13.148), (395, 13.117)])])
    other = answer([395], [step([(395, 65504.0), (13, 0.0)], sd=32752.0)])
    assert compare_answer(ref, other, 0.25)["kind"] == WRONG


@pytest.mark.parametrize(
    "other_top",
    [
        [(99, 20.0), (98, 19.0)],  # the reference's token is not in the other's top-k
        [(395, None), (13, None)],  # non-finite logits (a broken kernel) are recorded as null
    ],
)
def test_missing_or_broken_logits_are_never_a_near_tie(other_top):
    ref = answer([13], [step([(13, 13.148), (395, 13.117), (99, 1.0)])])
    other = answer([other_top[0][0]], [step(other_top)])
    assert compare_answer(ref, other, 0.25)["kind"] == WRONG


@pytest.mark.parametrize(
    ("ref_tokens", "other_tokens", "says"),
    [
        ([1, 2], [], "the engine produced no output"),
        ([], [1, 2], "the reference produced no output"),
        ([], [], "the reference and engine produced no output"),
        ([1, 2, 3], [1, 2], "stopped early: 2 of 3 tokens"),
    ],
)
def test_an_empty_or_short_answer_fails_and_says_so(ref_tokens, other_tokens, says):
    ref, other = answer(ref_tokens, [SAME] * 3), answer(other_tokens, [SAME] * 3)
    result = compare_answers({"answers": [ref]}, {"answers": [other]}, 0.0)
    row = result["prompts"][0]
    assert row["kind"] == NO_OUTPUT
    assert row["reason"] == says
    assert not result["passed"]  # not even min_agreement 0 lets an empty answer pass
    evidence = correctness_check(
        {"a": {"answers": [ref], "engine": {}}, "b": {"answers": [other], "engine": {}}},
        ("a", "b"),
        section("correctness", min_agreement=0.0),
    )["evidence"]
    assert "identical" not in evidence
    assert says in evidence


def test_identical_answers_pass():
    ref = answer([1, 2], [SAME, SAME])
    assert compare_answer(ref, dict(ref), 0.25)["kind"] == IDENTICAL


def test_the_gate_rules_defaults_are_the_schemas():
    from dataclasses import fields

    from mnnrepro.config import load_schema

    gate = load_schema()["properties"]["correctness"]["properties"]
    for field in fields(GateRule):
        assert gate[field.name]["default"] == field.default, field.name


def test_a_greedy_record_whose_tokens_disagree_with_its_own_logits_is_refused(tmp_path):
    """Greedy decoding takes each step's top-1: a record that says otherwise (edited, or a
    tool that recorded one thing and chose another) is refused naming the file and the step,
    before any gate judges it."""
    import json

    from mnnrepro.errors import DataError
    from mnnrepro.records import read_record

    def step(*top):
        return {"top": [[t, v] for t, v in top], "sd": 1.0}

    answer = {
        "prompt": "p",
        "tokens": [5, 7, 9],
        "steps": [step((5, 3.0), (6, 1.0)), step((7, 2.0), (5, 1.5)), step((9, 4.0), (1, 0.0))],
    }
    record = {"off": {"answers": [answer], "engine": {}}, "on": {"answers": [answer], "engine": {}}}
    path = tmp_path / "greedy.json"
    path.write_text(json.dumps(record))
    assert read_record(path, "greedy") == record
    edited = {**answer, "tokens": [5, 8, 9]}
    path.write_text(json.dumps({**record, "on": {"answers": [edited], "engine": {}}}))
    with pytest.raises(DataError, match=r"variant on, prompt 'p': the token at step 1 is 8") as err:
        read_record(path, "greedy")
    assert str(path) in str(err.value)


# ---- teacher forcing: every step compared in the reference's context ------------------------


def forced_answer(steps, fed, prompt="p"):
    """The other engine fed the reference's tokens `fed`: its own top-1 at every step."""
    return {
        "prompt": prompt,
        "tokens": [s["top"][0][0] for s in steps],
        "steps": steps,
        "forced_tokens": fed,
    }


NEAR = step([(13, 13.148), (395, 13.117), (555, 12.4)])  # the reference's near-tie
NEAR_FLIPPED = step([(395, 13.070), (13, 12.984), (555, 12.43)])


def test_a_wrong_step_after_a_near_tie_flip_is_caught_by_teacher_forcing():
    """The free-running gate stopped at the first divergence: a near-tie flip at step 1 made
    the answer pass as rounding with nothing after it compared. Fed the reference's tokens,
    the other engine is confidently wrong at step 3, and the answer fails there."""
    ref = answer([7, 13, 7, 7], [SAME, NEAR, SAME, SAME])
    free = answer([7, 395, 2, 2], [SAME, NEAR_FLIPPED, SAME, SAME])  # a different context
    assert compare_answer(ref, free, 0.25)["kind"] == ROUNDING
    late = step([(9, 16.0), (7, 10.0), (8, 9.0)])  # 7 is 6 logits (1.5 SD) behind: wrong
    forced = forced_answer([SAME, NEAR_FLIPPED, SAME, late], [7, 13, 7, 7])
    result = compare_answers({"answers": [ref]}, {"answers": [free]}, 1.0, GateRule(), [forced])
    (row,) = result["prompts"]
    assert not result["passed"] and row["kind"] == WRONG
    assert row["teacher_forced"] and row["steps_compared"] == 4
    assert row["first_top1_difference"] == 1 and row["differing_steps"] == 2
    assert "first divergence at token 3" in row["reason"]
    assert row["free_kind"] == ROUNDING  # the free-running answer stays on the record
    assert result["rule"].startswith("Teacher-forced")


def test_near_tie_flips_at_several_steps_are_rounding_when_the_logits_stay_close():
    ref = answer([7, 13, 7, 13], [SAME, NEAR, SAME, NEAR])
    forced = forced_answer([SAME, NEAR_FLIPPED, SAME, NEAR_FLIPPED], [7, 13, 7, 13])
    rule = GateRule(max_flip_share=0.5)  # 2 of these 4 steps may flip
    row = compare_answers({"answers": [ref]}, {"answers": [ref]}, 1.0, rule, [forced])
    (judged,) = row["prompts"]
    assert judged["kind"] == ROUNDING and judged["differing_steps"] == 2 and row["passed"]
    assert judged["max_logit_diff_sd"] == pytest.approx(abs(13.148 - 12.984) / 4.0)
    assert judged["reference_margin"] == pytest.approx(0.031)


def test_too_many_near_tie_flips_are_wrong_even_when_each_is_a_near_tie():
    """Logit noise and small weight errors flip many near-ties, each within the tolerance
    (benchmarks/results/gate_power.md); more than `max_flip_share` of the steps fail."""
    ref = answer([7, 13, 7, 13], [SAME, NEAR, SAME, NEAR])
    forced = forced_answer([SAME, NEAR_FLIPPED, SAME, NEAR_FLIPPED], [7, 13, 7, 13])
    one = forced_answer([SAME, NEAR_FLIPPED, SAME, NEAR], [7, 13, 7, 13])
    result = compare_answers({"answers": [ref]}, {"answers": [ref]}, 1.0, GateRule(), [forced])
    (row,) = result["prompts"]
    assert row["kind"] == WRONG and not result["passed"]
    assert "2 of 4 steps flip a near-tie (more than the bound 0.25" in row["reason"]
    kept = compare_answers({"answers": [ref]}, {"answers": [ref]}, 1.0, GateRule(), [one])
    assert kept["prompts"][0]["kind"] == ROUNDING and kept["passed"]  # 1 of 4: at the bound


def test_the_gate_rule_reads_the_config_and_keeps_the_schema_defaults():
    rule = GateRule.of(section("correctness", near_tie_sd=0.1, min_agreement=1.0, prompts=[]))
    assert rule == GateRule(near_tie_sd=0.1)
    assert GateRule() == GateRule.of(section("correctness"))  # its defaults: the schema's


def test_every_top1_agreeing_is_not_enough_when_the_logits_drift_beyond_the_bound():
    ref = answer([7, 7], [SAME, SAME])
    drifted = step([(7, 27.0), (8, 11.0), (9, 10.0)])  # same argmax, 12 logits = 3 SD off
    forced = forced_answer([SAME, drifted], [7, 7])
    (row,) = compare_answers({"answers": [ref]}, {"answers": [ref]}, 1.0, GateRule(), [forced])[
        "prompts"
    ]
    assert row["kind"] == WRONG and "up to 3 SDs" in row["reason"]
    same = compare_answers({"answers": [ref]}, {"answers": [ref]}, 1.0, GateRule(), [ref])
    assert same["prompts"][0]["kind"] == IDENTICAL and same["prompts"][0]["max_logit_diff_sd"] == 0


@pytest.mark.parametrize(
    ("forced", "kind", "says"),
    [
        (None, NO_OUTPUT, "no teacher-forced answer"),
        ({"prompt": "p", "tokens": [], "crashed": "SIGILL"}, "crashed", "SIGILL"),
        (forced_answer([SAME], [7]), NO_OUTPUT, "stopped early: 1 of 2 steps"),
        (forced_answer([SAME, SAME], [7, 9]), WRONG, "other tokens than the reference's"),
    ],
)
def test_a_teacher_forced_answer_that_is_missing_short_or_misfed_fails(forced, kind, says):
    ref = answer([7, 7], [SAME, SAME])
    result = compare_answers(
        {"answers": [ref]}, {"answers": [ref]}, 0.0, GateRule(), [forced] if forced else []
    )
    (row,) = result["prompts"]
    assert row["kind"] == kind and says in row["reason"] and not result["passed"]


def test_the_runner_fed_the_reference_tokens_reproduces_its_steps(tiny_model, tmp_path):
    """The real prebuilt engine on the tiny model: the same variant, fed its own greedy
    answer, computes the same steps (identical under teacher forcing); fed other tokens, it
    records them and its own top-1 at each step."""
    from conftest import PREBUILT_ENGINE

    from mnnrepro.devices.local import LocalDevice
    from mnnrepro.runs.greedy import run_greedy
    from mnnrepro.runs.staging import push_receipt

    device = LocalDevice("host")
    try:
        receipt = push_receipt(device, {"mnn": str(tiny_model)}, "tiny")
        variant = full_variant("v", {"engine": "e", "runtime": {"thread_num": 1}})
        free = run_greedy(device, receipt, PREBUILT_ENGINE, variant, ["hello"], 6, 120)
        tokens = free["answers"][0]["tokens"]
        again = run_greedy(
            device, receipt, PREBUILT_ENGINE, variant, ["hello"], 6, 120, forced=[tokens]
        )
        other = [(t + 1) % 50 for t in tokens]
        fed = run_greedy(
            device, receipt, PREBUILT_ENGINE, variant, ["hello"], 6, 120, forced=[other]
        )
    finally:
        device.close()
    (forced,) = again["answers"]
    assert forced["forced_tokens"] == tokens and len(forced["steps"]) == len(tokens)
    judged = compare_answers(free, free, 1.0, GateRule(), again["answers"])["prompts"][0]
    assert judged["kind"] == IDENTICAL and judged["steps_compared"] == 6
    (misfed,) = fed["answers"]
    assert misfed["forced_tokens"] == other
    assert misfed["tokens"] == [s["top"][0][0] for s in misfed["steps"]]
    assert misfed["steps"][0] == forced["steps"][0]  # the prompt's step is fed nothing


def test_the_gate_asks_each_variant_after_the_baselines_it_is_fed():
    """runs/gate_job.py asks a treatment's own and teacher-forced answers in one ask, so its
    baselines are asked first; pairs in a cycle keep the variants' order."""
    from mnnrepro.runs.gate_job import bases_first

    assert bases_first(["a", "b", "c"], {"a": ["c"], "b": ["a"]}) == ["c", "a", "b"]
    assert bases_first(["a", "b"], {"a": ["b"], "b": ["a"]}) == ["a", "b"]  # a cycle
    assert bases_first(["a", "b"], {}) == ["a", "b"]
