from mnnrepro.correctness import compare_answers, leading_agreement
from mnnrepro.validity import correctness_check


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
        {"off": base, "on": treat}, {"baseline": "off", "treatment": "on"}, {"min_agreement": 1.0}
    )
    assert not check["passed"]
    assert "'你好': 2/4 leading tokens agree (first divergence at token 2)" in check["evidence"]


def test_gate_threshold():
    base = payload(("p", [1, 2, 3, 4]))
    treat = payload(("p", [1, 2, 3, 0]))
    assert compare_answers(base, treat, 0.75)["passed"]
    assert not compare_answers(base, treat, 0.76)["passed"]
