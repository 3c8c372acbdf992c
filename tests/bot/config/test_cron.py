"""bot.config.cron: the one cron type, checked strictly and evaluated by cronsim."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from bot.config import Cron
from tests.bot.config.test_loading import error_of


@pytest.mark.parametrize(
    ("cron", "problem"),
    [
        ("* * * *", "must have 5 fields (minute hour day-of-month month day-of-week), not 4"),
        ("0 0 * * * *", "must have 5 fields (minute hour day-of-month month day-of-week), not 6"),
        ("@daily", "must have 5 fields (minute hour day-of-month month day-of-week), not 1"),
        ("60 * * * *", "minute 60 is out of range 0-59"),
        ("* 24 * * *", "hour 24 is out of range 0-23"),
        ("* * 0 * *", "day of month 0 is out of range 1-31"),
        ("* * 32 * *", "day of month 32 is out of range 1-31"),
        ("* * * 13 *", "month 13 is out of range 1-12"),
        ("* * * * 8", "day of week 8 is out of range 0-7"),
        ("* * * FOO *", "'FOO' is not a valid month"),
        ("* * * * MON-FOO", "'FOO' is not a valid day of week"),
        ("MON * * * *", "'MON' is not a valid minute"),
        ("* * * JANUARY *", "'JANUARY' is not a valid month (expected *, n, a-b or a list)"),
        ("*/0 * * * *", "minute step 0 must be between 1 and 59"),
        ("*/60 * * * *", "minute step 60 must be between 1 and 59"),
        ("5/15 * * * *", "'5/15': a step needs a range or *, e.g. 5-59/n"),
        ("30-10 * * * *", "minute range '30-10' runs backwards"),
        ("* * * * FRI-MON", "day of week range 'FRI-MON' runs backwards"),
        ("1,,2 * * * *", "'' is not a valid minute (expected *, n, a-b or a list)"),
        ("-5 * * * *", "'-5' is not a valid minute (expected *, n, a-b or a list)"),
        ("* * L * *", "'L' is not a valid day of month (expected *, n, a-b or a list)"),
        ("* * * * 1#2", "'1#2' is not a valid day of week (expected *, n, a-b or a list)"),
        ("0 0 ? * *", "'?' is not a valid day of month (expected *, n, a-b or a list)"),
        ("0 0 30,31 2 *", "never fires: none of its months has any of its days"),
        ("0 0 31 4,6,9,11 *", "never fires: none of its months has any of its days"),
    ],
)
def test_a_bad_cron_expression_is_rejected(cron: str, problem: str) -> None:
    error = error_of(f"schedules: [{{cron: '{cron}', prompt: x}}]")

    assert str(error) == f".github/neo.yml: schedules[0].cron: {problem}"
    assert error.field == "schedules[0].cron"
    with pytest.raises(ValueError, match=rf"^{re.escape(problem)}$"):
        Cron(cron)


def firings(cron: str, start: datetime, count: int) -> list[datetime]:
    out: list[datetime] = []
    at: datetime | None = start
    for _ in range(count):
        assert at is not None
        at = Cron(cron).after(at)
        assert at is not None
        out.append(at)
    return out


def test_cron_fields_expand_to_their_values() -> None:
    # 1 January 2025 is a Wednesday: day 1 and a weekday, either of which fires.
    day = datetime(2025, 1, 1, tzinfo=UTC)
    expected = [day + timedelta(hours=h, minutes=m) for h in (9, 13, 17) for m in (0, 20, 40)]
    assert firings("*/20 9-17/4 1,15 jan-mar,DEC MON-FRI", day, 10) == [
        *expected,
        datetime(2025, 1, 2, 9, tzinfo=UTC),
    ]
    # After March, December: Monday the 1st.
    assert Cron("*/20 9-17/4 1,15 jan-mar,DEC MON-FRI").after(
        datetime(2025, 3, 31, 17, 40, tzinfo=UTC)
    ) == datetime(2025, 12, 1, 9, tzinfo=UTC)
    # Sunday is 0 and 7; 5-7 is Friday to Sunday. 2 June 2025 is a Monday.
    monday = datetime(2025, 6, 2, tzinfo=UTC)
    assert firings("0 0 * * 7", monday, 2) == firings("0 0 * * 0", monday, 2)
    assert [at.day for at in firings("0 0 * * 5-7", monday, 4)] == [6, 7, 8, 13]
    # A Feb 29 schedule fires in leap years, so it is allowed.
    assert Cron("0 0 29 2 *").after(monday) == datetime(2028, 2, 29, tzinfo=UTC)


@pytest.mark.parametrize(
    "cron",
    [
        "*/15 0-6,22-23 1,15 JAN-MAR,dec mon-fri",
        "0 6 * * 7",
        "0 0 29 2 *",
        "59 23 31 12 SUN-SAT",
        "0-59/7 */5 1-31/3 * 1,3,5",
        "0 0 13 * FRI",
    ],
)
def test_what_validation_accepts_the_scheduler_evaluates(cron: str) -> None:
    # The validator and cronsim (which decides when schedules fire) agree.
    after = Cron(cron).after(datetime(2025, 1, 1, tzinfo=UTC))

    assert after is not None
    assert after > datetime(2025, 1, 1, tzinfo=UTC)


# --- evaluation ------------------------------------------------------------------

MONDAY = datetime(2025, 6, 2, tzinfo=UTC)  # 00:00 on a Monday


def at(day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    """A time in the week of 2 June 2025; day 0 is Monday."""
    return MONDAY + timedelta(days=day, hours=hour, minutes=minute, seconds=second)


def test_cron_follows_debian_day_rules() -> None:
    # Both day fields restricted: a day matching either fires.
    either = Cron("0 0 13 * FRI")
    assert either.after(datetime(2025, 6, 5, tzinfo=UTC)) == datetime(2025, 6, 6, tzinfo=UTC)
    assert either.after(datetime(2025, 6, 6, tzinfo=UTC)) == datetime(2025, 6, 13, tzinfo=UTC)
    assert either.after(datetime(2025, 7, 12, tzinfo=UTC)) == datetime(2025, 7, 13, tzinfo=UTC)
    # A day field starting with * is unrestricted: both must match (Sunday, odd day).
    both = Cron("0 0 */2 * SUN")
    assert both.after(datetime(2025, 6, 1, tzinfo=UTC)) == datetime(2025, 6, 15, tzinfo=UTC)
    # Sunday is 0 and 7.
    assert Cron("0 0 * * 7").after(at(0)) == Cron("0 0 * * 0").after(at(0)) == at(6)
    # Feb 29 fires in leap years only.
    assert Cron("0 0 29 2 *").after(at(0)) == datetime(2028, 2, 29, tzinfo=UTC)


def test_cron_slots_are_inclusive_before_and_exclusive_after() -> None:
    cron = Cron("0 6 * * *")

    assert cron.latest(at(0, 6)) == at(0, 6)
    assert cron.latest(at(0, 5, 59, 59)) == at(-1, 6)
    assert cron.latest(at(0, 6) + timedelta(microseconds=500)) == at(0, 6)
    assert cron.after(at(0, 6)) == at(1, 6)
    assert cron.after(at(0, 6) + timedelta(microseconds=500)) == at(1, 6)
    assert cron.after(at(0, 5, 59, 59)) == at(0, 6)


def test_times_must_be_timezone_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        Cron("0 6 * * *").latest(datetime(2025, 6, 2))


def test_other_time_zones_are_read_as_the_same_instant() -> None:
    tokyo = datetime(2025, 6, 2, 15, 0, tzinfo=timezone(timedelta(hours=9)))
    assert Cron("0 6 * * *").latest(tokyo) == at(0, 6)


def test_a_bad_expression_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="minute 61 is out of range"):
        Cron("61 * * * *")
