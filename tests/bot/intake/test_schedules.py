"""bot.intake.schedules: when a schedule fires, under a fake clock; jitter; identity and keys."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.config import Cron, parse_repo_config
from bot.intake.schedules import (
    DEFAULT_MAX_JITTER,
    SCHEDULE_EVENT,
    Decision,
    decide,
    dedupe_key,
    dedupe_prefix,
    jitter,
    jitter_fraction,
    schedule_id,
    scheduled_request,
    slot_of_key,
)
from bot.jobs import JobKind, JobRequest, Thread, TriggerKind

MINUTE = timedelta(minutes=1)
TICK = timedelta(seconds=30)
MONDAY = datetime(2025, 6, 2, tzinfo=UTC)  # 00:00 on a Monday


def at(day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    """A time in the week of 2 June 2025; day 0 is Monday."""
    return MONDAY + timedelta(days=day, hours=hour, minutes=minute, seconds=second)


class Clock:
    """A scheduler's view of one schedule, stepped through fake time."""

    def __init__(self, cron: str, *, fraction: float, start: datetime) -> None:
        self.cron = Cron(cron)
        self.fraction = fraction
        self.now = start
        self.since = start
        self.last_slot: datetime | None = None
        self.fired: list[tuple[datetime, datetime]] = []  # (slot, when)

    def tick(self) -> Decision:
        decision = decide(
            self.cron,
            now=self.now,
            fraction=self.fraction,
            last_slot=self.last_slot,
            since=self.since,
        )
        if decision.slot is not None:
            self.fired.append((decision.slot, self.now))
            self.last_slot = decision.slot
        return decision

    def run_until(self, end: datetime, *, every_tick: bool = True) -> None:
        """Tick every 30 s until `end`; or, as the scheduler does, only once `wake_at` passed."""
        wake: datetime | None = None
        while self.now < end:
            if every_tick or wake is None or self.now >= wake:
                wake = self.tick().wake_at
            self.now += TICK


# --- firing ----------------------------------------------------------------------


def test_it_fires_on_time() -> None:
    cron = Cron("0 6 * * *")

    before = decide(cron, now=at(0, 5, 59, 59), fraction=0.0, last_slot=None, since=at(0))
    on_time = decide(cron, now=at(0, 6), fraction=0.0, last_slot=None, since=at(0))

    assert before == Decision(None, None, at(0, 6))
    assert on_time == Decision(at(0, 6), at(0, 6), at(1, 6))


def test_a_jittered_slot_fires_when_its_offset_has_passed() -> None:
    cron = Cron("0 6 * * *")
    # Half of the 5-minute window: due at 06:02:30.
    early = decide(cron, now=at(0, 6, 2, 29), fraction=0.5, last_slot=at(-1, 6), since=at(-9))
    due = decide(cron, now=at(0, 6, 2, 30), fraction=0.5, last_slot=at(-1, 6), since=at(-9))

    assert early == Decision(None, None, at(0, 6, 2, 30))
    assert due == Decision(at(0, 6), at(0, 6, 2, 30), at(1, 6))


@pytest.mark.parametrize(
    ("cron", "span", "every_tick", "expected"),
    [
        ("* * * * *", timedelta(hours=1), True, 60),  # jitter stays under the minute
        ("*/5 * * * *", timedelta(hours=3), True, 36),
        ("0,1 * * * *", timedelta(hours=3), True, 6),
        ("0 * * * *", timedelta(hours=6), True, 6),
        ("*/5 * * * *", timedelta(days=1), False, 288),
        ("0 6 * * MON-FRI", timedelta(days=14), False, 10),
        ("17 3 1,15 * *", timedelta(days=62), False, 4),  # 1 and 15 June, 1 and 15 July
    ],
)
def test_it_fires_once_per_slot_and_within_a_tick_of_its_due_time(
    cron: str, span: timedelta, every_tick: bool, expected: int
) -> None:
    clock = Clock(cron, fraction=0.73, start=at(0))

    # Past the end by the longest jitter, so the last slot's firing is in.
    clock.run_until(at(0) + span + DEFAULT_MAX_JITTER, every_tick=every_tick)

    slots = [slot for slot, _ in clock.fired if slot < at(0) + span]
    assert len(slots) == len(set(slots)) == expected
    assert slots == sorted(slots)
    for slot, when in clock.fired:
        nxt = clock.cron.after(slot)
        assert nxt is not None
        due = slot + jitter(0.73, slot, nxt, DEFAULT_MAX_JITTER)
        assert due <= when < due + TICK
        assert when < nxt + DEFAULT_MAX_JITTER


def test_after_downtime_the_latest_missed_slot_fires_once() -> None:
    clock = Clock("0 6 * * *", fraction=0.2, start=at(0, 5))
    clock.run_until(at(0, 7))
    assert [slot for slot, _ in clock.fired] == [at(0, 6)]

    # Down from Monday 07:00 to Thursday 12:00: three slots missed.
    clock.now = at(3, 12)
    clock.run_until(at(3, 14))

    assert [slot for slot, _ in clock.fired] == [at(0, 6), at(3, 6)]
    assert clock.fired[1][1] == at(3, 12)  # at once, on the first tick back
    clock.run_until(at(4, 7), every_tick=False)
    assert [slot for slot, _ in clock.fired] == [at(0, 6), at(3, 6), at(4, 6)]


def test_a_slot_missed_before_its_jitter_passed_fires_after_downtime() -> None:
    cron = Cron("0 6 * * *")
    # Down from 05:00 to 06:01, before the 06:04 due time: back at 06:10.
    decision = decide(cron, now=at(0, 6, 10), fraction=0.8, last_slot=at(-1, 6), since=at(-5))

    assert decision.slot == at(0, 6)
    assert decision.due_at == at(0, 6, 4)


def test_a_schedule_never_queued_waits_for_a_slot_due_after_it_was_seen() -> None:
    cron = Cron("0 6 * * *")

    # Seen at 12:00: this morning's slot is long past and does not run.
    seen = decide(cron, now=at(0, 12), fraction=0.0, last_slot=None, since=at(0, 12))
    # Seen at 06:01, before the slot's 06:02:30 due time: it runs.
    racing = decide(cron, now=at(0, 6, 3), fraction=0.5, last_slot=None, since=at(0, 6, 1))

    assert seen == Decision(None, None, at(1, 6))
    assert racing.slot == at(0, 6)


def test_a_slot_already_queued_is_not_queued_again() -> None:
    cron = Cron("*/10 * * * *")

    for second in range(0, 600, 30):
        now = at(0, 9, 0, second)
        decision = decide(cron, now=now, fraction=0.0, last_slot=at(0, 9), since=at(-1))
        assert decision.slot is None
    assert decide(cron, now=at(0, 9, 10), fraction=0.0, last_slot=at(0, 9), since=at(-1)).slot == (
        at(0, 9, 10)
    )


@pytest.mark.parametrize("cron", ["*/7 * * * *", "0,1 * * * *", "58 * * * *"])
def test_asking_only_at_wake_at_finds_every_firing(cron: str) -> None:
    every_tick = Clock(cron, fraction=0.37, start=at(0))
    every_tick.run_until(at(0, 3))
    # Jumping straight to each wake_at: the earliest moment anything can change.
    jumping = Clock(cron, fraction=0.37, start=at(0))
    asked = 0
    while jumping.now < at(0, 3):
        decision = jumping.tick()
        asked += 1
        assert decision.wake_at is not None
        assert decision.wake_at > jumping.now
        jumping.now = decision.wake_at

    assert jumping.fired[: len(every_tick.fired)] == [
        # The jumping clock fires at the due time itself, not the tick after it.
        (slot, slot + jitter(0.37, slot, jumping.cron.after(slot), DEFAULT_MAX_JITTER))
        for slot, _ in every_tick.fired
    ]
    assert asked <= 2 * len(jumping.fired) + 1


# --- jitter ----------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    cron=st.sampled_from(["* * * * *", "*/5 * * * *", "0,1 * * * *", "0 6 * * MON", "0 0 1 1 *"]),
    fraction=st.floats(min_value=0, max_value=1, exclude_max=True),
    minutes=st.integers(min_value=0, max_value=60 * 24 * 400),
    max_jitter=st.integers(min_value=0, max_value=3600),
)
def test_jitter_stays_under_its_bound_and_the_next_slot(
    cron: str, fraction: float, minutes: int, max_jitter: int
) -> None:
    parsed = Cron(cron)
    slot = parsed.after(at(0) + timedelta(minutes=minutes))
    assert slot is not None
    nxt = parsed.after(slot)
    assert nxt is not None

    offset = jitter(fraction, slot, nxt, timedelta(seconds=max_jitter))

    assert timedelta(0) <= offset
    assert offset < nxt - slot
    assert offset <= timedelta(seconds=max_jitter)
    assert offset == timedelta(seconds=int(offset.total_seconds()))


def test_jitter_is_stable_and_differs_by_repository_and_schedule() -> None:
    assert jitter_fraction("octo/hello", "#1") == jitter_fraction("Octo/Hello", "#1")
    assert jitter_fraction("octo/hello", "#1") != jitter_fraction("octo/hello", "#2")
    assert jitter_fraction("octo/hello", "#1") != jitter_fraction("octo/world", "#1")
    assert 0 <= jitter_fraction("octo/hello", "#1") < 1


def test_jitter_spreads_a_thousand_repositories_over_the_window() -> None:
    slot, nxt = at(0, 6), at(7, 6)
    offsets = [
        jitter(jitter_fraction(f"org-{n % 37}/repo-{n}", "deps"), slot, nxt, DEFAULT_MAX_JITTER)
        for n in range(1000)
    ]
    seconds = [int(offset.total_seconds()) for offset in offsets]
    window = int(DEFAULT_MAX_JITTER.total_seconds())

    assert min(seconds) >= 0
    assert max(seconds) < window
    # Every tenth of the window gets its share, give or take, and no second a crowd.
    tenths = Counter(second * 10 // window for second in seconds)
    assert sorted(tenths) == list(range(10))
    assert all(60 <= count <= 140 for count in tenths.values()), tenths
    assert max(Counter(seconds).values()) <= 12
    assert len(set(seconds)) >= 0.9 * window


def test_an_every_minute_schedule_is_jittered_within_its_minute() -> None:
    offsets = {
        jitter(jitter_fraction(f"o/r{n}", "#1"), at(0), at(0, 0, 1), DEFAULT_MAX_JITTER)
        for n in range(1000)
    }

    assert max(offsets) < MINUTE
    assert len(offsets) == 60


# --- identity and keys -------------------------------------------------------------

CONFIG = parse_repo_config(
    "schedules:\n"
    "  - {cron: '0 6 * * MON', prompt: Update the dependencies., name: 'deps: weekly'}\n"
    "  - {cron: '*/30 * * * *', prompt: Fix the lint.}\n"
    "  - {cron: '0 0 1 * *', prompt: Refresh the docs., name: '#2', branch: docs/refresh}\n"
)


def test_a_schedule_is_known_by_its_name_or_its_position() -> None:
    ids = [schedule_id(CONFIG, index) for index in range(3)]

    assert ids == ["deps%3A%20weekly", "#2", "%232"]
    assert len(set(ids)) == 3
    assert all(":" not in ident for ident in ids)


def test_dedupe_keys_sort_by_slot_and_give_it_back() -> None:
    prefix = dedupe_prefix("Octo/Hello", "#2")
    slots = [at(0, 9, 30), at(0, 10), at(1), at(30, 23, 30), datetime(2031, 1, 1, tzinfo=UTC)]
    keys = [dedupe_key("Octo/Hello", "#2", slot) for slot in slots]

    assert prefix == "schedule:octo/hello:#2:"
    assert keys[0] == "schedule:octo/hello:#2:20250602T0930Z"
    assert sorted(keys) == keys
    assert [slot_of_key(key, prefix) for key in keys] == slots
    assert slot_of_key(keys[0], dedupe_prefix("octo/hello", "#3")) is None
    assert slot_of_key(prefix + "garbage", prefix) is None
    # Another time zone names the same slot.
    assert dedupe_key("octo/hello", "#2", at(0, 9, 30).astimezone()) == keys[0]


def test_a_firing_becomes_a_run_request_on_the_schedules_branch() -> None:
    request = scheduled_request(
        repository="Octo/Hello",
        installation_id=7,
        config=CONFIG,
        index=0,
        slot=at(0, 6),
        author="neo[bot]",
    )

    assert request == JobRequest(
        kind=JobKind.TASK,
        thread=Thread("Octo/Hello", 0),
        installation_id=7,
        event=SCHEDULE_EVENT,
        trigger=TriggerKind(SCHEDULE_EVENT),
        trigger_id=int(at(0, 6).timestamp()),
        author="neo[bot]",
        author_association="NONE",
        instruction="Update the dependencies.",
        dedupe_key="schedule:octo/hello:deps%3A%20weekly:20250602T0600Z",
        delivery_id="schedule:octo/hello:deps%3A%20weekly:20250602T0600Z",
        branch="neo/schedule-deps-weekly",
    )
    third = scheduled_request(
        repository="octo/hello", installation_id=7, config=CONFIG, index=2, slot=at(0), author="b"
    )
    assert third.branch == "docs/refresh"
    assert third.instruction == "Refresh the docs."


def test_the_branch_survives_the_queue_and_old_rows_read_without_one() -> None:
    request = scheduled_request(
        repository="octo/hello", installation_id=7, config=CONFIG, index=1, slot=at(0), author="b"
    )
    stored = json.loads(json.dumps(request.to_json()))
    old = dict(stored)
    del old["branch"]

    assert JobRequest.from_json(stored) == request
    assert stored["branch"] == "neo/schedule-2"
    assert JobRequest.from_json(old).branch is None
