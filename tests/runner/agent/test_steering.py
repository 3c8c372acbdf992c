"""Steering: people's messages join the conversation at turn boundaries.

Against the real SDK and the fake Messages API, which rejects what the real
API rejects: a steer placed between a tool_use and its tool_result, or two
user messages in a row, would fail the next request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from runner.agent import Agent, Event, Steered, ToolFinished
from runner.llm.anthropic import AnthropicProvider
from runner.llm.retry import RetryPolicy
from runner.llm.types import JSONObject, Text, ToolResult
from runner.tools.base import ToolContext, ToolOutput
from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use
from tests.runner.agent.test_loop import FnTool


class Inbox:
    """A steering source the test fills while the run goes on."""

    def __init__(self) -> None:
        self.waiting: list[Steered] = []
        self.asked = 0

    def post(self, author: str, said: str) -> None:
        self.waiting.append(Steered(author, said, f"@{author} asks: {said}"))

    async def take(self) -> Sequence[Steered]:
        self.asked += 1
        taken, self.waiting = self.waiting, []
        return taken


@pytest.fixture
async def provider(fake_anthropic: FakeAnthropicAPI) -> AsyncIterator[AnthropicProvider]:
    made = AnthropicProvider(
        "claude-sonnet-5-5",
        api_key=fake_anthropic.api_key,
        base_url=fake_anthropic.base_url,
        retry=RetryPolicy(max_retries=0),
    )
    yield made
    await made.aclose()


def posting(inbox: Inbox, author: str, said: str, reply: Reply) -> Callable[[Any], Reply]:
    """A scripted reply during whose request `author` steers (from the server's thread)."""

    def answer(body: Any) -> Reply:
        inbox.post(author, said)
        return reply

    return answer


def last_message(fake: FakeAnthropicAPI, request: int) -> dict[str, Any]:
    message: dict[str, Any] = fake.requests[request].body["messages"][-1]
    return message


async def test_a_steer_sent_during_the_tools_follows_every_result_of_the_turn(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    inbox = Inbox()

    async def slow(args: JSONObject, ctx: ToolContext) -> ToolOutput:
        if args["value"] == "a":
            inbox.post("alice", "use ISO dates")  # while the other call still runs
        await asyncio.sleep(0.01)
        return ToolOutput(f"ran {args['value']}")

    fake_anthropic.script(
        Reply(
            [
                tool_use("toolu_1", "work", {"value": "a"}),
                tool_use("toolu_2", "work", {"value": "b"}),
            ],
            "tool_use",
        ),
        Reply([text("Switched to ISO dates.")]),
    )
    events: list[Event] = []
    agent = Agent(provider, tools=[FnTool("work", slow)], on_event=events.append, steering=inbox)

    result = await agent.send("fix the dates")

    assert result.text == "Switched to ISO dates."
    # Not in the first request; in the second, after both results, as user text.
    assert "use ISO dates" not in str(fake_anthropic.requests[0].body)
    second = last_message(fake_anthropic, 1)
    assert second["role"] == "user"
    assert [b["type"] for b in second["content"]] == ["tool_result", "tool_result", "text"]
    assert second["content"][2]["text"] == "@alice asks: use ISO dates"
    # In the transcript the session saves, where the model read it.
    steer_message = agent.transcript()[2]
    assert isinstance(steer_message.content[0], ToolResult)
    assert steer_message.content[-1] == Text("@alice asks: use ISO dates")
    # The event comes after the turn's tool calls finished.
    kinds = [type(event) for event in events]
    assert kinds.index(Steered) > max(i for i, k in enumerate(kinds) if k is ToolFinished)
    assert Steered("alice", "use ISO dates", "@alice asks: use ISO dates") in events


@pytest.mark.parametrize("reason", ["end_turn", "refusal"])
async def test_a_steer_pending_as_the_model_ends_its_turn_continues_the_run(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider, reason: str
) -> None:
    inbox = Inbox()
    fake_anthropic.script(
        # It arrives while the first call is in flight.
        posting(inbox, "bob", "keep the old test", Reply([text("All done.")], stop_reason=reason)),
        Reply([text("Also kept the old test.")]),
    )
    agent = Agent(provider, steering=inbox)

    result = await agent.send("fix it")

    assert (result.turns, result.text) == (2, "Also kept the old test.")
    second = last_message(fake_anthropic, 1)
    assert second["role"] == "user"
    assert [b["text"] for b in second["content"]] == ["@bob asks: keep the old test"]
    assert [m.role for m in agent.transcript()] == ["user", "assistant", "user", "assistant"]


async def test_a_paused_turn_is_replayed_before_a_steer_joins(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    inbox = Inbox()
    fake_anthropic.script(
        posting(inbox, "carol", "only the tests", Reply([text("Searching...")], "pause_turn")),
        Reply([text(" found it.")]),
        Reply([text("Narrowed it.")]),
    )
    agent = Agent(provider, steering=inbox)

    result = await agent.send("search")

    assert result.turns == 3
    assert last_message(fake_anthropic, 1)["role"] == "assistant"
    third = last_message(fake_anthropic, 2)
    assert [b["text"] for b in third["content"]] == ["@carol asks: only the tests"]


async def test_a_steer_left_while_the_run_was_queued_joins_the_task(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    inbox = Inbox()
    inbox.post("alice", "and the README")
    fake_anthropic.script(Reply([text("ok")]))
    agent = Agent(provider, steering=inbox)

    await agent.send("fix the docs")

    first = last_message(fake_anthropic, 0)["content"]
    assert [b["text"] for b in first] == ["fix the docs", "@alice asks: and the README"]
    assert inbox.asked == 2  # before the call, and as the turn ended


async def test_a_finished_run_on_its_last_allowed_call_is_not_reopened(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider
) -> None:
    inbox = Inbox()
    fake_anthropic.script(
        posting(inbox, "bob", "one more thing", Reply([text("All done.")])),
    )
    agent = Agent(provider, steering=inbox, max_turns=1)

    result = await agent.send("fix it")

    assert (result.turns, result.text) == (1, "All done.")
    assert [s.said for s in inbox.waiting] == ["one more thing"]  # left for the caller
