"""The agent loop against the real SDK and the fake Messages API.

The fake rejects what the real API rejects (roles out of turn, a tool_use not
answered in the very next message), so every follow-up request here also
checks that the loop left a valid transcript behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from runner.agent import (
    Agent,
    AssistantMessage,
    ContextWindowExceeded,
    Event,
    MaxOutputTokens,
    MaxTurns,
    MissingToolCall,
    TextDelta,
    ToolFinished,
    ToolNotice,
    ToolStarted,
    TurnFinished,
    TurnStarted,
    UnexpectedStopReason,
)
from runner.llm.anthropic import AnthropicProvider
from runner.llm.provider import Completed, StreamEvent
from runner.llm.retry import RetryPolicy
from runner.llm.types import (
    JSONObject,
    Request,
    Response,
    Text,
    ToolResult,
    ToolSpec,
    ToolUse,
    Usage,
)
from runner.tools.base import ToolContext, ToolError, ToolOutput
from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use
from tests.fakes import Usage as WireUsage

SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"value": {"type": "string"}},
    "required": ["value"],
    "additionalProperties": False,
}


class FnTool:
    """A real tool whose body is the test's function."""

    def __init__(
        self, name: str, body: Callable[[JSONObject, ToolContext], Awaitable[ToolOutput]]
    ) -> None:
        self._spec = ToolSpec(name, f"The {name} test tool.", SCHEMA)
        self._body = body

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        return await self._body(args, ctx)


async def _echo(args: JSONObject, ctx: ToolContext) -> ToolOutput:
    return ToolOutput(f"echo: {args['value']}")


def echo() -> FnTool:
    return FnTool("echo", _echo)


_providers: list[AnthropicProvider] = []


@pytest.fixture(autouse=True)
async def _close_providers() -> AsyncIterator[None]:
    yield
    while _providers:
        await _providers.pop().aclose()


def make_agent(fake: FakeAnthropicAPI, *tools: Any, **options: Any) -> tuple[Agent, list[Event]]:
    events: list[Event] = []
    provider = AnthropicProvider(
        "claude-sonnet-5-5",
        api_key=fake.api_key,
        base_url=fake.base_url,
        retry=RetryPolicy(max_retries=0),
    )
    _providers.append(provider)
    agent = Agent(provider, tools=tools or (echo(),), on_event=events.append, **options)
    return agent, events


def results_in(fake: FakeAnthropicAPI, request: int) -> list[dict[str, Any]]:
    """The tool_result blocks sent in the last message of request `request`."""
    last = fake.requests[request].body["messages"][-1]
    return [b for b in last["content"] if b["type"] == "tool_result"]


# -- the stop-reason table, row by row ---------------------------------------


@pytest.mark.parametrize("reason", ["end_turn", "stop_sequence", None, "refusal"])
async def test_completing_stop_reasons_end_the_turn_after_one_call(
    fake_anthropic: FakeAnthropicAPI, reason: str | None
) -> None:
    fake_anthropic.script(Reply([text("The answer.")], stop_reason=reason))
    agent, _ = make_agent(fake_anthropic)

    result = await agent.send("question")

    assert result.text == "The answer."
    assert result.stop_reason == reason
    assert result.turns == 1
    assert len(fake_anthropic.requests) == 1
    assert [m.role for m in agent.transcript()] == ["user", "assistant"]


async def test_tool_use_runs_tools_and_continues(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(
        Reply([text("Echoing."), tool_use("toolu_1", "echo", {"value": "hi"})], "tool_use"),
        Reply([text("It said hi.")]),
    )
    agent, _ = make_agent(fake_anthropic)

    result = await agent.send("echo hi")

    assert result.text == "It said hi."
    assert result.turns == 2
    assert results_in(fake_anthropic, 1) == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [{"type": "text", "text": "echo: hi"}],
            "cache_control": {"type": "ephemeral"},
        }
    ]


async def test_tool_use_without_a_call_fails_after_one_call(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.script(Reply([text("I will call a tool.")], "tool_use"), Reply([text("ok")]))
    agent, _ = make_agent(fake_anthropic)

    with pytest.raises(MissingToolCall) as caught:
        await agent.send("go")

    assert caught.value.kind == "missing_tool_call"
    assert len(fake_anthropic.requests) == 1
    assert agent.transcript()[-1].text == "I will call a tool."
    # The transcript is still a valid conversation.
    await agent.send("again")
    assert len(fake_anthropic.requests) == 2


@pytest.mark.parametrize(
    ("reason", "error"),
    [
        ("max_tokens", MaxOutputTokens),
        ("model_context_window_exceeded", ContextWindowExceeded),
        ("something_new", UnexpectedStopReason),
    ],
)
async def test_failing_stop_reasons_keep_text_drop_calls_and_cost_one_call(
    fake_anthropic: FakeAnthropicAPI, reason: str, error: type[Exception]
) -> None:
    fake_anthropic.script(
        Reply([text("Partial answer"), tool_use("toolu_9", "echo", {"value": "x"})], reason),
        Reply([text("recovered")]),
    )
    agent, events = make_agent(fake_anthropic)

    with pytest.raises(error):
        await agent.send("go")

    assert len(fake_anthropic.requests) == 1
    last = agent.transcript()[-1]
    assert last.role == "assistant"
    assert last.content == (Text("Partial answer"),)
    assert not any(isinstance(e, ToolStarted) for e in events)
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    assert finished.error == error.kind  # type: ignore[attr-defined]
    assert finished.text == "Partial answer"
    # No unanswered tool_use was left: the next request is accepted.
    assert (await agent.send("continue")).text == "recovered"


async def test_pause_turn_replays_the_response_and_continues(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.script(
        Reply([text("Searching...")], stop_reason="pause_turn"),
        Reply([text(" found it.")]),
    )
    agent, _ = make_agent(fake_anthropic)

    result = await agent.send("search")

    assert result.turns == 2
    second = fake_anthropic.requests[1].body["messages"]
    assert second[-1]["role"] == "assistant"
    assert second[-1]["content"][0]["text"] == "Searching..."
    transcript = agent.transcript()
    assert [m.role for m in transcript] == ["user", "assistant"]
    assert transcript[-1].text == "Searching... found it."


async def test_unknown_stop_reason_costs_exactly_one_call(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.script(*[Reply([text("?")], stop_reason="mystery")] * 5)
    agent, _ = make_agent(fake_anthropic, max_turns=50)

    with pytest.raises(UnexpectedStopReason, match="mystery"):
        await agent.send("go")

    assert len(fake_anthropic.requests) == 1


# -- tools ---------------------------------------------------------------------


async def test_a_raising_tool_becomes_an_error_result(fake_anthropic: FakeAnthropicAPI) -> None:
    async def broken(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        raise RuntimeError("disk on fire")

    async def picky(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        raise ToolError("no match for 'x' in a.py")

    fake_anthropic.script(
        Reply(
            [
                tool_use("toolu_1", "broken", {"value": "a"}),
                tool_use("toolu_2", "picky", {"value": "b"}),
                tool_use("toolu_3", "echo", {"wrong": 1}),
                tool_use("toolu_4", "nonexistent", {}),
            ],
            "tool_use",
        ),
        Reply([text("handled")]),
    )
    agent, _ = make_agent(fake_anthropic, FnTool("broken", broken), FnTool("picky", picky), echo())

    assert (await agent.send("go")).text == "handled"

    sent = {r["tool_use_id"]: r for r in results_in(fake_anthropic, 1)}
    assert all(r["is_error"] is True for r in sent.values())
    assert sent["toolu_1"]["content"][0]["text"] == "broken failed: RuntimeError: disk on fire"
    assert sent["toolu_2"]["content"][0]["text"] == "no match for 'x' in a.py"
    invalid = sent["toolu_3"]["content"][0]["text"]
    assert invalid.startswith("invalid input for echo: ")
    assert "'value' is a required property" in invalid or "wrong" in invalid
    assert sent["toolu_4"]["content"][0]["text"].startswith("unknown tool 'nonexistent'")


async def test_oversized_output_is_capped_with_a_marker(fake_anthropic: FakeAnthropicAPI) -> None:
    big = "".join(f"line {i:07d} " + "x" * 83 + "\n" for i in range(52_429))  # ~5 MB

    async def loud(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(big)

    fake_anthropic.script(
        Reply([tool_use("toolu_1", "loud", {"value": "go"})], "tool_use"), Reply([text("ok")])
    )
    agent, events = make_agent(fake_anthropic, FnTool("loud", loud))

    await agent.send("print a lot")

    sent = results_in(fake_anthropic, 1)[0]["content"][0]["text"]
    size = len(big.encode())
    marker = f"{size:,} bytes in 52,429 lines"
    assert marker in sent
    assert len(sent.encode()) <= 32 * 1024 + 200
    assert sent.startswith("line 0000000 ")
    assert sent.rstrip().endswith("x")
    assert "line 0052428 " in sent
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert finished.truncated
    assert finished.output_bytes == size


async def test_cap_is_configurable(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "echo", {"value": "y" * 5000})], "tool_use"),
        Reply([text("ok")]),
    )
    agent, _ = make_agent(fake_anthropic, output_cap=1024)

    await agent.send("go")

    sent = results_in(fake_anthropic, 1)[0]["content"][0]["text"]
    assert "5,006 bytes in 1 lines" in sent
    assert len(sent.encode()) < 1024 + 200


async def test_parallel_tools_run_concurrently_and_answer_in_call_order(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    started: list[str] = []
    all_started = asyncio.Event()

    async def slow(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        value = str(args["value"])
        started.append(value)
        if len(started) == 3:
            all_started.set()
        # Every call waits for the others: this only finishes if they overlap.
        await asyncio.wait_for(all_started.wait(), timeout=5)
        await asyncio.sleep({"a": 0.06, "b": 0.03, "c": 0.0}[value])
        return ToolOutput(f"done {value}")

    fake_anthropic.script(
        Reply([tool_use(f"toolu_{v}", "slow", {"value": v}) for v in "abc"], "tool_use"),
        Reply([text("ok")]),
    )
    agent, events = make_agent(fake_anthropic, FnTool("slow", slow))

    await agent.send("go")

    sent = results_in(fake_anthropic, 1)
    assert [r["tool_use_id"] for r in sent] == ["toolu_a", "toolu_b", "toolu_c"]
    assert [r["content"][0]["text"] for r in sent] == ["done a", "done b", "done c"]
    finished = [e.call_id for e in events if isinstance(e, ToolFinished)]
    assert finished == ["toolu_c", "toolu_b", "toolu_a"]


async def test_interactive_calls_run_one_at_a_time(fake_anthropic: FakeAnthropicAPI) -> None:
    running = 0
    most = 0

    async def counted(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        return ToolOutput("ok")

    fake_anthropic.script(
        Reply([tool_use(f"toolu_{i}", "counted", {"value": str(i)}) for i in range(4)], "tool_use"),
        Reply([text("ok")]),
    )
    agent, _ = make_agent(fake_anthropic, FnTool("counted", counted), is_interactive=lambda c: True)

    await agent.send("go")

    assert most == 1
    assert [r["tool_use_id"] for r in results_in(fake_anthropic, 1)] == [
        f"toolu_{i}" for i in range(4)
    ]


async def test_tool_notices_reach_the_event_stream(fake_anthropic: FakeAnthropicAPI) -> None:
    async def noisy(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        ctx.emit(("progress", args["value"]))
        return ToolOutput("ok")

    fake_anthropic.script(
        Reply([tool_use("toolu_1", "noisy", {"value": "half"})], "tool_use"), Reply([text("ok")])
    )
    agent, events = make_agent(fake_anthropic, FnTool("noisy", noisy))

    await agent.send("go")

    assert ToolNotice("toolu_1", "noisy", ("progress", "half")) in events


# -- ownership -------------------------------------------------------------------


async def test_no_consumer_can_change_the_agents_state(fake_anthropic: FakeAnthropicAPI) -> None:
    async def vandal(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        args["value"] = "rewritten by the tool"
        args["extra"] = [1, 2]
        return ToolOutput("ok")

    def vandalize(event: Event) -> None:
        if isinstance(event, ToolStarted):
            event.args["value"] = "rewritten by a UI"
        if isinstance(event, AssistantMessage):
            for block in event.message.content:
                if isinstance(block, ToolUse):
                    block.input["value"] = "rewritten by a UI"

    nested = {"value": "original"}
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "vandal", nested)], "tool_use"), Reply([text("ok")])
    )
    agent, _ = make_agent(fake_anthropic, FnTool("vandal", vandal))
    agent.subscribe(vandalize)

    await agent.send("go")
    copy = agent.transcript()
    call = copy[1].content[0]
    assert isinstance(call, ToolUse)
    assert call.input == {"value": "original"}
    call.input["value"] = "rewritten by the caller"
    copy.clear()

    again = agent.transcript()
    again_call = again[1].content[0]
    assert isinstance(again_call, ToolUse)
    assert again_call.input == {"value": "original"}
    assert len(again) == 4
    # The provider saw the original too.
    assert fake_anthropic.requests[1].body["messages"][1]["content"][0]["input"] == nested


class Vandal:
    """A provider that rewrites what it is sent, and later what it answered."""

    name = "vandal"
    model = "vandal-1"

    def __init__(self) -> None:
        self.sent: list[Request] = []
        self.answered: list[Response] = []

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        self.sent.append(request)
        for message in request.messages:
            for block in message.content:
                if isinstance(block, ToolUse):
                    block.input["value"] = "rewritten by the provider"
        if len(self.sent) == 1:
            response = Response((ToolUse("c1", "echo", {"value": "hi"}),), "tool_use")
        else:
            response = Response((Text("done"),), "end_turn")
        self.answered.append(response)
        yield Completed(response)


async def test_the_provider_cannot_rewrite_the_transcript_either_way() -> None:
    vandal = Vandal()
    agent = Agent(vandal, tools=[echo()])

    await agent.send("go")
    # After the fact, through the response it keeps.
    first = vandal.answered[0].content[0]
    assert isinstance(first, ToolUse)
    first.input["value"] = "rewritten later"

    call = agent.transcript()[1].content[0]
    assert isinstance(call, ToolUse)
    assert call.input == {"value": "hi"}


async def test_a_consumer_that_raises_breaks_no_tool_batch(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    def broken(event: Event) -> None:
        if isinstance(event, ToolStarted) and event.call_id == "toolu_1":
            raise RuntimeError("the UI fell over")

    fake_anthropic.script(
        Reply([tool_use(f"toolu_{n}", "echo", {"value": str(n)}) for n in range(3)], "tool_use"),
        Reply([text("all three")]),
    )
    agent, _ = make_agent(fake_anthropic)
    agent.subscribe(broken)

    # The failure surfaces once the batch is whole, before the next call.
    with pytest.raises(RuntimeError, match="the UI fell over"):
        await agent.send("go")

    results = [b for b in agent.transcript()[-1].content if isinstance(b, ToolResult)]
    assert [r.text for r in results] == ["echo: 0", "echo: 1", "echo: 2"]
    assert len(fake_anthropic.requests) == 1
    # And the transcript it left is one the API takes.
    assert (await agent.send("go on")).text == "all three"


async def test_a_consumer_that_fails_on_a_failing_turn_does_not_fail_the_next(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    def fails_on_errors(event: Event) -> None:
        if isinstance(event, TurnFinished) and event.error is not None:
            raise RuntimeError("the UI fell over on the error")

    fake_anthropic.script(
        Reply([tool_use("toolu_1", "echo", {"value": "a"})], "tool_use"),
        Reply([text("second turn")]),
    )
    agent, _ = make_agent(fake_anthropic, max_turns=1)
    agent.subscribe(fails_on_errors)
    with pytest.raises(MaxTurns):
        await agent.send("go")

    assert (await agent.send("go on")).text == "second turn"


class TellsAtTwo:
    """A budget that says something after the tools of the second call."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def before_call(self, turn: int, spent: Usage, prompt_tokens: int) -> None:
        self.asked.append(turn)

    def note(self, turn: int) -> str | None:
        return "[two calls used]" if turn == 2 else None


async def test_a_budget_note_follows_the_tool_results_of_its_turn(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    budget = TellsAtTwo()
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "echo", {"value": "a"})], "tool_use"),
        Reply([tool_use("toolu_2", "echo", {"value": "b"})], "tool_use"),
        Reply([text("done")]),
    )
    agent, _ = make_agent(fake_anthropic, budget=budget)

    await agent.send("go")

    assert budget.asked == [1, 2, 3]
    second, third = (r.body["messages"][-1]["content"] for r in fake_anthropic.requests[1:])
    assert [b["type"] for b in second] == ["tool_result"]
    assert [b["type"] for b in third] == ["tool_result", "text"]
    assert third[1]["text"] == "[two calls used]"


async def test_the_last_word_offers_no_tool_to_call(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "echo", {"value": "a"})], "tool_use"),
        Reply([text("I changed a; b is left."), tool_use("toolu_2", "echo", {"value": "b"})]),
    )
    agent, _ = make_agent(fake_anthropic, max_turns=1)
    with pytest.raises(MaxTurns):
        await agent.send("go")

    last = await agent.wrap_up("Out of turns: sum up.")

    assert last.text == "I changed a; b is left."
    sent = fake_anthropic.requests[-1].body
    assert sent["tool_choice"] == {"type": "none"}
    assert sent["messages"][-1]["content"][-1]["text"] == "Out of turns: sum up."
    # Its answer is kept as text only: no call is left unanswered.
    assert agent.transcript()[-1].tool_uses == ()


# -- limits and cancellation -----------------------------------------------------


async def test_max_turns_stops_with_a_valid_transcript(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(
        *[Reply([tool_use(f"toolu_{i}", "echo", {"value": "x"})], "tool_use") for i in range(3)]
    )
    agent, _ = make_agent(fake_anthropic, max_turns=3)

    with pytest.raises(MaxTurns) as caught:
        await agent.send("loop forever")

    assert caught.value.kind == "max_turns"
    assert len(fake_anthropic.requests) == 3
    transcript = agent.transcript()
    assert transcript[-1].role == "user"
    assert isinstance(transcript[-1].content[0], ToolResult)
    fake_anthropic.script(Reply([text("fine")]))
    assert (await agent.send("stop now")).text == "fine"
    last_user = fake_anthropic.requests[-1].body["messages"][-1]["content"]
    assert [b["type"] for b in last_user] == ["tool_result", "text"]


async def test_cancelling_during_tools_answers_every_call(fake_anthropic: FakeAnthropicAPI) -> None:
    entered = asyncio.Event()

    async def quick(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        return ToolOutput("quick done")

    async def hang(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        entered.set()
        await asyncio.sleep(3600)
        return ToolOutput("never")

    fake_anthropic.script(
        Reply(
            [
                tool_use("toolu_q", "quick", {"value": "1"}),
                tool_use("toolu_h", "hang", {"value": "2"}),
            ],
            "tool_use",
        )
    )
    agent, events = make_agent(fake_anthropic, FnTool("quick", quick), FnTool("hang", hang))

    task = asyncio.create_task(agent.send("go"))
    await asyncio.wait_for(entered.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    transcript = agent.transcript()
    results = transcript[-1].content
    assert [r.tool_use_id for r in results if isinstance(r, ToolResult)] == ["toolu_q", "toolu_h"]
    quick_result, hang_result = results
    assert isinstance(quick_result, ToolResult)
    assert quick_result.text == "quick done"
    assert isinstance(hang_result, ToolResult)
    assert hang_result.is_error
    assert "interrupted" in hang_result.text
    assert isinstance(events[-1], TurnFinished)
    assert events[-1].error == "interrupted"
    fake_anthropic.script(Reply([text("resumed")]))
    assert (await agent.send("carry on")).text == "resumed"


async def test_events_of_a_tool_turn(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(
        Reply([text("Let me echo."), tool_use("toolu_1", "echo", {"value": "x"})], "tool_use"),
        Reply([text("Done.")]),
    )
    agent, events = make_agent(fake_anthropic)

    await agent.send("go")

    kinds = [type(e).__name__ for e in events if not isinstance(e, TextDelta)]
    assert kinds == [
        "TurnStarted",
        "AssistantMessage",
        "ToolStarted",
        "ToolFinished",
        "TurnStarted",
        "AssistantMessage",
        "TurnFinished",
    ]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me echo.Done."
    assert [e.turn for e in events if isinstance(e, TurnStarted)] == [1, 2]
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    assert finished.error is None
    assert finished.usage.input_tokens > 0


# -- usage that tools report -------------------------------------------------------


async def test_usage_a_tool_spends_counts_once_in_the_turn_and_the_agent(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    spent = Usage(input_tokens=1000, output_tokens=70)

    async def costly(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        ctx.spend(spent)
        return ToolOutput("paid for")

    fake_anthropic.script(
        Reply([tool_use("toolu_1", "costly", {"value": "x"})], "tool_use", usage=WireUsage(10, 5)),
        Reply([text("Done.")], usage=WireUsage(20, 3)),
    )
    agent, events = make_agent(fake_anthropic, FnTool("costly", costly))

    result = await agent.send("go")

    assert result.usage == Usage(10, 5) + Usage(20, 3) + spent
    assert agent.usage == result.usage
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    assert finished.usage == result.usage


async def test_usage_a_cancelled_tool_spent_is_still_counted(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    entered = asyncio.Event()
    spent = Usage(input_tokens=400, output_tokens=40)

    async def hang(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        try:
            entered.set()
            await asyncio.sleep(3600)
        finally:
            ctx.spend(spent)
        return ToolOutput("never")

    fake_anthropic.script(
        Reply([tool_use("toolu_h", "hang", {"value": "x"})], "tool_use", usage=WireUsage(10, 5))
    )
    agent, events = make_agent(fake_anthropic, FnTool("hang", hang))

    task = asyncio.create_task(agent.send("go"))
    await asyncio.wait_for(entered.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert agent.usage == Usage(10, 5) + spent
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    assert finished.usage == Usage(10, 5) + spent
