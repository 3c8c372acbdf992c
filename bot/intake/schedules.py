"""When a schedule fires: a pure core over `bot.config.Cron`, for `bot.intake.scheduler`.

No I/O and no clock: time comes in as arguments, always timezone-aware. Slots, jitter
and downtime: docs/architecture.md, "Schedules".
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final
from urllib.parse import quote

from bot.config import Cron, RepoConfig
from bot.jobs import JobKind, JobRequest, Thread, TriggerKind

__all__ = [
    "DEFAULT_MAX_JITTER",
    "SCHEDULE_EVENT",
    "Decision",
    "decide",
    "dedupe_key",
    "dedupe_prefix",
    "jitter",
    "jitter_fraction",
    "schedule_id",
    "scheduled_request",
    "slot_of_key",
]

# The spread of one slot's firings across repositories. Long enough that a
# thousand repositories on one cron expression trickle into the queue, short
# enough that nobody wonders why a 06:00 schedule ran at 06:04.
DEFAULT_MAX_JITTER: Final = timedelta(minutes=5)
# The event of a scheduled job's request, beside "issue_comment.created" & co.
SCHEDULE_EVENT: Final = TriggerKind.SCHEDULE.value

_SECOND = timedelta(seconds=1)
# Slots in dedupe keys: fixed width and no ':' (the keys' separator), so the
# greatest key of a schedule is its latest slot.
_SLOT_FORMAT = "%Y%m%dT%H%MZ"


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do about one schedule now."""

    # The slot to queue now; None: nothing.
    slot: datetime | None
    # When `slot` fell due (the slot plus its jitter).
    due_at: datetime | None
    # No other slot falls due before this; None: none ever will.
    wake_at: datetime | None


def jitter_fraction(repository: str, schedule: str) -> float:
    """Where in the jitter window this (repository, schedule) fires: [0, 1), stable."""
    key = f"{repository.lower()}\n{schedule}".encode()
    digest = hashlib.blake2b(key, digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def jitter(
    fraction: float, slot: datetime, next_slot: datetime | None, max_jitter: timedelta
) -> timedelta:
    """How long after `slot` it falls due: under `max_jitter`, and under the gap to the next."""
    window = max_jitter if next_slot is None else min(max_jitter, next_slot - slot)
    return timedelta(seconds=int(fraction * window.total_seconds()))


def decide(
    cron: Cron,
    *,
    now: datetime,
    fraction: float,
    last_slot: datetime | None,
    since: datetime,
    max_jitter: timedelta = DEFAULT_MAX_JITTER,
) -> Decision:
    """Which slot of `cron` to queue at `now`, given the last slot queued (None: never).

    A schedule never queued fires only for a slot that fell due after `since`,
    when it was first seen. At most one slot: the latest due one.
    """
    latest = cron.latest(now)
    if latest is None:
        return Decision(None, None, cron.after(now))
    following = cron.after(latest)
    latest_due = latest + jitter(fraction, latest, following, max_jitter)
    slot: datetime | None
    due: datetime | None
    if latest_due <= now:
        slot, due = latest, latest_due
        # The next slot falls due at or after its own time.
        wake = following
    else:
        # The latest slot is not due yet, so the one before it is (its jitter
        # is under the gap between the two).
        slot = cron.latest(latest - _SECOND)
        due = None if slot is None else slot + jitter(fraction, slot, latest, max_jitter)
        wake = latest_due
    if slot is None or due is None:
        return Decision(None, None, wake)
    if (last_slot is not None and slot <= last_slot) or (last_slot is None and due <= since):
        return Decision(None, None, wake)
    return Decision(slot, due, wake)


# --- identity -------------------------------------------------------------------


def schedule_id(config: RepoConfig, index: int) -> str:
    """Who `config.schedules[index]` is within its repository: its name, else its position.

    Quoted, so it holds no ':' and a name never reads as a position ("#2").
    """
    name = config.schedules[index].name
    return quote(name, safe="") if name is not None else f"#{index + 1}"


def dedupe_prefix(repository: str, schedule: str) -> str:
    """What every dedupe key of this (repository, schedule) starts with."""
    return f"schedule:{repository.lower()}:{schedule}:"


def dedupe_key(repository: str, schedule: str, slot: datetime) -> str:
    """One job per repository, schedule and slot, however many schedulers run."""
    return dedupe_prefix(repository, schedule) + slot.astimezone(UTC).strftime(_SLOT_FORMAT)


def slot_of_key(key: str, prefix: str) -> datetime | None:
    """The slot a dedupe key made by `dedupe_key` names; None for any other key."""
    if not key.startswith(prefix):
        return None
    try:
        return datetime.strptime(key[len(prefix) :], _SLOT_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def scheduled_request(
    *,
    repository: str,
    installation_id: int,
    config: RepoConfig,
    index: int,
    slot: datetime,
    author: str,
) -> JobRequest:
    """The job a firing queues: the schedule's prompt, on the schedule's branch.

    It belongs to no issue or pull request: its thread is number 0, so one
    repository's scheduled jobs run one at a time. `trigger_id` is the slot
    as unix seconds; `author` is the App's bot login (nobody asked: the
    default branch's `.github/neo.yml` did).
    """
    key = dedupe_key(repository, schedule_id(config, index), slot)
    return JobRequest(
        kind=JobKind.TASK,
        thread=Thread(repository=repository, number=0),
        installation_id=installation_id,
        event=SCHEDULE_EVENT,
        trigger=TriggerKind.SCHEDULE,
        trigger_id=int(slot.timestamp()),
        author=author,
        author_association="NONE",
        instruction=config.schedules[index].prompt,
        dedupe_key=key,
        delivery_id=key,
        branch=config.schedule_branch(index),
    )
