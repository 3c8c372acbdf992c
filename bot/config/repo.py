"""Per-repository settings: `.github/neo.yml`, parsed and validated as a pure function.

The worker fetches the file from the default branch (a pull request cannot
change it) and hands the text to `parse_repo_config`. Anything wrong with it
becomes one `RepoConfigError` line, which `render_config_error` turns into the
one comment Neo posts instead of running. `reference_markdown` renders the
user-facing reference from the same model, so the docs cannot drift from it:
`uv run python -m bot.config.repo > docs/configuration.md`.
"""

from __future__ import annotations

import calendar
import contextlib
import difflib
import json
import re
import sys
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

import annotated_types
import yaml
from cronsim import CronSim, CronSimError
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from bot.github.markers import CONFIG_ERROR_MARKER
from runner.errors import ConfigError
from runner.llm.types import Effort
from runner.sandbox.image import image_problem

__all__ = [
    "CONFIG_ERROR_MARKER",
    "CONFIG_PATH",
    "EXAMPLE_YAML",
    "MAX_CONFIG_BYTES",
    "REFERENCE_PATH",
    "CronSpec",
    "Permission",
    "Provider",
    "RepoConfig",
    "RepoConfigError",
    "Schedule",
    "parse_cron",
    "parse_repo_config",
    "reference_markdown",
    "render_config_error",
]

CONFIG_PATH = ".github/neo.yml"
# Where the generated reference lives in Neo's own repository.
REFERENCE_PATH = "docs/configuration.md"
# A settings file is a few hundred bytes; the cap bounds parsing time and memory.
MAX_CONFIG_BYTES = 64 * 1024
# Bounds on the parsed document. Aliases can make a small file expand to
# billions of values ("billion laughs"); nesting deeper than a few levels is
# never a valid config and would otherwise recurse in the YAML composer.
_MAX_DEPTH = 32
_MAX_VALUES = 100_000
_MAX_SCHEDULES = 20

Provider = Literal["anthropic", "openai", "chat-completions", "openrouter", "google"]
Permission = Literal["admin", "maintain", "write", "triage", "read"]


# --- errors -----------------------------------------------------------------


class RepoConfigError(ConfigError):
    """An unusable `.github/neo.yml`; `str()` is one line: file, field or line, problem."""

    def __init__(
        self,
        message: str,
        *,
        source: str,
        problem: str,
        field: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.source = source
        self.problem = problem
        self.field = field  # dotted path, e.g. "schedules[0].cron"; None for the whole file
        self.line = line  # 1-based, when the problem is in the YAML itself


# --- cron -------------------------------------------------------------------

_MONTHS = {name.upper(): number for number, name in enumerate(calendar.month_abbr) if name}
_WEEKDAYS = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
_CRON_ITEM = re.compile(
    r"(?:(?P<star>\*)|(?P<low>[0-9]{1,2}|[A-Za-z]{3})(?:-(?P<high>[0-9]{1,2}|[A-Za-z]{3}))?)"
    r"(?:/(?P<step>[0-9]{1,2}))?"
)


@dataclass(frozen=True, slots=True)
class _CronField:
    name: str
    low: int
    high: int
    names: dict[str, int]


_CRON_FIELDS = (
    _CronField("minute", 0, 59, {}),
    _CronField("hour", 0, 23, {}),
    _CronField("day of month", 1, 31, {}),
    _CronField("month", 1, 12, _MONTHS),
    # 7 is Sunday too, as in every cron.
    _CronField("day of week", 0, 7, _WEEKDAYS),
)
# February can have 29 days; a schedule for Feb 29 fires in leap years.
_DAYS_IN_MONTH = {month: calendar.monthrange(2024, month)[1] for month in range(1, 13)}
_CRON_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class CronSpec:
    """A parsed 5-field cron expression: the values each field allows.

    As in Vixie cron, when both day fields are restricted (neither starts with
    `*`) a day matches if either does; otherwise both must. When a schedule
    fires is cronsim's to say (`bot.intake.schedules`); this is what validation found.
    """

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 is Sunday
    any_day: bool
    any_weekday: bool


def _cron_value(text: str, spec: _CronField) -> int:
    if text.isdigit():
        value = int(text)
    elif text.upper() in spec.names:
        value = spec.names[text.upper()]
    else:
        raise ValueError(f"{text!r} is not a valid {spec.name}")
    if not spec.low <= value <= spec.high:
        raise ValueError(f"{spec.name} {value} is out of range {spec.low}-{spec.high}")
    return value


def _cron_field(text: str, spec: _CronField) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        match = _CRON_ITEM.fullmatch(item)
        if match is None:
            raise ValueError(f"{item!r} is not a valid {spec.name} (expected *, n, a-b or a list)")
        if match["star"]:
            low, high = spec.low, spec.high
        else:
            low = _cron_value(match["low"], spec)
            high = low if match["high"] is None else _cron_value(match["high"], spec)
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


def parse_cron(expression: str) -> CronSpec:
    """Parse a standard 5-field cron expression; ValueError says what is wrong.

    Fields: minute hour day-of-month month day-of-week. Each is `*`, a value,
    a range `a-b`, either with a step `/n`, or a comma-separated list of those;
    months and weekdays also take names (JAN, MON). Nicknames such as
    `@daily` and the non-standard `L`, `W`, `#` and `?` are not accepted.

    This checks the portable subset and says precisely what is wrong (cronsim
    says "Bad minute", and accepts `L`, `#` or `5/15`); cronsim, which decides
    when schedules fire, must then accept the expression too.
    """
    fields = expression.split()
    if len(fields) != len(_CRON_FIELDS):
        raise ValueError(
            f"must have 5 fields (minute hour day-of-month month day-of-week), not {len(fields)}"
        )
    minutes, hours, days, months, weekdays = (
        _cron_field(text, spec) for text, spec in zip(fields, _CRON_FIELDS, strict=True)
    )
    weekdays = frozenset(day % 7 for day in weekdays)
    any_day = fields[2].startswith("*")
    any_weekday = fields[4].startswith("*")
    if any_weekday and not any(day <= _DAYS_IN_MONTH[month] for day in days for month in months):
        raise ValueError("never fires: none of its months has any of its days")
    try:
        CronSim(expression, _CRON_EPOCH)
    except CronSimError as error:  # the two disagree: a bug, but never a silent schedule
        raise ValueError(f"cannot be evaluated: {str(error).lower()}") from None
    return CronSpec(minutes, hours, days, months, weekdays, any_day, any_weekday)


# --- git names --------------------------------------------------------------

_REF_FORBIDDEN = frozenset(" ~^:?*[\\")


def _ref_problem(name: str) -> str | None:
    """Why `name` is not a safe branch name (git check-ref-format, and no option look-alike)."""
    bad = sorted({c for c in name if c in _REF_FORBIDDEN or not " " < c < "\x7f"})
    if bad:
        shown = ", ".join("space" if c == " " else repr(c) for c in bad)
        return f"must not contain {shown}"
    if name.startswith("-"):
        return "must not start with '-'"
    if name.startswith("/"):
        return "must not start with '/'"
    if ".." in name:
        return "must not contain '..'"
    if "@{" in name or name == "@":
        return "must not contain '@{' or be '@'"
    if "//" in name:
        return "must not contain '//'"
    if name.endswith(("/", ".")):
        return "must not end with '/' or '.'"
    for part in name.split("/"):
        if part.startswith("."):
            return "no part between slashes may start with '.'"
        if part.endswith(".lock"):
            return "no part between slashes may end with '.lock'"
    return None


def _branch_name(value: str) -> str:
    problem = _ref_problem(value)
    if problem:
        raise ValueError(f"not a valid branch name: {problem}")
    return value


# --- the model --------------------------------------------------------------

_Text = Annotated[str, Field(min_length=1, max_length=200)]
_BotLogin = Annotated[str, Field(pattern=r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")]
_Command = Annotated[str, Field(min_length=1)]


class _Strict(BaseModel):
    # Numbers and switches are strict so `max_turns: "100"` or `draft: 1` is
    # a mistake reported, not a guess; YAML already types them.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Schedule(_Strict):
    """One scheduled maintenance job."""

    cron: str = Field(
        description=(
            "When to run: a standard 5-field cron expression (minute hour day-of-month month "
            "day-of-week), in UTC. Ranges, steps, lists and names such as `MON` or `JAN` work; "
            "`@daily`-style nicknames do not."
        ),
    )
    prompt: str = Field(
        min_length=1,
        description="What Neo should do, as you would write it after `@neo`.",
    )
    branch: str | None = Field(
        default=None,
        max_length=200,
        description=(
            "The branch the job works on; its open pull request is updated on each run "
            "instead of a new one being opened. Unset: `<branch_prefix>schedule-<name>`, "
            "the name in lower case with anything but letters and digits as `-` "
            "(e.g. `neo/schedule-weekly-deps`), or `<branch_prefix>schedule-<n>` for the "
            "n-th schedule, counting from 1, when it has no name. No two schedules may "
            "share a branch."
        ),
    )
    name: _Text | None = Field(
        default=None,
        description=(
            "A label for the schedule in reports; unique within the file. It also tells "
            "Neo which schedule is which when the file changes: an unnamed one is known "
            "by its position."
        ),
    )

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        parse_cron(value)
        return " ".join(value.split())

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: str | None) -> str | None:
        return None if value is None else _branch_name(value)

    @property
    def spec(self) -> CronSpec:
        """The parsed `cron` expression."""
        return parse_cron(self.cron)


class RepoConfig(_Strict):
    """The settings in `.github/neo.yml`. Every field is optional."""

    provider: Provider = Field(
        default="anthropic",
        description="The model provider. Its API key is the service's, never the repository's.",
    )
    model: _Text | None = Field(
        default=None,
        description="The model name, e.g. `claude-sonnet-4-5`. Unset: the service's default.",
    )
    max_turns: int = Field(
        default=100,
        ge=1,
        le=500,
        strict=True,
        description="The most model turns one run may take before it stops.",
    )
    time_limit: int = Field(
        default=30,
        ge=1,
        le=240,
        strict=True,
        description="Minutes one run may take before it is stopped.",
    )
    max_cost_usd: float | None = Field(
        default=None,
        gt=0,
        le=1_000,
        allow_inf_nan=False,
        strict=True,
        description=(
            "The most, in US dollars, the model calls of one run may cost. The call that"
            " would pass it is not made; the work so far becomes an incomplete draft pull"
            " request. Unset: no limit."
        ),
    )
    thinking: bool = Field(
        default=True,
        strict=True,
        description=(
            "Whether the model thinks before it answers (extended thinking), on models that"
            " can. `false` is cheaper and faster, and weaker on hard tasks."
        ),
    )
    effort: Effort = Field(
        default="medium",
        description=(
            "How hard the model thinks when `thinking` is on: `low`, `medium` or `high`."
            " Higher costs more tokens."
        ),
    )
    setup: tuple[_Command, ...] = Field(
        default=(),
        description=(
            "Shell commands run in the sandbox, in order, before the agent starts "
            "(e.g. `pip install -e .`). A failing command fails the run."
        ),
    )
    setup_network: bool = Field(
        default=False,
        strict=True,
        description=(
            "Whether the setup commands get network access (to install dependencies). "
            "The agent's own commands never do."
        ),
    )
    sandbox_image: _Text | None = Field(
        default=None,
        description=(
            "The container image jobs run in, a Docker image reference such as "
            "`ghcr.io/acme/sandbox:1.2`; it must already be on the service's host, as Neo "
            "never pulls one. Unset: the service's default image."
        ),
    )
    trigger_label: str = Field(
        default="neo",
        min_length=1,
        max_length=50,
        description="Adding this label to an issue or pull request asks Neo to work on it.",
    )
    allowed_users: tuple[Permission, ...] = Field(
        default=("admin", "maintain", "write"),
        min_length=1,
        description=(
            "Who may trigger a run, by their permission on the repository: any of "
            "`admin`, `maintain`, `write`, `triage`, `read`."
        ),
    )
    allowed_bots: tuple[_BotLogin, ...] = Field(
        default=(),
        description=(
            "Bot logins whose mentions may trigger a run, e.g. `renovate[bot]`. "
            "Bots trigger nothing unless listed; Neo itself never does."
        ),
    )
    branch_prefix: str = Field(
        default="neo/",
        min_length=1,
        max_length=100,
        description="Prefix of the branches Neo creates, e.g. `neo/issue-12`.",
    )
    draft: bool = Field(
        default=True,
        strict=True,
        description="Whether Neo opens its pull requests as drafts.",
    )
    allow_workflow_edits: bool = Field(
        default=False,
        strict=True,
        description=(
            "Whether Neo may push changes to `.github/workflows/`. When false, such "
            "changes are left out and the report says why."
        ),
    )
    schedules: tuple[Schedule, ...] = Field(
        default=(),
        max_length=_MAX_SCHEDULES,
        description=(
            f"Maintenance jobs run on a schedule, at most {_MAX_SCHEDULES}; "
            "see [Schedules](#schedules)."
        ),
    )

    @field_validator("trigger_label")
    @classmethod
    def _label(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("sandbox_image")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        problem = None if value is None else image_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("branch_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        # The prefix is checked with a typical name appended, as git will see it.
        problem = _ref_problem(value + "issue-1")
        if problem:
            raise ValueError(f"not a safe branch prefix: {problem}")
        return value

    @field_validator("schedules")
    @classmethod
    def _distinct_schedules(
        cls, value: tuple[Schedule, ...], info: ValidationInfo
    ) -> tuple[Schedule, ...]:
        names = [schedule.name for schedule in value if schedule.name is not None]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"the name {name!r} is used by more than one schedule")
        prefix = info.data.get("branch_prefix")
        if prefix is None:  # itself invalid, and reported as such
            return value
        # Two schedules on one branch would take turns rewriting one pull request.
        seen: dict[str, int] = {}
        for index, schedule in enumerate(value):
            branch = _schedule_branch(prefix, schedule, index)
            if branch in seen:
                raise ValueError(
                    f"schedules {seen[branch] + 1} and {index + 1} both work on branch "
                    f"{branch!r}; give one a branch or another name"
                )
            seen[branch] = index
        return value

    def schedule_branch(self, index: int) -> str:
        """The branch `schedules[index]` works on: its own, or one derived from its name."""
        return _schedule_branch(self.branch_prefix, self.schedules[index], index)


_SLUG_LENGTH = 60


def _schedule_branch(prefix: str, schedule: Schedule, index: int) -> str:
    if schedule.branch is not None:
        return schedule.branch
    # Letters and digits only: whatever the name holds, the branch is a valid ref.
    slug = re.sub(r"[^a-z0-9]+", "-", (schedule.name or "").lower())
    slug = slug[:_SLUG_LENGTH].strip("-") or str(index + 1)
    return f"{prefix}schedule-{slug}"


# --- parsing ----------------------------------------------------------------


def _yaml_line(error: yaml.YAMLError) -> int | None:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    return None if mark is None else int(mark.line) + 1


def _events(text: str) -> Iterable[yaml.Event]:
    """The document's parser events, from libyaml when it is there (ten times faster).

    A syntax error is reported by the pure-Python parser, whose messages are
    the ones `yaml.safe_load` gives, whether or not libyaml is installed.
    """
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        with contextlib.suppress(yaml.YAMLError):
            return list(yaml.parse(text, Loader=fast))
    return yaml.parse(text, Loader=yaml.SafeLoader)


@dataclass(slots=True)
class _Node:
    """An open mapping or sequence while events stream past."""

    anchor: str | None
    keys: set[str] | None  # a mapping's keys so far; None for a sequence
    size: int = 1  # values once aliases are expanded, itself included
    children: int = 0


def _check_shape(text: str, source: str) -> None:
    """Reject what would make `yaml.safe_load` or validation blow up, from parser events.

    Counts the values the document expands to (aliases included), bounds the
    nesting, and rejects recursive aliases and duplicate keys, which the loader
    would silently resolve to the last value.
    """

    def fail(problem: str, event: yaml.Event) -> RepoConfigError:
        mark = event.start_mark  # always set by the parser
        line = None if mark is None else int(mark.line) + 1
        where = "" if line is None else f"line {line}: "
        return RepoConfigError(
            f"{source}: {where}{problem}", source=source, problem=problem, line=line
        )

    stack: list[_Node] = []
    sizes: dict[str, int] = {}  # finished anchors
    for event in _events(text):
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            if len(stack) >= _MAX_DEPTH:
                raise fail(f"nested more than {_MAX_DEPTH} levels deep", event)
            mapping = isinstance(event, yaml.MappingStartEvent)
            stack.append(_Node(event.anchor, set() if mapping else None))
            continue
        if isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            node = stack.pop()
            size = node.size
            if node.anchor is not None:
                sizes[node.anchor] = size
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in sizes:
                if any(node.anchor == event.anchor for node in stack):
                    raise fail(f"alias *{event.anchor} refers to itself", event)
                raise fail(f"alias *{event.anchor} has no anchor before it", event)
            size = sizes[event.anchor]
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor is not None:
                sizes[event.anchor] = size
        else:
            continue  # stream and document boundaries
        if not stack:
            continue
        parent = stack[-1]
        keys = parent.keys if parent.children % 2 == 0 else None  # None: not a key
        # "<<" merges another mapping in; its keys may be overridden.
        if keys is not None and isinstance(event, yaml.ScalarEvent) and event.value != "<<":
            if event.value in keys:
                raise fail(f"duplicate key {event.value!r}", event)
            keys.add(event.value)
        parent.children += 1
        parent.size += size
        if parent.size > _MAX_VALUES:
            raise fail(f"expands to more than {_MAX_VALUES} values (aliases?)", event)


@dataclass(frozen=True, slots=True)
class _Unreadable:
    """A scalar YAML reads but no setting can hold, left for `_check_values` to report
    at its field: the constructors know the node but not where it is."""

    text: str  # as written, shortened
    problem: str


def _shorten(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Loader(yaml.SafeLoader):
    """`yaml.safe_load`'s loader, but no scalar can raise outside YAMLError.

    Python refuses to convert an integer of more than 4300 digits (ValueError)
    and datetime a date such as 2001-02-30; binary data and sets are never a
    setting, and a set would lose the order of `setup`.
    """


_Constructor = typing.Callable[[yaml.SafeLoader, yaml.Node], object]


def _guarded(
    construct: typing.Callable[[yaml.SafeLoader, yaml.ScalarNode], object],
    problem: typing.Callable[[str], str],
) -> _Constructor:
    def run(loader: yaml.SafeLoader, node: yaml.Node) -> object:
        assert isinstance(node, yaml.ScalarNode)  # int and timestamp are scalars
        try:
            return construct(loader, node)
        except (ValueError, OverflowError):
            value = str(node.value)
            return _Unreadable(_shorten(value), problem(value))

    return run


def _refused(problem: str) -> _Constructor:
    def run(loader: yaml.SafeLoader, node: yaml.Node) -> object:
        return _Unreadable("!!" + str(node.tag).rpartition(":")[2], problem)

    return run


def _digits(value: str) -> str:
    return f"the number is too large ({sum(c.isdigit() for c in value)} digits)"


_Loader.add_constructor(
    "tag:yaml.org,2002:int", _guarded(yaml.SafeLoader.construct_yaml_int, _digits)
)
_Loader.add_constructor(
    "tag:yaml.org,2002:timestamp",
    _guarded(
        yaml.SafeLoader.construct_yaml_timestamp,
        lambda value: f"{_shorten(value)!r} is not a valid date or time",
    ),
)
_Loader.add_constructor(
    "tag:yaml.org,2002:binary", _refused("binary data (!!binary) is not a valid value")
)
_Loader.add_constructor(
    "tag:yaml.org,2002:set", _refused("a set (!!set) is not a valid value; use a list")
)


def _load_yaml(text: str, source: str) -> object:
    try:
        _check_shape(text, source)
        loader = _Loader(text)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        line = _yaml_line(error)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        context = getattr(error, "context", None)
        if context:
            problem = f"{context}, {problem}"
        problem = f"could not parse YAML: {problem}"
        where = f"line {line}: " if line is not None else ""
        raise RepoConfigError(
            f"{source}: {where}{problem}", source=source, problem=problem, line=line
        ) from None


def _path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _fields_at(loc: Sequence[int | str]) -> list[str]:
    """The field names valid where an unknown key at `loc` was found."""
    model: type[BaseModel] = RepoConfig
    for part in loc[:-1]:
        if part == "schedules":
            model = Schedule
    return list(model.model_fields)


def _from_validation(error: ValidationError, source: str) -> RepoConfigError:
    errors = error.errors()
    # A misspelt key is the likeliest cause of any other error beside it.
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = [part for part in first["loc"] if isinstance(part, int | str)]
    field = _path(loc) or None
    if first["type"] == "extra_forbidden":
        close = difflib.get_close_matches(str(loc[-1]), _fields_at(loc), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        problem = f"unknown field{hint}"
        return RepoConfigError(
            f"{source}: unknown field {field!r}{hint}", source=source, problem=problem, field=field
        )
    message = str(first["msg"]).removeprefix("Value error, ")
    # Lists are tuples inside (the model is frozen); say what the user wrote.
    message = message.replace("a valid tuple", "a list").replace("Tuple should", "List should")
    if first["type"] == "model_type":
        message = "Input should be a mapping"
    if first["type"] == "string_pattern_mismatch" and loc and loc[0] == "allowed_bots":
        message = "Input should be a GitHub login, e.g. renovate[bot]"
    if field is None:
        return RepoConfigError(f"{source}: {message}", source=source, problem=message)
    return RepoConfigError(
        f"{source}: {field}: {message}", source=source, problem=message, field=field
    )


def _key_text(key: object) -> str:
    """A key that is not text, as the file wrote it, near enough."""
    if isinstance(key, _Unreadable):
        return key.text
    if isinstance(key, date):
        return key.isoformat()
    if key is None:
        return "null"
    return repr(key)


def _check_values(data: object, source: str, loc: tuple[int | str, ...] = ()) -> None:
    """Reject a key that is not text, e.g. YAML 1.1 reading `on:` as True, and any
    `_Unreadable` value, each at its field.

    Pydantic would report such a key coerced (True as 1), which misleads.
    The walk is bounded: `_check_shape` capped the expanded size and depth.
    """
    if isinstance(data, _Unreadable):
        field = _path(loc) or None
        where = f"{field}: " if field else ""
        raise RepoConfigError(
            f"{source}: {where}{data.problem}", source=source, problem=data.problem, field=field
        )
    if isinstance(data, list):
        for index, item in enumerate(data):
            _check_values(item, source, (*loc, index))
    elif isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str):
                field = _path((*loc, _key_text(key)))
                hint = ""
                if isinstance(key, bool):
                    hint = " (unquoted yes, no, on, off are booleans in YAML)"
                raise RepoConfigError(
                    f"{source}: unknown field {field}{hint}",
                    source=source,
                    problem=f"unknown field{hint}",
                    field=field,
                )
            _check_values(value, source, (*loc, key))


def parse_repo_config(text: str | bytes, *, source: str = CONFIG_PATH) -> RepoConfig:
    """Validate the contents of `.github/neo.yml`; an empty file means every default.

    Pure: no I/O. Raises RepoConfigError with one line naming `source`, and the
    field or YAML line, for anything that is not a valid config.
    """

    def fail(problem: str) -> RepoConfigError:
        return RepoConfigError(f"{source}: {problem}", source=source, problem=problem)

    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "replace"))
    if size > MAX_CONFIG_BYTES:
        raise fail(f"file is larger than {MAX_CONFIG_BYTES // 1024} KiB")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise fail("file is not valid UTF-8") from None
    data = _load_yaml(text, source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single value ({type(data).__name__})"
        raise fail(f"the top level must be a mapping of settings, not {kind}")
    _check_values(data, source)
    try:
        return RepoConfig.model_validate(data)
    except ValidationError as error:
        raise _from_validation(error, source) from None


# --- the comment ------------------------------------------------------------


def _code_span(text: str, limit: int = 300) -> str:
    """`text` as inline code: one line, shortened, safe whatever backticks it holds."""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def render_config_error(error: RepoConfigError, *, reference_url: str = REFERENCE_PATH) -> str:
    """The Markdown of the one comment Neo posts, instead of running, for an invalid file.

    `reference_url` should be an absolute link to Neo's `docs/configuration.md`
    when one is known: a relative link resolves against the commenting page.
    Text from the file appears only in code spans, so it can neither format
    the comment nor mention anyone.
    """
    where = []
    if error.field is not None:
        where.append(f"- **Setting:** {_code_span(error.field)}")
    if error.line is not None:
        where.append(f"- **Line:** {error.line}")
    where.append(f"- **Problem:** {_code_span(error.problem)}")
    return "\n".join(
        [
            CONFIG_ERROR_MARKER,
            f"**Neo did not run:** {_code_span(error.source)} on the default branch is invalid.",
            "",
            *where,
            "",
            "Nothing ran. Fix the file on the default branch, then ask again; every setting "
            f"is described in the [configuration reference]({reference_url}).",
        ]
    )


# --- the reference ----------------------------------------------------------

EXAMPLE_YAML = """\
# .github/neo.yml: every setting is optional.
provider: anthropic
model: claude-sonnet-4-5
max_turns: 150
time_limit: 45  # minutes
max_cost_usd: 5.00
thinking: true
effort: high
setup:
  - pip install -e '.[dev]'
setup_network: true  # setup installs packages; the agent itself stays offline
trigger_label: neo
allowed_users: [admin, maintain, write]
allowed_bots: ["renovate[bot]"]
branch_prefix: neo/
draft: true
allow_workflow_edits: false
schedules:
  - name: weekly dependency update
    cron: "0 6 * * MON"
    prompt: Update the dependencies, run the tests and fix what breaks.
    branch: neo/deps
"""


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _type_name(args[0])
    if origin is Literal:
        return "one of " + ", ".join(f"`{arg}`" for arg in args)
    if origin in (typing.Union, types.UnionType):
        kept = [arg for arg in args if arg is not type(None)]
        return " or ".join(_type_name(arg) for arg in kept) + (
            " or null" if len(kept) < len(args) else ""
        )
    if origin is tuple:
        inner = _type_name(args[0])
        if typing.get_origin(args[0]) is Literal:
            return "list, each " + inner
        return f"list of {inner}s"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"{annotation.__name__.lower()}"
    names = {str: "string", int: "integer", bool: "boolean"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _bounds(info: FieldInfo) -> str:
    low = high = None
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge):
            low = item.ge
        elif isinstance(item, annotated_types.Le):
            high = item.le
    if low is not None and high is not None:
        return f", {low} to {high}"
    return ""


def _default(info: FieldInfo) -> str:
    if info.default is PydanticUndefined:
        return "required"
    value = info.default
    if isinstance(value, tuple):
        value = list(value)
    return f"`{json.dumps(value)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(model: type[BaseModel]) -> list[str]:
    rows = ["| Setting | Type | Default | Description |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        kind = _type_name(info.annotation) + _bounds(info)
        cells = [f"`{name}`", kind, _default(info), info.description or ""]
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return rows


def reference_markdown() -> str:
    """The `.github/neo.yml` reference, rendered from the model; deterministic."""
    lines = [
        "# `.github/neo.yml` reference",
        "",
        "_Generated from `bot/config/repo.py` by "
        "`uv run python -m bot.config.repo > docs/configuration.md`; "
        "do not edit by hand (a test fails when the two differ)._",
        "",
        "Neo reads its per-repository settings from `.github/neo.yml` on the repository's "
        "default branch only, so a pull request cannot change them. When the repository "
        "has no such file, Neo reads `.github/neo.yml` from the default branch of the "
        "owner's `.github` repository instead (e.g. `octo/.github` for `octo/hello`), "
        "provided the App is installed on that repository too. Either file is used whole, "
        "never merged with the other: a repository with a file of its own ignores the "
        "owner's entirely, and a setting it leaves out takes Neo's default. Every setting is "
        f"optional; the file may be empty or absent. It is YAML, at most "
        f"{MAX_CONFIG_BYTES // 1024} KiB. An unknown setting or an invalid value makes Neo "
        "post one comment naming the setting and the problem, and run nothing.",
        "",
        "## Example",
        "",
        "```yaml",
        *EXAMPLE_YAML.splitlines(),
        "```",
        "",
        "## Settings",
        "",
        *_table(RepoConfig),
        "",
        "## Schedules",
        "",
        "Each entry of `schedules` runs a job when its cron expression fires, "
        "once per time slot, and updates the schedule's open pull request "
        "instead of opening a new one each time.",
        "",
        "Times are UTC. A job is queued up to 5 minutes after its time, at an offset "
        "fixed for each repository and schedule so that many repositories do not all "
        "start at once (and never as late as the schedule's next time). If Neo was "
        "down when a time passed, it runs the latest one it missed once when it is "
        "back, not once for each. A new or edited schedule takes effect within "
        "15 minutes.",
        "",
        *_table(Schedule),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(reference_markdown())
