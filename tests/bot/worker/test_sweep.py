"""When a worker may sweep: at once when it starts; after the queue failed it, only once it
has answered for a whole lease."""

from __future__ import annotations

from bot.worker.sweep import SweepGate


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_worker_that_starts_sweeps_at_once() -> None:
    gate = SweepGate(Clock(), lease=60.0)
    assert gate.open()
    gate.answered()
    assert gate.open()


def test_after_a_failure_only_a_lease_of_answers_opens_it_again() -> None:
    clock = Clock()
    gate = SweepGate(clock, lease=60.0)
    gate.unanswered()
    clock.now += 600
    assert not gate.open()  # still away: nobody could renew a lease
    gate.answered()
    clock.now += 59
    gate.answered()  # answers go on: the lease counts from the first
    assert not gate.open()
    clock.now += 1
    assert gate.open()
    gate.unanswered()  # away again: the count starts over
    gate.answered()
    clock.now += 30
    assert not gate.open()
