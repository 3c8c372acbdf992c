"""Cron expressions of `schedules`: checked strictly, evaluated by cronsim.

`Cron` is the one cron type: validation (the portable subset, with a precise
message) and evaluation (`latest`, `after`, by Debian cron's rules) cannot
disagree because they are one object. Pure: time comes in as arguments.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cronsim import CronSim, CronSimError

__all__ = ["Cron"]

_MONTHS = {name.upper(): number for number, name in enumerate(calendar.month_abbr) if name}
_WEEKDAYS = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
_ITEM = re.compile(
    r"(?:(?P<star>\*)|(?P<low>[0-9]{1,2}|[A-Za-z]{3})(?:-(?P<high>[0-9]{1,2}|[A-Za-z]{3}))?)"
    r"(?:/(?P<step>[0-9]{1,2}))?"
)
_SECOND = timedelta(seconds=1)
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
# February can have 29 days; a schedule for Feb 29 fires in leap years.
_DAYS_IN_MONTH = {month: calendar.monthrange(2024, month)[1] for month in range(1, 13)}


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int]


_FIELDS = (
    _Field("minute", 0, 59, {}),
    _Field("hour", 0, 23, {}),
    _Field("day of month", 1, 31, {}),
    _Field("month", 1, 12, _MONTHS),
    # 7 is Sunday too, as in every cron.
    _Field("day of week", 0, 7, _WEEKDAYS),
)


@dataclass(frozen=True, slots=True)
class Cron:
    """A standard 5-field cron expression, in UTC; ValueError says what is wrong with it.

    Fields: minute hour day-of-month month day-of-week. Each is `*`, a value,
    a range `a-b`, either with a step `/n`, or a comma-separated list of those;
    months and weekdays also take names (JAN, MON). Nicknames such as `@daily`
    and the non-standard `L`, `W`, `#` and `?` are refused: cronsim accepts
    some of them (and `5/15`), which crons read differently, and says only
    "Bad minute". When both day fields are restricted, a day matching either
    fires; otherwise both must match.
    """

    expression: str

    def __post_init__(self) -> None:
        _check(self.expression)

    def latest(self, at: datetime) -> datetime | None:
        """The last slot at or before `at`; None if there is none in 50 years."""
        return self._step(_whole_second(at) + _SECOND, reverse=True)

    def after(self, at: datetime) -> datetime | None:
        """The first slot after `at`; None if there is none in 50 years."""
        return self._step(_whole_second(at), reverse=False)

    def _step(self, start: datetime, *, reverse: bool) -> datetime | None:
        # cronsim first moves one second from `start`, then searches.
        try:
            return next(CronSim(self.expression, start, reverse=reverse))
        except StopIteration:
            return None


def _check(expression: str) -> None:
    fields = expression.split()
    if len(fields) != len(_FIELDS):
        raise ValueError(
            f"must have 5 fields (minute hour day-of-month month day-of-week), not {len(fields)}"
        )
    _, _, days, months, _ = (
        _values(text, spec) for text, spec in zip(fields, _FIELDS, strict=True)
    )
    any_weekday = fields[4].startswith("*")
    if any_weekday and not any(day <= _DAYS_IN_MONTH[month] for day in days for month in months):
        raise ValueError("never fires: none of its months has any of its days")
    try:
        CronSim(expression, _EPOCH)
    except CronSimError as error:  # the two disagree: a bug, but never a silent schedule
        raise ValueError(f"cannot be evaluated: {str(error).lower()}") from None


def _value(text: str, spec: _Field) -> int:
    if text.isdigit():
        value = int(text)
    elif text.upper() in spec.names:
        value = spec.names[text.upper()]
    else:
        raise ValueError(f"{text!r} is not a valid {spec.name}")
    if not spec.low <= value <= spec.high:
        raise ValueError(f"{spec.name} {value} is out of range {spec.low}-{spec.high}")
    return value


def _values(text: str, spec: _Field) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        match = _ITEM.fullmatch(item)
        if match is None:
            raise ValueError(f"{item!r} is not a valid {spec.name} (expected *, n, a-b or a list)")
        if match["star"]:
            low, high = spec.low, spec.high
        else:
            low = _value(match["low"], spec)
            high = low if match["high"] is None else _value(match["high"], spec)
            if match["high"] is None and match["step"] is not None:
                # "5/15" means different things to different crons.
                raise ValueError(f"{item!r}: a step needs a range or *, e.g. {low}-{spec.high}/n")
            if high < low:
                raise ValueError(f"{spec.name} range {item!r} runs backwards")
        step = 1
        if match["step"] is not None:
            step = int(match["step"])
            if not 1 <= step <= spec.high - spec.low:
                raise ValueError(
                    f"{spec.name} step {step} must be between 1 and {spec.high - spec.low}"
                )
        values.update(range(low, high + 1, step))
    return frozenset(values)


def _whole_second(at: datetime) -> datetime:
    if at.tzinfo is None:
        raise ValueError("schedules need timezone-aware datetimes")
    return at.astimezone(UTC).replace(microsecond=0)
