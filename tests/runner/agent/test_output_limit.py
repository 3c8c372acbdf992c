"""A response cut at the output limit, with a continuation policy: the loop goes on.

Against the real SDK and the fake Messages API, which refuses a transcript
the real API would (roles out of turn, a tool_use left unanswered): each
continued request is also one the API accepts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from runner.agent import Agent, Continuation, Event, MaxOutputTokens, ToolStarted, TurnStarted
from runner.continuation import ContinueCutResponses, cut_note
from runner.llm.anthropic import AnthropicProvider
from runner.llm.retry import RetryPolicy
from runner.llm.types import JSONObject, Text, ToolSpec
from runner.tools.base import ToolContext, ToolOutput
from tests.fakes import FakeAnthropicAPI, Reply, text, thinking, tool_use

SCHEMA: JSONObject = {"type": "object", "properties": {"path": {"type": "string"}}}


class Write:
    spec = ToolSpec("write_file", "Write a file.", SCHEMA)

    def __init__(self) -> None:
        self.calls: list[JSONObject] = []

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        self.calls.append(args)
        return ToolOutput("written")


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


def cut(words: str = "Writing the module now:") -> Reply:
    # Cut inside a large write: its thinking and its call are both incomplete.
    return Reply(
        [thinking("plan the module", "sig"), text(words), tool_use("w1", "write_file", {})],
        "max_tokens",
    )


def agent(provider: AnthropicProvider, write: Write, events: list[Event]) -> Agent:
    return Agent(
        provider,
        tools=[write],
        max_tokens=8_000,
        on_event=events.append,
        output_limit=ContinueCutResponses(64_000),
    )


async def test_one_cut_response_is_continued_with_tools_and_the_whole_output(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    fake_anthropic.script(
        cut(),
        Reply([tool_use("w2", "write_file", {"path": "part1.py"})], "tool_use"),
        Reply([text("Wrote it in parts.")]),
    )
    write, events = Write(), list[Event]()
    a = agent(provider, write, events)

    result = await a.send("Write a large module.")

    assert result.text == "Wrote it in parts."
    assert result.turns == 3
    bodies = [r.body for r in fake_anthropic.requests]
    assert [b["max_tokens"] for b in bodies] == [8_000, 64_000, 8_000]
    assert all(b["tools"] and "tool_choice" not in b for b in bodies)
    # The cut text is kept; its thinking and its incomplete call are not.
    kept = bodies[1]["messages"][1]
    words = {"type": "text", "text": "Writing the module now:"}
    assert kept == {"role": "assistant", "content": [words]}
    note = bodies[1]["messages"][2]["content"][-1]["text"]
    assert note == cut_note(8_000)
    assert write.calls == [{"path": "part1.py"}]
    assert [e.turn for e in events if isinstance(e, TurnStarted)] == [1, 2, 3]


async def test_three_cuts_in_a_row_fail_closed_after_two_continuations(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    fake_anthropic.script(cut("one"), cut("two"), cut("three"), Reply([text("recovered")]))
    write, events = Write(), list[Event]()
    a = agent(provider, write, events)

    with pytest.raises(MaxOutputTokens) as raised:
        await a.send("Write a large module.")

    assert str(raised.value) == "the response hit the output token limit 3 times in a row"
    assert [r.body["max_tokens"] for r in fake_anthropic.requests] == [8_000, 64_000, 64_000]
    assert not any(isinstance(e, ToolStarted) for e in events)
    assert a.transcript()[-1].text == "three"
    # The transcript is valid: the next request is accepted.
    assert (await a.send("Go on.")).text == "recovered"


async def test_the_count_starts_again_after_a_response_that_was_not_cut(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    fake_anthropic.script(
        cut(),
        cut(),
        Reply([tool_use("w2", "write_file", {"path": "a.py"})], "tool_use"),
        cut(),
        cut(),
        Reply([text("done")]),
    )
    a = agent(provider, Write(), [])

    assert (await a.send("Write two large modules.")).turns == 6


class Counting:
    def __init__(self) -> None:
        self.asked: list[tuple[int, int]] = []

    def continuation(self, cuts: int, max_tokens: int) -> Continuation | None:
        self.asked.append((cuts, max_tokens))
        return Continuation(max_tokens + 1, f"[cut {cuts}]") if cuts < 2 else None


async def test_the_policy_decides_and_is_told_what_the_cut_call_was_allowed(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    fake_anthropic.script(Reply([], "max_tokens"), Reply([text("partial")], "max_tokens"))
    policy = Counting()
    a = Agent(provider, tools=[Write()], max_tokens=100, output_limit=policy)

    with pytest.raises(MaxOutputTokens):
        await a.send("go")

    assert policy.asked == [(1, 100), (2, 101)]
    # A cut response with nothing to keep: the note joins the user's message.
    second: list[Any] = fake_anthropic.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["user"]
    assert second[0]["content"][-1]["text"] == "[cut 1]"
    assert a.transcript()[-1].content == (Text("partial"),)
