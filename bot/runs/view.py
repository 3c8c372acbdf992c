"""What the run page shows, from a job and its event records: pure, no I/O.

Each record becomes a `Shown` item that knows where it goes without any
other record: a tool call opens a container keyed by its agent and call id,
its result goes into that container, a subagent's records go into the
subagent's container. So the page rendered on the server and the script
that adds records as they arrive place them alike, and a stream resumed at
any record needs nothing that came before it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bot.jobs import FINAL_STATES, Conclusion, Job, JobState

# The header's record kinds: shown in the header, not the transcript.
HEADER_KINDS = frozenset({"turn", "checklist"})
# A `state` record's states after which the job writes nothing more: the worker's
# `finished` (with its conclusion), or a queue state a job ends in.
ENDED = frozenset({"finished", *FINAL_STATES})


def ended_state(data: Mapping[str, object]) -> str | None:
    """The queue state a `state` record says the job ended in (succeeded, failed,
    cancelled), "finished" when its conclusion is unknown; None if it did not end."""
    state = data.get("state")
    if state not in ENDED:
        return None
    conclusion = data.get("conclusion")
    if state == "finished" and conclusion in Conclusion._value2member_map_:
        return Conclusion(str(conclusion)).state.value
    return str(state)


class Record(Protocol):
    """An event record as the queue returns it (bot.queue's RunEvent)."""

    @property
    def job_id(self) -> int: ...
    @property
    def seq(self) -> int: ...
    @property
    def at(self) -> float: ...
    @property
    def kind(self) -> str: ...
    @property
    def data(self) -> Mapping[str, object]: ...


@dataclass(slots=True)
class Shown:
    """One record as the transcript shows it, placed by `place`."""

    seq: int
    at: float
    kind: str
    data: Mapping[str, object]
    # The subagent path it belongs to: "" for the run itself, "2" or "2/1".
    agent: str
    # The container this item opens (a tool call's), or None.
    key: str | None
    # The container it goes in; None: the transcript itself.
    into: str | None
    # Built by `transcript` for the server's page; the stream sends items alone.
    children: list[Shown] = field(default_factory=list)
    result: Shown | None = None


def agent_key(agent: str) -> str:
    return f"agent:{agent}"


def call_key(agent: str, call_id: str) -> str:
    return f"call:{agent}:{call_id}"


def place(record: Record) -> Shown:
    """Where one record goes: a subagent's nested record is unwrapped to its own kind."""
    kind, data, path = record.kind, record.data, []
    while kind == "subagent":
        inner = data.get("event")
        if not isinstance(inner, Mapping):
            break
        path.append(_text(data.get("agent")) or "?")
        described = data.get("description")
        kind, data = _text(inner.get("kind")) or "unknown", _mapping(inner.get("data"))
        if described is not None:  # the child's task, on its start and end
            data = {**data, "description": described}
    agent = "/".join(path)
    into = agent_key(agent) if agent else None
    key = None
    if kind == "tool_call":
        key = call_key(agent, _text(data.get("call_id")))
    elif kind == "tool_result":
        into = call_key(agent, _text(data.get("call_id")))
    return Shown(record.seq, record.at, kind, data, agent, key, into)


def transcript(records: Iterable[Record]) -> list[Shown]:
    """The transcript as a tree: results inside their calls, subagents' records inside theirs."""
    top: list[Shown] = []
    containers: dict[str, Shown] = {}
    for record in records:
        if record.kind in HEADER_KINDS:
            continue
        shown = place(record)
        if shown.kind == "tool_result" and shown.into in containers:
            containers[shown.into].result = shown
            continue
        if shown.kind == "tool_result":  # its call was dropped (the job's bound): shown alone
            shown.into = agent_key(shown.agent) if shown.agent else None
        _children(shown.into, shown.seq, shown.at, top, containers).append(shown)
        if shown.key is not None:
            containers[shown.key] = shown
    return top


def _children(
    into: str | None, seq: int, at: float, top: list[Shown], containers: dict[str, Shown]
) -> list[Shown]:
    """The list an item placed `into` joins, making its subagents' containers as needed."""
    if into is None:
        return top
    if into not in containers:
        agent = into.removeprefix("agent:")
        parent, _, name = agent.rpartition("/")
        box = Shown(seq, at, "agent", {"agent": name}, parent, into, None)
        _children(agent_key(parent) if parent else None, seq, at, top, containers).append(box)
        containers[into] = box
    return containers[into].children


@dataclass(frozen=True, slots=True)
class Limit:
    """What is left of one of the run's limits (turns, cost_usd, seconds)."""

    name: str
    left: float
    # The limit itself, when the record gives it.
    limit: float | None = None


@dataclass(frozen=True, slots=True)
class Header:
    """The page's header: who asked what where, and how far the run has got."""

    job_id: int
    repository: str
    number: int
    is_pull_request: bool
    requester: str
    kind: str
    state: str
    final: bool
    created_at: float
    started_at: float | None
    ended_at: float | None
    model: str | None
    turns: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    limits: tuple[Limit, ...]
    checklist: tuple[tuple[str, bool], ...]
    last_seq: int


def header(job: Job, records: Sequence[Record]) -> Header:
    """The header as of the last of `records` (all of the job's, oldest first)."""
    model: str | None = None
    turn: Mapping[str, object] = {}
    checklist: tuple[tuple[str, bool], ...] = ()
    started: float | None = None
    ended: float | None = None
    for record in records:
        data = record.data
        if isinstance(data.get("model"), str) and data["model"]:
            model = str(data["model"])
        if record.kind == "turn":
            turn = data
        elif record.kind == "checklist":
            checklist = checklist_items(data)
        elif record.kind == "state":
            state = data.get("state")
            if state == JobState.RUNNING and started is None:
                started = record.at
            elif ended_state(data) is not None:
                ended = record.at
    final = job.state in FINAL_STATES
    if final and ended is None:
        ended = job.updated_at
    request = job.request
    return Header(
        job_id=job.id,
        repository=request.thread.repository,
        number=request.thread.number,
        is_pull_request=request.thread.is_pull_request,
        requester=request.author,
        kind=request.kind.value,
        state=job.state.value,
        final=final,
        created_at=job.created_at,
        started_at=started,
        ended_at=ended,
        model=model,
        turns=_int(turn.get("turn")),
        input_tokens=_int(turn.get("input_tokens")),
        output_tokens=_int(turn.get("output_tokens")),
        cost_usd=_float(turn.get("cost_usd")),
        limits=limits(turn),
        checklist=checklist,
        last_seq=records[-1].seq if records else 0,
    )


def limits(turn: Mapping[str, object]) -> tuple[Limit, ...]:
    """What is left of each limit: `{name: left}` as the worker writes it, or a
    list of `{name, used, limit}`."""
    raw = turn.get("limits")
    found = []
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            left = _float(value)
            if left is not None:
                found.append(Limit(str(name), max(0.0, left)))
    for entry in raw if isinstance(raw, list) else ():
        if not isinstance(entry, Mapping):
            continue
        used, limit = _float(entry.get("used")), _float(entry.get("limit"))
        if used is not None and limit is not None:
            found.append(Limit(_text(entry.get("name")) or "limit", max(0.0, limit - used), limit))
    return tuple(found)


def checklist_items(data: Mapping[str, object]) -> tuple[tuple[str, bool], ...]:
    raw = data.get("items")
    return tuple(
        (_text(item.get("text")), bool(item.get("done")))
        for item in (raw if isinstance(raw, list) else ())
        if isinstance(item, Mapping)
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _float(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None
