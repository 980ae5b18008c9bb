import pytest

from mnnrepro.analysis import verdict as vd

# claim +0.75, tolerance 0.25: band [0.5, 1.0] (binary-exact, so the edges are exact)
CASES = [
    ((0.5, 1.0), vd.REPRODUCED),  # CI exactly the band: inside (inclusive)
    ((0.6, 0.9), vd.REPRODUCED),
    ((0.4999, 0.9), vd.INCONCLUSIVE),  # reaches just below the band
    ((0.6, 1.0001), vd.INCONCLUSIVE),  # reaches just above the band
    ((0.25, 1.5), vd.INCONCLUSIVE),  # wider than the band
    ((0.1, 0.4999), vd.NOT_REPRODUCED),  # wholly below
    ((0.1, 0.5), vd.NOT_REPRODUCED),  # ends on the lower edge: holds no edge (sides.py)
    ((1.0001, 1.5), vd.NOT_REPRODUCED),  # wholly above
    ((1.0, 1.5), vd.NOT_REPRODUCED),  # starts on the upper edge: holds no edge
]


@pytest.mark.parametrize(("ci", "expected"), CASES)
def test_claim_verdict_boundaries(ci, expected):
    assert vd.claim_verdict(ci[0], ci[1], 0.75, 0.25) == expected


def test_no_claim():
    assert vd.claim_verdict(0.1, 0.2, None, 0.1) == vd.NO_CLAIM


def test_failed_validity_overrides_speed():
    assert vd.final_verdict(vd.REPRODUCED, ["correctness gate: differ"]) == (
        vd.INVALID,
        "correctness gate: differ",
    )
    assert vd.final_verdict(vd.INCONCLUSIVE, []) == (vd.INCONCLUSIVE, "")
