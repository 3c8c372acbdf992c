"""The agent loop: call the provider, run the tools it asks for, repeat.

Policy-free by design. The loop stores messages, calls a `Provider`, emits
events, runs injected tools and appends their results. It knows nothing of
project files, UIs, permissions or GitHub; those are layered around it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, overload

import jsonschema
from jsonschema.protocols import Validator

from runner.agent import events as ev
from runner.agent.capping import DEFAULT_CAP_BYTES, cap_text
from runner.agent.copying import copy_message, copy_object, copy_response
from runner.agent.errors import (
    ContextWindowExceeded,
    MaxOutputTokens,
    MaxTurns,
    MissingToolCall,
    UnexpectedStopReason,
)
from runner.agent.output_limit import Continuation, OutputLimit
from runner.compact.base import Compactor, PromptState
from runner.compact.tokens import estimate_messages, estimate_prompt
from runner.errors import NeoError
from runner.llm import types as llm
from runner.llm.errors import ContextOverflow, ProviderConnectionError
from runner.llm.provider import Completed, Provider, Retrying, TextDelta
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput

EventSink = Callable[[ev.Event], None]


class Budget(Protocol):
    """What a run may spend, checked by the loop; the policy is the caller's."""

    def before_call(self, turn: int, spent: llm.Usage, prompt_tokens: int) -> None:
        """Raise an `AgentError` (e.g. `MaxCost`) to stop before call `turn` is made."""
        ...

    def note(self, turn: int) -> str | None:
        """A line for the model after the tools of call `turn`, e.g. what is left."""
        ...


class Steering(Protocol):
    """Messages from people watching the run, asked for at each turn boundary.

    The loop asks before every provider request that follows a user message
    (the task, or the tool results of the turn before: never while a tool
    call is unanswered) and when the model ends its turn; what it gets joins
    the conversation as user text, and a turn that was ending goes on.
    """

    async def take(self) -> Sequence[ev.Steered]:
        """What arrived since the last call, oldest first; usually nothing."""
        ...


# Marks tool calls that need a person's confirmation; those run one at a time.
InteractiveCheck = Callable[[llm.ToolUse], bool]

# Stop reasons that complete the turn normally.
_COMPLETE: frozenset[str | None] = frozenset(
    {llm.END_TURN, llm.STOP_SEQUENCE, "", None, llm.REFUSAL}
)
_CANCELLED_RESULT = "interrupted: the tool call was cancelled before it finished"


@dataclass(frozen=True, slots=True)
class TurnResult:
    text: str
    stop_reason: str | None
    # Provider calls made by this `send`.
    turns: int
    # Tokens used by this `send`.
    usage: llm.Usage


class Agent:
    def __init__(
        self,
        provider: Provider,
        *,
        tools: Iterable[Tool] = (),
        system: llm.SystemPrompt | None = None,
        max_turns: int = 100,
        max_tokens: int = 32_000,
        output_cap: int = DEFAULT_CAP_BYTES,
        is_interactive: InteractiveCheck | None = None,
        on_event: EventSink | None = None,
        messages: Sequence[llm.Message] = (),
        usage: llm.Usage | None = None,
        compactor: Compactor | None = None,
        effort: llm.Effort | None = None,
        budget: Budget | None = None,
        output_limit: OutputLimit | None = None,
        steering: Steering | None = None,
    ) -> None:
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self._provider = provider
        self._tools = {tool.spec.name: tool for tool in tools}
        self._specs = tuple(tool.spec for tool in self._tools.values())
        self._validators: dict[str, Validator] = {}
        self._system = system or llm.SystemPrompt()
        self._max_turns = max_turns
        self._max_tokens = max_tokens
        self._output_cap = output_cap
        self._is_interactive = is_interactive
        self._sinks: list[EventSink] = [on_event] if on_event else []
        self._messages = [copy_message(m) for m in messages]
        self._usage = usage or llm.Usage()
        self._compactor = compactor
        self._effort = effort
        self._budget = budget
        self._output_limit = output_limit
        self._steering = steering
        # Responses cut at the output limit in a row, and the max_tokens of
        # the next call when a continuation raised it.
        self._cuts = 0
        self._raised_max_tokens: int | None = None
        self._turn = 0
        # What tools reported spending since `send` last counted it.
        self._tool_usage = llm.Usage()
        # The first exception an event consumer raised, until it can be raised.
        self._sink_error: Exception | None = None
        # The prompt's size as the provider last counted it, and how many
        # messages that count covered; None: estimate it all (a restored
        # session, or just after a compaction).
        self._measured: tuple[int, int] | None = None

    @property
    def usage(self) -> llm.Usage:
        """Tokens used over the agent's whole life, restored ones included."""
        return self._usage

    def prompt_tokens(self) -> int:
        """The next request's size in tokens: as the provider counted the last
        one, with an estimate of what joined the conversation since."""
        return self._prompt_tokens()

    def transcript(self) -> list[llm.Message]:
        """A copy of the conversation that the caller may change freely."""
        return [copy_message(message) for message in self._messages]

    def subscribe(self, sink: EventSink) -> Callable[[], None]:
        """Add an event consumer; returns the function that removes it."""
        self._sinks.append(sink)
        return lambda: self._sinks.remove(sink)

    async def send(self, text: str, attachments: Sequence[llm.Text | llm.Image] = ()) -> TurnResult:
        """Add the user's text (and `attachments` after it: images the task
        shows) and run until the model ends its turn.

        Raises an `AgentError` or a provider error when the turn fails, and
        lets cancellation through; in every case the transcript stays valid
        for the next call: each tool_use in it has its tool_result.
        """
        # What a consumer raised while an earlier turn was already failing is
        # that turn's: the new one starts clean.
        self._sink_error = None
        self._tool_usage = llm.Usage()
        self._cuts, self._raised_max_tokens = 0, None
        self._append_user(llm.Text(text), *attachments)
        usage = llm.Usage()
        turns = 0
        try:
            while True:
                self._raise_sink_error()
                if turns >= self._max_turns:
                    raise MaxTurns(f"stopped after {turns} model calls (max turns)")
                await self._steer(ending=False)
                usage = usage + await self._compact(overflowed=False)
                if self._budget is not None:
                    self._budget.before_call(turns + 1, usage, self._prompt_tokens())
                turns += 1
                self._turn = turns
                self._emit(ev.TurnStarted(turns))
                self._raise_sink_error()
                try:
                    response = await self._call_provider()
                except ContextOverflow:
                    # The provider counted more than we estimated: compact
                    # whatever the size, and try once more.
                    spent = await self._compact(overflowed=True)
                    if spent is None:
                        raise
                    usage = usage + spent
                    response = await self._call_provider()
                usage = usage + response.usage
                self._usage = self._usage + response.usage
                self._measure(response)
                more = await self._handle(response)
                usage = usage + self._take_tool_usage()
                # A message that came while the model was ending its turn is
                # answered, not lost: the turn goes on with it (after a
                # refusal too: the person may have changed the request). Not
                # on the last call the turns allow: the message would turn a
                # finished run into one stopped by max turns; the source
                # keeps it.
                last_call = turns >= self._max_turns
                if not more and (last_call or not await self._steer(ending=True)):
                    break
        except asyncio.CancelledError:
            usage = usage + self._take_tool_usage()
            self._emit(ev.TurnFinished(None, "", usage, "interrupted", "interrupted"))
            raise
        except NeoError as error:
            usage = usage + self._take_tool_usage()
            self._emit(ev.TurnFinished(None, self._last_text(), usage, error.kind, str(error)))
            raise
        result = TurnResult(self._last_text(), response.stop_reason, turns, usage)
        self._emit(ev.TurnFinished(result.stop_reason, result.text, usage))
        self._raise_sink_error()
        return result

    async def _steer(self, *, ending: bool) -> bool:
        """Add what `steering` has for the model; True when something was added.

        Before a request only after a user message (the task, tool results,
        a note): a paused turn's response is replayed as it is. `ending`: the
        model has just finished its turn.
        """
        if self._steering is None:
            return False
        if not ending and (not self._messages or self._messages[-1].role != "user"):
            return False
        steers = await self._steering.take()
        if not steers:
            return False
        self._append_user(*(llm.Text(steer.text) for steer in steers))
        for steer in steers:
            self._emit(steer)
        return True

    # -- compaction --------------------------------------------------------

    @overload
    async def _compact(self, *, overflowed: Literal[False]) -> llm.Usage: ...
    @overload
    async def _compact(self, *, overflowed: Literal[True]) -> llm.Usage | None: ...

    async def _compact(self, *, overflowed: bool) -> llm.Usage | None:
        """Let the compactor rewrite the transcript; the usage of its own call,
        counted here into the agent's usage. None when an overflowed prompt was
        left as it was (another call would fail the same way)."""
        if self._compactor is None:
            return None if overflowed else llm.Usage()
        state = PromptState(
            messages=tuple(copy_message(m) for m in self._messages),
            system=self._system,
            tools=self._specs,
            tokens=self._prompt_tokens(),
            max_tokens=self._raised_max_tokens or self._max_tokens,
            overflowed=overflowed,
        )
        compaction = await self._compactor.compact(state)
        if compaction is None:
            return None if overflowed else llm.Usage()
        self._usage = self._usage + compaction.usage
        self._messages = [copy_message(m) for m in compaction.messages]
        self._measured = None
        self._emit(
            ev.Compacted(
                compaction.stage,
                compaction.tokens_before,
                compaction.tokens_after,
                compaction.usage,
            )
        )
        return compaction.usage

    def _prompt_tokens(self) -> int:
        if self._measured is None:
            return estimate_prompt(self._messages, self._system, self._specs)
        tokens, covered = self._measured
        return tokens + estimate_messages(self._messages[covered:])

    def _measure(self, response: llm.Response) -> None:
        if self._compactor is None:
            return
        used = response.usage
        sent = used.input_tokens + used.cache_creation_input_tokens + used.cache_read_input_tokens
        # What the provider was sent, counted by it; the response and the tool
        # results that follow are estimated until the next call counts them.
        self._measured = (sent, len(self._messages)) if sent else None

    async def wrap_up(self, text: str) -> TurnResult:
        """One more provider call, with no tool to call: the model's last word.

        For a run a budget stopped (turns, time, cost, the window): `text`
        says so, and the answer, kept as text, becomes the run's summary.
        Its usage is counted like any call's.
        """
        self._append_user(llm.Text(text))
        response = await self._call_provider(tools_allowed=False)
        self._usage = self._usage + response.usage
        self._commit_text(response)
        return TurnResult(self._last_text(), response.stop_reason, 1, response.usage)

    async def _handle(self, response: llm.Response) -> bool:
        """Apply the stop-reason table; True means call the provider again."""
        reason = response.stop_reason
        # What the call that gave `response` was allowed; a raise is for one call.
        allowed, self._raised_max_tokens = self._raised_max_tokens or self._max_tokens, None
        self._cuts = self._cuts + 1 if reason == llm.MAX_TOKENS else 0
        if reason == llm.MAX_TOKENS and self._output_limit is not None:
            go_on = self._output_limit.continuation(self._cuts, allowed)
            if go_on is not None:
                self._continue_cut(response, go_on)
                return True
        if reason == llm.TOOL_USE:
            calls = response.tool_uses
            if not calls:
                self._commit_text(response)
                # Nothing to run means nothing to answer with: the next
                # request would be the same one, until max turns.
                raise MissingToolCall("the model stopped for tool use but called no tool")
            await self._run_tools(response, calls)
            return True
        self._commit_text(response)
        if reason in _COMPLETE:
            return False
        if reason == llm.PAUSE_TURN:
            return True
        if reason == llm.MAX_TOKENS:
            times = f" {self._cuts} times in a row" if self._cuts > 1 else ""
            raise MaxOutputTokens(f"the response hit the output token limit{times}")
        if reason == llm.CONTEXT_WINDOW_EXCEEDED:
            raise ContextWindowExceeded("the conversation no longer fits the context window")
        raise UnexpectedStopReason(f"unexpected stop reason {reason!r}")

    def _continue_cut(self, response: llm.Response, go_on: Continuation) -> None:
        """Keep what a cut response said, tell the model so, and allow the next
        call `go_on.max_tokens`. A tool call it was making is incomplete and
        not run; its thinking, cut too, is not replayed."""
        kept = tuple(b for b in response.content if isinstance(b, llm.Text | llm.Image))
        self._emit_assistant(kept, response)
        self._commit_assistant(kept, response.usage)
        self._append_user(llm.Text(go_on.note))
        self._raised_max_tokens = go_on.max_tokens

    async def _call_provider(self, *, tools_allowed: bool = True) -> llm.Response:
        # A continuation's raise is for the next call that may go on working.
        max_tokens = self._max_tokens
        if tools_allowed and self._raised_max_tokens is not None:
            max_tokens = self._raised_max_tokens
        # The provider gets its own copy, and the loop keeps its own of the
        # response: neither side can rewrite the transcript through the other.
        request = llm.Request(
            messages=tuple(copy_message(m) for m in self._messages),
            system=self._system,
            tools=self._specs,
            max_tokens=max_tokens,
            effort=self._effort,
            tool_choice="auto" if tools_allowed else "none",
        )
        async for event in self._provider.stream(request):
            if isinstance(event, TextDelta):
                self._emit(ev.TextDelta(event.text))
            elif isinstance(event, Retrying):
                self._emit(
                    ev.ProviderRetry(event.attempt, event.delay, event.reason, event.fallback)
                )
            elif isinstance(event, Completed):
                return copy_response(event.response)
        raise ProviderConnectionError(f"{self._provider.name}: the stream ended without a response")

    # -- transcript --------------------------------------------------------

    def _append_user(self, *blocks: llm.Block) -> None:
        # After a failed turn the transcript can end with a user message (tool
        # results, or text the model never answered); the new text joins it so
        # roles keep alternating.
        if self._messages and self._messages[-1].role == "user":
            last = self._messages.pop()
            blocks = last.content + blocks
        self._messages.append(llm.Message("user", blocks))

    def _commit_assistant(self, content: tuple[llm.Block, ...], usage: llm.Usage) -> None:
        if not content:
            return
        # A paused turn is continued by the next response: one message.
        if self._messages and self._messages[-1].role == "assistant":
            last = self._messages.pop()
            content = last.content + content
            usage = (last.usage or llm.Usage()) + usage
        message = llm.Message("assistant", content, usage)
        self._messages.append(message)

    def _commit_text(self, response: llm.Response) -> None:
        """Keep the response but never its tool calls: an unanswered tool_use
        would make the next request invalid."""
        kept = tuple(b for b in response.content if not isinstance(b, llm.ToolUse))
        self._emit_assistant(kept, response)
        self._commit_assistant(kept, response.usage)

    def _emit_assistant(self, content: tuple[llm.Block, ...], response: llm.Response) -> None:
        if self._sinks and content:
            message = copy_message(llm.Message("assistant", content, response.usage))
            self._emit(ev.AssistantMessage(message, response.stop_reason))

    def _last_text(self) -> str:
        last = self._messages[-1] if self._messages else None
        return last.text if last is not None and last.role == "assistant" else ""

    # -- tools -------------------------------------------------------------

    def _take_tool_usage(self) -> llm.Usage:
        """What tools spent since the last take, counted once into the turn's usage."""
        spent, self._tool_usage = self._tool_usage, llm.Usage()
        return spent

    async def _run_tools(self, response: llm.Response, calls: tuple[llm.ToolUse, ...]) -> None:
        results: list[llm.ToolResult | None] = [None] * len(calls)
        self._emit_assistant(response.content, response)

        async def run(index: int) -> None:
            results[index] = await self._run_tool(calls[index])

        try:
            batch: list[int] = []
            for index, call in enumerate(calls):
                if self._is_interactive is not None and self._is_interactive(call):
                    await _gather(run, batch)
                    batch = []
                    await run(index)
                else:
                    batch.append(index)
            await _gather(run, batch)
        finally:
            # The assistant message and its results enter the transcript
            # together, also when cancelled midway.
            answered = tuple(
                result or llm.ToolResult(call.id, (llm.Text(_CANCELLED_RESULT),), is_error=True)
                for call, result in zip(calls, results, strict=True)
            )
            self._commit_assistant(response.content, response.usage)
            note = self._budget.note(self._turn) if self._budget is not None else None
            extra = (llm.Text(note),) if note else ()
            self._messages.append(llm.Message("user", (*answered, *extra)))

    async def _run_tool(self, call: llm.ToolUse) -> llm.ToolResult:
        self._emit(ev.ToolStarted(call.id, call.name, copy_object(call.input)))
        started = time.monotonic()
        output = await self._invoke(call)
        blocks = (llm.Text(output.content),) if isinstance(output.content, str) else output.content
        content = tuple(
            llm.Text(
                cap_text(
                    b.text,
                    self._output_cap,
                    total_bytes=output.total_bytes,
                    total_lines=output.total_lines,
                )
            )
            if isinstance(b, llm.Text)
            else b
            for b in blocks
        )
        original = "".join(b.text for b in blocks if isinstance(b, llm.Text))
        capped = "".join(b.text for b in content if isinstance(b, llm.Text))
        size = output.total_bytes or len(original.encode("utf-8", "surrogatepass"))
        self._emit(
            ev.ToolFinished(
                call.id,
                call.name,
                output.is_error,
                capped,
                size,
                capped != original,
                int((time.monotonic() - started) * 1000),
            )
        )
        return llm.ToolResult(call.id, content, output.is_error)

    async def _invoke(self, call: llm.ToolUse) -> ToolOutput:
        tool = self._tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return ToolOutput(f"unknown tool {call.name!r}; available tools: {known}", True)
        problem = self._validate(tool, call.input)
        if problem:
            return ToolOutput(f"invalid input for {call.name}: {problem}", True)

        def notify(payload: object) -> None:
            self._emit(ev.ToolNotice(call.id, call.name, payload))

        def spend(usage: llm.Usage) -> None:
            self._usage = self._usage + usage
            self._tool_usage = self._tool_usage + usage

        try:
            # The tool gets its own copy: changing it cannot rewrite the
            # tool_use already in the transcript.
            return await tool(
                copy_object(call.input), ToolContext(call.id, notify, spend, self._output_cap)
            )
        except ToolError as error:
            return ToolOutput(str(error), is_error=True)
        except Exception as error:  # a tool's bug must not break the transcript
            return ToolOutput(f"{call.name} failed: {type(error).__name__}: {error}", True)

    def _validate(self, tool: Tool, args: llm.JSONObject) -> str:
        name = tool.spec.name
        validator = self._validators.get(name)
        if validator is None:
            schema = dict(tool.spec.input_schema)
            validator = jsonschema.validators.validator_for(schema)(schema)
            self._validators[name] = validator
        error = jsonschema.exceptions.best_match(validator.iter_errors(args))
        if error is None:
            return ""
        where = "/".join(str(part) for part in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message

    def _emit(self, event: ev.Event) -> None:
        for sink in tuple(self._sinks):
            try:
                sink(event)
            except Exception as error:
                # Not raised here, where it would cancel the other calls of a
                # tool batch, but at the next point where the transcript is
                # whole (`_raise_sink_error`).
                if self._sink_error is None:
                    self._sink_error = error

    def _raise_sink_error(self) -> None:
        error, self._sink_error = self._sink_error, None
        if error is not None:
            raise error


async def _gather(run: Callable[[int], Coroutine[Any, Any, None]], indexes: list[int]) -> None:
    """Run the calls at `indexes` concurrently; each stores its own result."""
    if len(indexes) == 1:
        await run(indexes[0])
        return
    async with asyncio.TaskGroup() as group:
        for index in indexes:
            group.create_task(run(index))
