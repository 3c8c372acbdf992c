"""The spacing of one installation's mutating calls: a burst, then one an interval; the
urgent ones ahead of the rest (pure)."""

from __future__ import annotations

import pytest

from bot.github.spacing import MutationSpacer


class Clock:
    """A monotonic clock that only `sleep` and `advance` move."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def test_a_burst_goes_at_once_then_one_call_an_interval() -> None:
    clock = Clock()
    spacer = MutationSpacer(1.0, burst=3, clock=clock, sleep=clock.sleep)

    waits = [await spacer.wait() for _ in range(6)]

    assert waits == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]


async def test_the_burst_comes_back_one_call_an_interval() -> None:
    clock = Clock()
    spacer = MutationSpacer(1.0, burst=3, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        await spacer.wait()

    clock.advance(1.0)  # one call's room back
    assert [await spacer.wait(), await spacer.wait()] == [0.0, 1.0]
    clock.advance(60.0)  # a quiet minute fills the bucket, and no more
    assert [await spacer.wait() for _ in range(4)] == [0.0, 0.0, 0.0, 1.0]


async def test_over_any_stretch_no_more_than_the_burst_plus_one_a_second_start() -> None:
    clock = Clock()
    spacer = MutationSpacer(1.0, burst=3, clock=clock, sleep=clock.sleep)
    starts = []
    for step in range(200):
        clock.advance((step * 7919 % 13) / 10)  # irregular gaps, 0 to 1.2 s
        await spacer.wait()
        starts.append(clock.now)

    for first, start in enumerate(starts):
        within = [s for s in starts[first:] if s < start + 10.0]
        assert len(within) <= 3 + 10


async def test_a_burst_of_one_is_strict_spacing() -> None:
    clock = Clock()
    spacer = MutationSpacer(1.0, burst=1, clock=clock, sleep=clock.sleep)

    assert [await spacer.wait() for _ in range(3)] == [0.0, 1.0, 1.0]


def test_a_burst_below_one_call_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one call"):
        MutationSpacer(burst=0)
    with pytest.raises(ValueError, match="at least one call"):
        MutationSpacer(urgent_burst=0)


async def test_an_urgent_call_does_not_wait_behind_the_others_and_they_pay_for_it() -> None:
    clock = Frozen()
    spacer = MutationSpacer(1.0, burst=3, urgent_burst=2, clock=clock, sleep=clock.sleep)
    # Five calls at once: three go, two are booked one and two seconds ahead.
    assert [await spacer.wait() for _ in range(5)] == [0.0, 0.0, 0.0, 1.0, 2.0]

    urgent = [await spacer.wait(urgent=True) for _ in range(3)]
    after = await spacer.wait()

    # The urgent ones: a burst of their own, then one a second.
    assert urgent == [0.0, 0.0, 1.0]
    # The next ordinary call would have waited 3 s; it waits a second more for each.
    assert after == 3.0 + 3


async def test_over_any_stretch_no_more_than_both_bursts_plus_one_a_second_start() -> None:
    clock = Clock()
    spacer = MutationSpacer(1.0, burst=3, urgent_burst=2, clock=clock, sleep=clock.sleep)
    starts = []
    for step in range(300):
        clock.advance((step * 7919 % 13) / 20)  # irregular gaps, 0 to 0.6 s
        await spacer.wait(urgent=step % 3 == 0)
        starts.append(clock.now)

    for first, start in enumerate(starts):
        within = [s for s in starts[first:] if s < start + 10.0]
        assert len(within) <= 3 + 2 + 10


async def test_urgent_calls_alone_are_spaced_by_their_own_bucket() -> None:
    clock = Clock()
    spacer = MutationSpacer(1.0, burst=3, urgent_burst=2, clock=clock, sleep=clock.sleep)

    assert [await spacer.wait(urgent=True) for _ in range(4)] == [0.0, 0.0, 1.0, 1.0]


class Frozen(Clock):
    """A clock that sleeping does not move: what each caller would wait, all booked at once."""

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
