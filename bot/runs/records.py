"""A job's runner events as the records its event log keeps. Pure: the caller gives
each event's time; nothing here reads a clock, a file or the network.

Each record is `(at, kind, data)`, `data` a JSON object the queue stores as it is
(bot/queue/run_log.py numbers them). The kinds, and what their `data` holds:

- `state` {state, conclusion?, error?}: queued, running, finished (written by the
  worker, `state_record`).
- `turn` {turn, input_tokens, output_tokens, cost_usd, limits, model?}: a model call
  answered. Tokens and cost are the run's so far (subagents and compaction
  included; `cost_usd` None while no call is priced); `limits` what is left of
  each limit the run has: {turns, cost_usd, seconds}.
- `text` {text}: the model's words; a stream's deltas coalesced until another
  event, a flush, or `TEXT_CHUNK` characters.
- `thinking` {text}: the model's reasoning, where the provider shows it.
- `tool_call` {call_id, name, args}: every string in `args` capped.
- `tool_result` {call_id, name, is_error, output, output_bytes, truncated,
  duration_ms}: `output` capped at `OUTPUT_CAP` bytes (its head and tail),
  `truncated` when the runner or this cap cut it.
- `checklist` {items: [{text, done, status}]}: the checklist as it now stands.
- `compaction` {stage, tokens_before, tokens_after}.
- `retry` {attempt, delay, reason, fallback}: a provider call failed; what the
  model streamed since its call began is void.
- `subagent` {agent, description?, event: {kind, data}}: child `agent`'s start,
  turns and end (kinds `started`, `turn`, `finished`), and its own transcript:
  its records of the kinds above (`tool_call`, `tool_result`, `text` (its
  answers), `thinking`, `turn` with its own tokens, ...), nested.
- `skills` {names}; `mcp_skipped` {servers: [{server, reason}]}.
- `setup` {mode, steps, notes, reused_from, kept} and `network_blocked` {host,
  command, reason, phase, attempts}: what the job's setup did and which hosts the
  proxy refused, known when the run ends (`ending_records`).
- `steer` {author, text}: a person's message reached the model at a turn boundary
  (the loop's `Steered`); `stop` {by}: written by the stop paths.
- `truncated` {limit, dropped, kinds, first_at}: written by the queue past its
  bound; {dropped, reason} by the writer when the database fell behind.

Nothing secret: every string from the run (arguments, outputs, reasons) goes
through `runner.git.process.scrub` with the job's secrets, which also takes the
credentials out of URLs, and well-known token shapes are masked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runner.agent.events import (
    AssistantMessage,
    Compacted,
    ProviderRetry,
    Steered,
    TextDelta,
    ToolFinished,
    ToolNotice,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from runner.git.process import scrub
from runner.llm.types import Opaque, Usage
from runner.mcp.report import McpSkipped
from runner.network import Blocked
from runner.sandbox.setup_plan import SetupOutcome
from runner.skills import SkillsInvoked
from runner.subagent import ChildEvent, ChildFinished, ChildStarted, ChildTurn
from runner.tools.checklist import SPEC as CHECKLIST_SPEC
from runner.tools.checklist import ChecklistChanged

__all__ = [
    "OUTPUT_CAP",
    "TEXT_CHUNK",
    "Limits",
    "Record",
    "Recorder",
    "cap",
    "ending_records",
    "state_record",
]

Record = tuple[float, str, dict[str, object]]

# Bytes of a tool's output (and of each string in its arguments) a record keeps.
OUTPUT_CAP = 4096
# Characters of streamed text one `text` record holds at most.
TEXT_CHUNK = 4096
# Shown instead of a token-shaped string: GitHub's, Anthropic's, OpenAI's, AWS's, Slack's.
HIDDEN = "***"
_TOKENS = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,})"
)
# The checklist tool is shown as the checklist, never as calls.
_INTERNAL = frozenset({CHECKLIST_SPEC.name})
# Opaque blocks that hold the model's reasoning, and the keys their text is under.
_THINKING_KINDS = frozenset({"thinking", "thought", "reasoning_details"})
_THINKING_KEYS = ("thinking", "text", "summary")


@dataclass(frozen=True, slots=True)
class Limits:
    """The run's limits, for what is left of each; None: no such limit."""

    max_turns: int | None = None
    max_cost_usd: float | None = None
    time_limit: float | None = None


def cap(text: str, limit: int = OUTPUT_CAP) -> tuple[str, bool]:
    """`text` within `limit` UTF-8 bytes: its head and tail around a note of what
    was left out; and whether it was cut."""
    encoded = text.encode("utf-8", "replace")
    if len(encoded) <= limit:
        return text, False
    tail_bytes = limit // 4
    head = encoded[: limit - tail_bytes].decode("utf-8", "ignore")
    tail = encoded[-tail_bytes:].decode("utf-8", "ignore")
    left_out = len(encoded) - len(head.encode()) - len(tail.encode())
    return f"{head}\n… [{left_out:,} bytes left out] …\n{tail}", True


def state_record(
    at: float, state: str, *, conclusion: str | None = None, error: str | None = None
) -> Record:
    """The job entered `state` (queued, running, finished...)."""
    data: dict[str, object] = {"state": state}
    if conclusion is not None:
        data["conclusion"] = conclusion
    if error is not None:
        data["error"] = error
    return (at, "state", data)


class Recorder:
    """One job's runner events folded into records. Feed it from one loop.

    `started_at` is when the job began (for the time left), `secrets` the
    strings no record may hold (the job's tokens).
    """

    def __init__(
        self,
        *,
        started_at: float,
        limits: Limits = Limits(),
        secrets: Sequence[str] = (),
        answers_as_text: bool = False,
        model: str | None = None,
    ) -> None:
        self._started_at = started_at
        # The model answering, for the run page's header: the run's, then a fallback's.
        self._model = model
        # A child streams no deltas to us: its answers are its text.
        self._answers_as_text = answers_as_text
        self._children: dict[int, Recorder] = {}
        self._limits = limits
        self._secrets = tuple(secret for secret in secrets if secret)
        self._text: list[str] = []
        self._text_size = 0
        self._text_at = 0.0
        self._turn = 0
        self._usage = Usage()
        self._internal: set[str] = set()

    def record(self, event: object, at: float) -> list[Record]:
        """The records `event` makes, pending text first."""
        if isinstance(event, TextDelta):
            return self._delta(event.text, at)
        out = self.flush()
        if isinstance(event, TurnStarted):
            self._turn = max(self._turn, event.turn)
        elif isinstance(event, AssistantMessage):
            out += self._answered(event, at)
        elif isinstance(event, ToolStarted):
            if event.name in _INTERNAL:
                self._internal.add(event.call_id)
            else:
                args = self._clean(dict(event.args))
                out.append(
                    (at, "tool_call", {"call_id": event.call_id, "name": event.name, "args": args})
                )
        elif isinstance(event, ToolFinished):
            if event.call_id in self._internal or event.name in _INTERNAL:
                self._internal.discard(event.call_id)
            else:
                out.append((at, "tool_result", self._result(event)))
        elif isinstance(event, ToolNotice):
            out += self._notice(event.payload, at)
        elif isinstance(event, Compacted):
            self._usage += event.usage
            data = {
                "stage": event.stage,
                "tokens_before": event.tokens_before,
                "tokens_after": event.tokens_after,
            }
            out.append((at, "compaction", data))
        elif isinstance(event, ProviderRetry):
            data = {
                "attempt": event.attempt,
                "delay": event.delay,
                "reason": self._string(event.reason),
                "fallback": event.fallback,
            }
            out.append((at, "retry", data))
            if event.fallback:
                self._model = event.fallback
        elif isinstance(event, Steered):
            # The person's own words; the model read them quoted as their request.
            data = {"author": event.author, "text": self._string(event.said, limit=None)}
            out.append((at, "steer", data))
        elif isinstance(event, TurnFinished) and event.error is not None:
            data = {"error": event.error, "message": self._string(event.message)}
            out.append((at, "agent_error", data))
        return out

    def flush(self) -> list[Record]:
        """The text streamed since the last record, as one record (none if none)."""
        if not self._text:
            return []
        text = "".join(self._text)
        self._text, self._text_size = [], 0
        return [(self._text_at, "text", {"text": self._string(text, limit=None)})]

    def _delta(self, text: str, at: float) -> list[Record]:
        if not self._text:
            self._text_at = at
        self._text.append(text)
        self._text_size += len(text)
        return self.flush() if self._text_size >= TEXT_CHUNK else []

    def _answered(self, event: AssistantMessage, at: float) -> list[Record]:
        out: list[Record] = []
        thinking = "".join(
            _thinking_text(block.data)
            for block in event.message.content
            if isinstance(block, Opaque) and block.kind in _THINKING_KINDS
        )
        if thinking.strip():
            out.append((at, "thinking", {"text": self._string(thinking)}))
        if self._answers_as_text and event.message.text.strip():
            out.append((at, "text", {"text": self._string(event.message.text, limit=None)}))
        if event.message.usage is not None:
            self._usage += event.message.usage
        out.append((at, "turn", self._turn_data(at, event.stop_reason)))
        return out

    def _turn_data(self, at: float, stop_reason: str | None) -> dict[str, object]:
        usage, limits = self._usage, self._limits
        left: dict[str, object] = {}
        if limits.max_turns is not None:
            left["turns"] = max(limits.max_turns - self._turn, 0)
        if limits.max_cost_usd is not None:
            left["cost_usd"] = round(max(limits.max_cost_usd - (usage.cost_usd or 0.0), 0.0), 6)
        if limits.time_limit is not None:
            left["seconds"] = round(max(limits.time_limit - (at - self._started_at), 0.0), 1)
        return {
            "turn": self._turn,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cost_usd": None if usage.cost_usd is None else round(usage.cost_usd, 6),
            "stop_reason": stop_reason,
            "limits": left,
            **({"model": self._model} if self._model else {}),
        }

    def _result(self, event: ToolFinished) -> dict[str, object]:
        output, cut = cap(self._string(event.output, limit=None))
        return {
            "call_id": event.call_id,
            "name": event.name,
            "is_error": event.is_error,
            "output": output,
            "output_bytes": event.output_bytes,
            "truncated": event.truncated or cut,
            "duration_ms": event.duration_ms,
        }

    def _notice(self, payload: object, at: float) -> list[Record]:
        if isinstance(payload, ChecklistChanged):
            items = [
                {
                    "text": self._string(item.content),
                    "done": item.status == "done",
                    "status": item.status,
                }
                for item in payload.items
            ]
            return [(at, "checklist", {"items": items})]
        if isinstance(payload, ChildEvent):
            child = self._children.get(payload.number)
            if child is None:
                child = self._children[payload.number] = Recorder(
                    started_at=at, secrets=self._secrets, answers_as_text=True
                )
            return [
                (when, "subagent", {"agent": payload.number, "event": {"kind": kind, "data": data}})
                for when, kind, data in child.record(payload.event, at)
            ]
        if isinstance(payload, ChildStarted):
            return [self._child(at, payload.number, payload.description, "started", {})]
        if isinstance(payload, ChildTurn):
            return [self._child(at, payload.number, None, "turn", {"turn": payload.turn})]
        if isinstance(payload, ChildFinished):
            self._usage += payload.usage
            data: dict[str, object] = {
                "turns": payload.turns,
                "input_tokens": payload.usage.input_tokens,
                "output_tokens": payload.usage.output_tokens,
                "cost_usd": payload.usage.cost_usd,
                "error": payload.error,
            }
            return [self._child(at, payload.number, payload.description, "finished", data)]
        if isinstance(payload, SkillsInvoked):
            return [(at, "skills", {"names": list(payload.names)})]
        if isinstance(payload, McpSkipped):
            servers = [
                {"server": left.server, "reason": self._string(left.reason)}
                for left in payload.skipped
            ]
            return [(at, "mcp_skipped", {"servers": servers})]
        return []

    def _child(
        self, at: float, number: int, description: str | None, kind: str, data: dict[str, object]
    ) -> Record:
        record: dict[str, object] = {"agent": number, "event": {"kind": kind, "data": data}}
        if description is not None:
            record["description"] = self._string(description)
        return (at, "subagent", record)

    def _string(self, text: str, *, limit: int | None = OUTPUT_CAP) -> str:
        clean = _TOKENS.sub(HIDDEN, scrub(text, self._secrets))
        return clean if limit is None else cap(clean, limit)[0]

    def _clean(self, value: object) -> object:
        """A JSON value with every string scrubbed and capped."""
        if isinstance(value, str):
            return self._string(value)
        if isinstance(value, Mapping):
            return {str(key): self._clean(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self._clean(item) for item in value]
        return value

    def clean(self, value: object) -> object:
        """`_clean` for the caller's own records (a steer's text, a stop's name)."""
        return self._clean(value)


def ending_records(
    at: float,
    *,
    setup: SetupOutcome | None,
    blocked: Sequence[Blocked],
    recorder: Recorder,
) -> list[Record]:
    """What the job's end tells of its run: the setup it did, the hosts it was refused."""
    out: list[Record] = []
    if setup is not None:
        data = recorder.clean(setup.to_json())
        assert isinstance(data, dict)
        out.append((at, "setup", data))
    for refused in blocked:
        data = {
            "host": refused.host,
            "command": recorder.clean(refused.command),
            "reason": refused.reason,
            "phase": refused.phase,
            "attempts": refused.attempts,
        }
        out.append((at, "network_blocked", data))
    return out


def _thinking_text(data: Mapping[str, object]) -> str:
    """The reasoning text an opaque block holds, wherever its provider put it."""
    found: list[str] = []
    for key in _THINKING_KEYS:
        value = data.get(key)
        if isinstance(value, str):
            found.append(value)
    details = data.get("reasoning_details")
    if isinstance(details, list):
        for detail in details:
            if isinstance(detail, Mapping):
                found.append(_thinking_text(detail))
    return "".join(found)
