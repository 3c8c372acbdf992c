"""Reading `.github/neo.yml`: from text to a `RepoConfig`, or one `RepoConfigError` line.

Pure: no I/O. The YAML is checked from parser events before it is loaded
(size, depth, aliases, duplicate keys), and no scalar can raise outside the
loader, so a hostile file costs bounded time and memory and says one line.
"""

from __future__ import annotations

import contextlib
import difflib
import typing
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date

import yaml
from pydantic import BaseModel, ValidationError

from bot.config.mcp import OPERATOR, Mcp
from bot.config.model import RepoConfig
from bot.config.yaml_lines import line_of, pairs, start_line, text_key
from runner.errors import ConfigError
from runner.mcp import Operator

__all__ = [
    "CONFIG_PATH",
    "MAX_CONFIG_BYTES",
    "ConfigProblem",
    "RepoConfigError",
    "parse_mcp_config",
    "parse_repo_config",
]

CONFIG_PATH = ".github/neo.yml"
# A settings file is a few hundred bytes; the cap bounds parsing time and memory.
MAX_CONFIG_BYTES = 64 * 1024
# Bounds on the parsed document. Aliases can make a small file expand to
# billions of values ("billion laughs"); nesting deeper than a few levels is
# never a valid config and would otherwise recurse in the YAML composer.
_MAX_DEPTH = 32
_MAX_VALUES = 100_000


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One thing wrong in the file: where (the setting, the line) and what."""

    problem: str
    field: str | None = None  # dotted path, e.g. "schedules[0].cron"; None for the whole file
    line: int | None = None  # 1-based, when the file's text shows where


class RepoConfigError(ConfigError):
    """An unusable `.github/neo.yml`; `str()` is one line: file, field or line, problem.

    `problems` holds every problem found, in the file's order; `field`, `line`
    and `problem` are those of the one `str()` names, with how many more there are.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str,
        problem: str,
        field: str | None = None,
        line: int | None = None,
        problems: Sequence[ConfigProblem] = (),
    ) -> None:
        named = ConfigProblem(problem, field, line)
        listed = tuple(problems) or (named,)
        more = len(listed) - 1
        if more:
            message += f" (and {more} more problem{'s' if more != 1 else ''})"
        super().__init__(message)
        self.source = source
        self.problem = problem
        self.field = field
        self.line = line
        self.problems = listed


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


def _load_yaml(text: str, source: str) -> tuple[object, yaml.Node | None]:
    """The document's value, and its composed nodes (None for an empty file)."""
    try:
        _check_shape(text, source)
        loader = _Loader(text)
        try:
            # As get_single_data, keeping the nodes: they know where each setting is.
            node = loader.get_single_node()
            return (None if node is None else loader.construct_document(node)), node
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        line = _yaml_line(error)
        problem = (
            getattr(error, "problem", None)
            or (str(error).splitlines() or [type(error).__name__])[0]
        )
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


def _fields_at(loc: Sequence[int | str], root: type[BaseModel]) -> list[str]:
    """The field names valid where an unknown key at `loc` was found."""
    model = root
    for part in loc[:-1]:
        if isinstance(part, str) and part in model.model_fields:
            inner = _model_in(model.model_fields[part].annotation)
            if inner is None:
                return []
            model = inner
    return list(model.model_fields)


def _model_in(annotation: object) -> type[BaseModel] | None:
    """The model a field's type holds (`Schedule` in `tuple[Schedule, ...]`, `Network` in
    `Literal["off"] | Network | None`), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


@dataclass(frozen=True, slots=True)
class _Found:
    """A problem, and the one line that names it after the file's name."""

    problem: ConfigProblem
    text: str
    unknown: bool = False  # an unknown field: the likeliest cause of the rest


def _from_validation(
    error: ValidationError,
    root: yaml.Node | None,
    seen: set[str | None],
    root_model: type[BaseModel] = RepoConfig,
) -> list[_Found]:
    """Every problem pydantic found, but those at a field `seen` already names."""
    found: list[_Found] = []
    for each in error.errors():
        if each["type"] == "invalid_key":
            continue  # a key that is not text: `_check_values` names it as written
        loc = [part for part in each["loc"] if isinstance(part, int | str)]
        field = _path(loc) or None
        if field in seen:
            continue
        seen.add(field)
        # A missing setting has no line of its own: the line of what lacks it.
        line = line_of(root, loc[:-1] if each["type"] == "missing" else loc)
        if each["type"] == "extra_forbidden":
            close = difflib.get_close_matches(str(loc[-1]), _fields_at(loc, root_model), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problem = ConfigProblem(f"unknown field{hint}", field, line)
            found.append(_Found(problem, f"unknown field {field!r}{hint}", unknown=True))
            continue
        message = str(each["msg"]).removeprefix("Value error, ")
        # Lists are tuples inside (the model is frozen); say what the user wrote.
        message = message.replace("a valid tuple", "a list").replace("Tuple should", "List should")
        if each["type"] == "model_type":
            message = "Input should be a mapping"
        if each["type"] == "string_pattern_mismatch" and loc:
            message = _PATTERN_MEANING.get(str(loc[0]), message)
        text = message if field is None else f"{field}: {message}"
        found.append(_Found(ConfigProblem(message, field, line), text))
    return found


# What each patterned setting's pattern means, instead of the pattern itself.
_PATTERN_MEANING = {
    "allowed_bots": "Input should be a GitHub login, e.g. renovate[bot]",
    "disabled_skills": (
        "Input should be a skill name: lower-case letters and digits in words joined"
        " by single hyphens, starting with a letter, e.g. release-notes"
    ),
}


def _key_text(key: object) -> str:
    """A key that is not text, as the file wrote it, near enough."""
    if isinstance(key, _Unreadable):
        return key.text
    if isinstance(key, date):
        return key.isoformat()
    if key is None:
        return "null"
    return repr(key)


def _check_values(
    data: object, node: yaml.Node | None, loc: tuple[int | str, ...] = ()
) -> Iterator[_Found]:
    """A key that is not text, e.g. YAML 1.1 reading `on:` as True, and any
    `_Unreadable` value, each at its field and line.

    Pydantic would report such a key coerced (True as 1), which misleads.
    The walk is bounded: `_check_shape` capped the expanded size and depth.
    """
    line = None if node is None or not loc else start_line(node)
    if isinstance(data, _Unreadable):
        field = _path(loc) or None
        where = f"{field}: " if field else ""
        yield _Found(ConfigProblem(data.problem, field, line), f"{where}{data.problem}")
    elif isinstance(data, list):
        items = node.value if isinstance(node, yaml.SequenceNode) else []
        for index, item in enumerate(data):
            yield from _check_values(
                item, items[index] if index < len(items) else None, (*loc, index)
            )
    elif isinstance(data, dict):
        keys = dict(pairs(node)) if isinstance(node, yaml.MappingNode) else {}
        values = {text_key(k): v for k, v in keys.items()}
        odd = [k for k in keys if text_key(k) is None]
        for key, value in data.items():
            if isinstance(key, str):
                yield from _check_values(value, values.get(key), (*loc, key))
                continue
            field = _path((*loc, _key_text(key)))
            hint = ""
            if isinstance(key, bool):
                hint = " (unquoted yes, no, on, off are booleans in YAML)"
            # The keys that are not text, in the file's order, as the dict has them.
            at = odd.pop(0) if odd else None
            key_line = None if at is None else start_line(at)
            problem = ConfigProblem(f"unknown field{hint}", field, key_line)
            yield _Found(problem, f"unknown field {field}{hint}", unknown=True)


def _error(source: str, found: Sequence[_Found]) -> RepoConfigError:
    """One error for every problem, in the file's order; its line names an unknown
    field first, the likeliest cause of any other problem beside it."""
    ordered = sorted(found, key=lambda f: (f.problem.line is None, f.problem.line or 0))
    first = next((f for f in ordered if f.unknown), ordered[0])
    head = first.problem
    return RepoConfigError(
        f"{source}: {first.text}",
        source=source,
        problem=head.problem,
        field=head.field,
        line=head.line,
        problems=[f.problem for f in ordered],
    )


def parse_repo_config(
    text: str | bytes, *, source: str = CONFIG_PATH, operator: Operator | None = None
) -> RepoConfig:
    """Validate the contents of `.github/neo.yml`; an empty file means every default.

    Pure: no I/O. Raises RepoConfigError naming `source`, and the field or YAML
    line, for anything that is not a valid config: one line, which names the
    first problem; the error's `problems` holds every one pydantic and the
    checks before it found. With `operator`, what `mcp` asks of the operator
    (commands, secrets) is checked against what it allows.
    """
    return _parse(text, RepoConfig, source, operator)


def parse_mcp_config(text: str | bytes, *, source: str, operator: Operator | None = None) -> Mcp:
    """A file holding what `.github/neo.yml` holds under `mcp:` (`servers:`, `github:`),
    in YAML or JSON (`neo run --mcp-config FILE`); as `parse_repo_config`."""
    return _parse(text, Mcp, source, operator)


_Model = typing.TypeVar("_Model", bound=BaseModel)


def _parse(
    text: str | bytes, model: type[_Model], source: str, operator: Operator | None
) -> _Model:
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
    data, root = _load_yaml(text, source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single value ({type(data).__name__})"
        raise fail(f"the top level must be a mapping of settings, not {kind}")
    found = list(_check_values(data, root))
    context = {OPERATOR: operator} if operator is not None else None
    try:
        config = model.model_validate(data, context=context)
    except ValidationError as error:
        found += _from_validation(error, root, {f.problem.field for f in found}, model)
    if found:
        raise _error(source, found)
    return config
