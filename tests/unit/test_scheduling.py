"""The suite's own scheduler (tests/conftest.py): long tests first, and a worker holding one is
given a short one to hold next, never another long one."""

from __future__ import annotations

from types import SimpleNamespace

from conftest import LONGEST_FIRST, LongestFirstScheduling

LONG = [f"{module}::test_long" for module in LONGEST_FIRST[:3]]
SHORT = [f"tests/unit/test_short.py::test_{i}" for i in range(3)]
COLLECTION = LONG + SHORT  # as tests/conftest.py sorts it: longest first


# The two settings the scheduler reads from pytest's config, as `pytest -n 2` with the suite's
# --no-loadscope-reorder gives them (this test's own run may have no workers: -n 0)
TWO_WORKERS = SimpleNamespace(
    getvalue={"tx": ["2*popen"]}.get, option=SimpleNamespace(loadscopereorder=False)
)


class Worker:
    """What the scheduler calls on pytest-xdist's WorkerController."""

    def __init__(self, name: str):
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.held: list[str] = []

    def send_runtest_some(self, indices):
        self.held += [COLLECTION[i] for i in indices]

    def shutdown(self):
        self.shutting_down = True


def test_a_worker_holding_a_long_test_is_given_a_short_one_and_the_next_long_one_waits():
    scheduler = LongestFirstScheduling(TWO_WORKERS)
    a, b = Worker("gw0"), Worker("gw1")
    for worker in (a, b):
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, COLLECTION)
    scheduler.schedule()
    # xdist's loadgroup gives a the third long test to hold behind the first
    assert (a.held, b.held) == ([LONG[0], SHORT[0]], [LONG[1], SHORT[1]])

    scheduler.mark_test_complete(b, COLLECTION.index(LONG[1]))
    assert b.held[2:] == [LONG[2]]  # to the first worker free of a long test
    scheduler.mark_test_complete(b, COLLECTION.index(SHORT[1]))
    assert b.held[3:] == [SHORT[2]] and a.held == [LONG[0], SHORT[0]]
