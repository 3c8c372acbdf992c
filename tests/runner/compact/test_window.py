"""The window compactor inside the loop, against the fake Messages API and scripts.

The fake refuses what the real API refuses: an invalid transcript, and (with
`context_window` set) a prompt longer than the window, with Anthropic's own
400 `prompt is too long`. So each test's later requests also check that
compaction left a transcript the API accepts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.agent import Agent, Compacted, Event
from runner.compact import CLEARED_MARK, CompactionPolicy, PromptState, WindowCompactor
from runner.compact.requests import user_requests
from runner.compact.summary import SUMMARY_SYSTEM
from runner.llm.anthropic import AnthropicProvider
from runner.llm.errors import ContextOverflow
from runner.llm.limits import ModelLimits
from runner.llm.provider import Completed, StreamEvent
from runner.llm.retry import RetryPolicy
from runner.llm.types import (
    TOOL_USE,
    JSONObject,
    Message,
    Request,
    Response,
    SystemPrompt,
    Text,
    ToolResult,
    ToolSpec,
    ToolUse,
    Usage,
)
from runner.tools.base import ToolContext, ToolOutput
from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use
from tests.fakes.anthropic_api import prompt_tokens
from tests.fakes.scripted import ScriptedProvider, says
from tests.runner.compact.transcripts import problems

TASK = "Read every log and say what failed."
OUTPUT = 30_000  # bytes each tool call returns


class BigRead:
    """A tool that returns `size` bytes of text per call (default OUTPUT)."""

    def __init__(self, size: int = OUTPUT) -> None:
        self.size = size

    spec = ToolSpec(
        "read_log",
        "Read a log.",
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    )

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        line = f"log {args['n']}: all quiet here\n"
        return ToolOutput((line * (self.size // len(line) + 1))[: self.size])


def long_task(turns: int) -> Any:
    """The fake's replies: `turns` tool calls, then an answer; summaries when asked."""
    made = 0

    def reply(body: dict[str, Any]) -> Reply:
        nonlocal made
        if not body.get("tools"):
            return Reply([text("## Task\n- read the logs\n## Next steps\n- read the rest")])
        if made < turns:
            made += 1
            return Reply([tool_use(f"c{made}", "read_log", {"n": made})], "tool_use")
        return Reply([text("All logs read: nothing failed.")])

    return reply


def agent(
    provider: Any,
    *,
    compactor: WindowCompactor | None,
    events: list[Event],
    output: int = OUTPUT,
) -> Agent:
    return Agent(
        provider,
        tools=[BigRead(output)],
        max_turns=200,
        max_tokens=4_000,
        compactor=compactor,
        on_event=events.append,
    )


@pytest.fixture
async def provider(fake_anthropic: FakeAnthropicAPI) -> AsyncIterator[AnthropicProvider]:
    opened = AnthropicProvider(
        "claude-sonnet-5-5",
        api_key=fake_anthropic.api_key,
        base_url=fake_anthropic.base_url,
        retry=RetryPolicy(max_retries=0),
    )
    yield opened
    await opened.aclose()


def scripted(fake: FakeAnthropicAPI, turns: int) -> None:
    reply = long_task(turns)
    # One factory per request the run can make, summaries included.
    fake.script(*([reply] * (turns * 3 + 5)))


async def test_without_compaction_a_long_run_fails_on_prompt_is_too_long(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    fake_anthropic.context_window = 60_000
    scripted(fake_anthropic, 60)
    with pytest.raises(ContextOverflow) as raised:
        await agent(provider, compactor=None, events=[]).send(TASK)
    assert raised.value.kind == "context_window_exceeded"
    assert "prompt is too long" in str(raised.value)


async def test_a_60_turn_run_with_30kb_outputs_finishes_within_the_window(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    fake_anthropic.context_window = 60_000
    scripted(fake_anthropic, 60)
    events: list[Event] = []
    compactor = WindowCompactor(provider, limits=ModelLimits(60_000, 4_000))
    a = agent(provider, compactor=compactor, events=events)

    result = await a.send(TASK)

    assert result.text == "All logs read: nothing failed."
    assert result.turns == 61
    compactions = [e for e in events if isinstance(e, Compacted)]
    assert compactions
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    sizes = [prompt_tokens(r.body) for r in fake_anthropic.requests]
    assert max(sizes) <= 60_000
    assert problems(a.transcript(), answered=True) == []
    # Each of the 60 calls is still answered, most of them by a note.
    results = [b for m in a.transcript() for b in m.content if isinstance(b, ToolResult)]
    assert len(results) == 60
    assert sum(r.text.startswith(CLEARED_MARK) for r in results) >= 50


async def test_summarising_keeps_the_task_verbatim_and_a_valid_tail(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    fake_anthropic.context_window = 60_000
    scripted(fake_anthropic, 20)
    events: list[Event] = []
    # Clearing alone cannot help: it keeps more results than the window holds.
    compactor = WindowCompactor(
        provider, limits=ModelLimits(60_000, 4_000), policy=CompactionPolicy(keep_results=100)
    )
    a = agent(provider, compactor=compactor, events=events)

    result = await a.send(TASK)

    assert result.text == "All logs read: nothing failed."
    stages = [e.stage for e in events if isinstance(e, Compacted)]
    assert "summarised" in stages
    summaries = [r.body for r in fake_anthropic.requests if not r.body.get("tools")]
    assert summaries
    assert summaries[0]["system"][0]["text"] == SUMMARY_SYSTEM
    first = a.transcript()[0]
    assert first.role == "user"
    assert first.content[0] == Text(f"Current request:\n\n{TASK}")
    assert "## Next steps" in first.text
    assert problems(a.transcript(), answered=True) == []


async def test_a_prompt_the_provider_refuses_is_compacted_and_sent_again(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    # The compactor believes in a large window; the API refuses far earlier.
    fake_anthropic.context_window = 40_000
    scripted(fake_anthropic, 12)
    events: list[Event] = []
    compactor = WindowCompactor(provider, limits=ModelLimits(1_000_000, 4_000))
    a = agent(provider, compactor=compactor, events=events)

    result = await a.send(TASK)

    assert result.text == "All logs read: nothing failed."
    assert [e.stage for e in events if isinstance(e, Compacted)][:1] == ["summarised"]
    assert problems(a.transcript(), answered=True) == []


# --- exact usage, with scripted sizes --------------------------------------------


def call(n: int, prompt: int) -> Response:
    return Response((ToolUse(f"c{n}", "read_log", {"n": n}),), TOOL_USE, Usage(prompt, 7, 11, 13))


async def test_the_compactors_usage_is_counted_exactly_once() -> None:
    limits = ModelLimits(10_000, 1_000)
    # Reported prompt sizes cross clearing (5,000: nothing old enough to clear)
    # and then summarising (7,000).
    responses = [call(1, 1_000), call(2, 5_500), call(3, 5_600), call(4, 9_800)]
    summary = Response((Text("## Task\n- go on"),), "end_turn", Usage(400, 90, 0, 3))
    final = says("done")
    provider = ScriptedProvider(*responses, summary, final)
    events: list[Event] = []
    compactor = WindowCompactor(provider, limits=limits)
    a = agent(provider, compactor=compactor, events=events, output=10)

    result = await a.send(TASK)

    expected = Usage()
    for response in (*responses, summary, final):
        expected = expected + response.usage
    assert result.usage == expected
    assert a.usage == expected
    stages = [e.stage for e in events if isinstance(e, Compacted)]
    assert stages == ["summarised"]
    tool_less = [r for r in provider.requests if not r.tools]
    assert len(tool_less) == 1


# --- any transcript, cut anywhere ----------------------------------------------------


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    messages = [Message("user", (Text(TASK),))]
    for n in range(draw(st.integers(0, 25))):
        calls = draw(st.integers(0, 3))
        words = Text(draw(st.text(max_size=40)) or "thinking")
        uses = tuple(ToolUse(f"t{n}-{i}", "read_log", {"n": i}) for i in range(calls))
        messages.append(Message("assistant", (words, *uses)))
        if uses:
            results = tuple(
                ToolResult(u.id, (Text("x" * draw(st.integers(0, 4_000))),), draw(st.booleans()))
                for u in uses
            )
            messages.append(Message("user", results))
        else:
            messages.append(Message("user", (Text(draw(st.text(min_size=1, max_size=40))),)))
    return messages


class Summariser:
    name = "summariser"
    model = "claude-sonnet-5-5"

    def __init__(self) -> None:
        self.requests: list[Request] = []

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        yield Completed(Response((Text("## Task\n- notes"),), "end_turn", Usage(5, 5)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=transcripts(), tail=st.floats(0.0, 0.5), keep=st.integers(0, 5))
async def test_a_compacted_transcript_is_always_valid(
    messages: list[Message], tail: float, keep: int
) -> None:
    summariser = Summariser()
    policy = CompactionPolicy(tail_share=tail, keep_results=keep)
    compactor = WindowCompactor(summariser, limits=ModelLimits(4_000, 500), policy=policy)
    state = PromptState(
        messages=tuple(messages),
        system=SystemPrompt(("base",)),
        tools=(BigRead.spec,),
        tokens=5_000,
        max_tokens=500,
        overflowed=True,
    )
    compaction = await compactor.compact(state)

    assert compaction is not None
    assert problems(compaction.messages) == []
    # Every request is in the head, the latest as the current one, in order.
    asked = user_requests(messages)
    assert user_requests(compaction.messages[:1]) == asked
    assert compaction.messages[0].content[len(asked) - 1] == Text(
        f"Current request:\n\n{asked[-1]}"
    )
    kept = len(compaction.messages) - 1
    if kept:
        # The tail is the original's end, with old results cleared at most.
        for new, old in zip(compaction.messages[1:], messages[-kept:], strict=True):
            assert new.role == old.role
            assert [type(b) for b in new.content] == [type(b) for b in old.content]


# --- cancelled while summarising ---------------------------------------------------


class StallsOnSummary:
    name = "stalls"
    model = "claude-sonnet-5-5"

    def __init__(self, *responses: Response) -> None:
        self._responses = list(responses)
        self.summarising = asyncio.Event()

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        if not request.tools:
            self.summarising.set()
            await asyncio.sleep(3600)
        yield Completed(self._responses.pop(0))


async def test_cancelled_during_the_summary_the_transcript_stays_valid(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    stalling = StallsOnSummary(call(1, 100), call(2, 9_900))
    a = agent(
        stalling,
        compactor=WindowCompactor(stalling, limits=ModelLimits(10_000, 1_000)),
        events=[],
        output=10,
    )
    task = asyncio.create_task(a.send(TASK))
    await asyncio.wait_for(stalling.summarising.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    transcript = a.transcript()
    assert problems(transcript) == []
    assert len([m for m in transcript if m.role == "assistant"]) == 2
    # And the real API's fake takes it as it is.
    fake_anthropic.script(Reply([text("Picked up where it stopped.")]))
    resumed = Agent(provider, tools=[BigRead()], messages=transcript)
    assert (await resumed.send("Go on.")).text == "Picked up where it stopped."
    assert json.dumps(fake_anthropic.requests[-1].body["messages"][0]).count(TASK) == 1
