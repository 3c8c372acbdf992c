"""The contract every adapter keeps, checked the same way for each.

The same scripted conversation goes through every adapter, each driving its
real SDK against its wire-level fake (tests/runner/llm/contract_drivers.py):
tools through the real loop with both tool families, parallel calls, every
stop reason, retries, the one-line errors, usage and cost, cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from runner.agent.errors import MaxOutputTokens, UnexpectedStopReason
from runner.agent.loop import Agent
from runner.llm.errors import ContextOverflow, ProviderHTTPError
from runner.llm.pricing import PricedProvider, cost_usd
from runner.llm.provider import (
    Completed,
    Provider,
    Retrying,
    StreamEvent,
    TextDelta,
)
from runner.llm.registry import make_provider
from runner.llm.retry import RetryPolicy
from runner.llm.types import (
    END_TURN,
    MAX_TOKENS,
    REFUSAL,
    STOP_SEQUENCE,
    TOOL_USE,
    Message,
    Request,
    Response,
    Text,
    Usage,
)
from runner.sandbox import LocalSandbox
from runner.tools.base import Tool
from runner.tools.registry import patch_family, tools_for
from tests.runner.llm.contract_drivers import DRIVERS, UNKNOWN, Call, Driver, Tokens, serving
from tests.runner.llm.streams import HELLO, Sleeps, collect, opened

QUICK = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.02)

CLAUDE, GPT5 = "claude", "gpt-5"
# A model of each family, for adapters whose model names cannot pick one.
FAMILY_MODEL = {CLAUDE: "claude-sonnet-5-5", GPT5: "gpt-5"}


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> Iterator[Driver]:
    with serving(request.param) as made:
        yield made


def build(
    driver: Driver,
    model: str | None = None,
    *,
    sleeps: Sleeps | None = None,
    retry: RetryPolicy = QUICK,
    api_key: str | None = None,
) -> Provider:
    made = driver.provider(
        model or driver.claude_model, retry=retry, sleep=sleeps or Sleeps(), api_key=api_key
    )
    opened(made)
    return made


def completed(events: list[StreamEvent]) -> Response:
    assert isinstance(events[-1], Completed)
    return events[-1].response


def toolset(family: str, model: str, box: LocalSandbox) -> list[Tool]:
    # Where the adapter's model name picks the family, the registry decides
    # from it; elsewhere (Claude, Gemini) the set is asked for by name.
    picks = patch_family(model) == (family == GPT5)
    return tools_for(model if picks else FAMILY_MODEL[family], box)


# -- tools through the real loop ------------------------------------------------

_CONVERSATION = {
    CLAUDE: (
        Call("call_w", "write_file", {"path": "notes.txt", "content": "alpha\n"}),
        Call("call_r", "bash", {"command": "cat notes.txt"}),
    ),
    GPT5: (
        Call(
            "call_w",
            "apply_patch",
            {"input": "*** Begin Patch\n*** Add File: notes.txt\n+alpha\n*** End Patch\n"},
        ),
        Call("call_r", "shell", {"command": ["cat", "notes.txt"]}),
    ),
}
_OFFERED = {CLAUDE: {"write_file", "edit_file", "bash"}, GPT5: {"apply_patch", "shell"}}


@pytest.mark.parametrize("family", [CLAUDE, GPT5])
async def test_a_tool_conversation_through_the_loop(
    driver: Driver, family: str, tmp_path: Path
) -> None:
    write, run = _CONVERSATION[family]
    driver.script(
        driver.reply("Writing the notes.", [write], TOOL_USE),
        driver.reply(calls=[run], stop=TOOL_USE),
        driver.reply("The notes say alpha."),
    )
    model = driver.patch_model if family == GPT5 else driver.claude_model
    box = LocalSandbox(tmp_path)
    agent = Agent(build(driver, model), tools=toolset(family, model, box))
    try:
        result = await agent.send("write the notes, then show them")
    finally:
        await box.aclose()

    assert result.text == "The notes say alpha."
    assert result.stop_reason == END_TURN
    assert result.turns == 3
    assert (tmp_path / "notes.txt").read_text() == "alpha\n"
    offered = driver.offered(0)
    assert _OFFERED[family] <= offered
    assert not (_OFFERED[CLAUDE if family == GPT5 else GPT5] - {"bash"}) & offered
    assert [call_id for call_id, _ in driver.tool_results(1)] == ["call_w"]
    answers = driver.tool_results(2)
    assert [call_id for call_id, _ in answers] == ["call_w", "call_r"]
    assert "alpha" in answers[1][1]


async def test_parallel_calls_are_all_answered_in_order(driver: Driver, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    driver.script(
        driver.reply(
            calls=[
                Call("call_a", "read_file", {"path": "a.txt"}),
                Call("call_b", "read_file", {"path": "b.txt"}),
            ],
            stop=TOOL_USE,
        ),
        driver.reply("alpha and beta"),
    )
    box = LocalSandbox(tmp_path)
    agent = Agent(build(driver), tools=tools_for(driver.claude_model, box))
    try:
        result = await agent.send("read both")
    finally:
        await box.aclose()

    assert result.text == "alpha and beta"
    answers = driver.tool_results(1)
    assert [call_id for call_id, _ in answers] == ["call_a", "call_b"]
    assert "alpha" in answers[0][1]
    assert "beta" in answers[1][1]


# -- stop reasons ------------------------------------------------------------------

_NEUTRAL = {END_TURN, STOP_SEQUENCE, TOOL_USE, MAX_TOKENS, REFUSAL}


@pytest.mark.parametrize(
    ("stop", "neutral", "loop_error"),
    [
        (END_TURN, END_TURN, None),
        (TOOL_USE, TOOL_USE, None),
        (MAX_TOKENS, MAX_TOKENS, MaxOutputTokens),
        (REFUSAL, REFUSAL, None),
        # Whatever the adapter calls it, it is none of ours, and the loop stops.
        (UNKNOWN, None, UnexpectedStopReason),
    ],
)
async def test_every_stop_reason_maps_to_the_neutral_one(
    driver: Driver,
    tmp_path: Path,
    stop: str,
    neutral: str | None,
    loop_error: type[Exception] | None,
) -> None:
    calls = [Call("call_1", "read_file", {"path": "a.txt"})] if stop == TOOL_USE else []
    driver.script(driver.reply("Some words.", calls, stop))

    response = completed(await collect(build(driver)))

    if neutral is None:
        assert response.stop_reason not in _NEUTRAL
    else:
        assert response.stop_reason == neutral
    if loop_error is not None:
        driver.script(driver.reply("Some words.", calls, stop))
        box = LocalSandbox(tmp_path)
        agent = Agent(build(driver), tools=tools_for(driver.claude_model, box))
        try:
            with pytest.raises(loop_error):
                await agent.send("go")
        finally:
            await box.aclose()


# -- retries and errors -------------------------------------------------------------


async def test_a_429_waits_as_retry_after_asks_then_answers(driver: Driver) -> None:
    driver.script(driver.error(429, retry_after=7), driver.reply("ok"))
    sleeps = Sleeps()

    events = await collect(build(driver, sleeps=sleeps))

    retries = [event for event in events if isinstance(event, Retrying)]
    assert [(r.attempt, r.delay) for r in retries] == [(1, 7.0)]
    assert retries[0].reason.startswith(f"{driver.name} 429 ")
    assert sleeps.delays == [7.0]
    assert completed(events).text == "ok"


async def test_a_stream_cut_short_is_started_over(driver: Driver) -> None:
    driver.script(driver.cut(), driver.reply("whole"))

    events = await collect(build(driver))

    assert sum(isinstance(event, Retrying) for event in events) == 1
    assert completed(events).text == "whole"
    assert driver.requests == 2


async def test_a_500_past_the_policy_is_one_line(driver: Driver) -> None:
    driver.script(driver.error(500), driver.error(500), driver.reply("unused"))

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(build(driver, retry=replace(QUICK, max_retries=1)))

    line = str(caught.value)
    assert line.startswith(f"{driver.name} 500 ")
    assert "\n" not in line
    assert driver.api_key not in line
    assert driver.requests == 2


async def test_a_bad_key_is_one_line_naming_the_variable(driver: Driver) -> None:
    secret = "sk-bad-0123456789abcdefghijklmnop"

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(build(driver, api_key=secret))

    line = str(caught.value)
    assert line.startswith(f"{driver.name} 40")
    assert line.endswith(f"(check {driver.key_variable})")
    assert "\n" not in line
    assert secret[8:] not in line
    assert driver.requests == 1


async def test_a_prompt_too_long_is_a_context_overflow(driver: Driver) -> None:
    driver.overflow()
    long = Request(messages=(Message("user", (Text("a long prompt " * 40),)),))

    with pytest.raises(ContextOverflow) as caught:
        await collect(build(driver), long)

    assert caught.value.kind == "context_window_exceeded"
    assert str(caught.value).startswith(f"{driver.name} 400 ")
    assert driver.requests == 1


# -- usage and cost ------------------------------------------------------------------


async def test_usage_and_cost_through_make_provider(
    driver: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("GOOGLE_API_KEY", "OPENAI_BASE_URL", "OPENROUTER_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in driver.env().items():
        monkeypatch.setenv(variable, value)
    driver.script(driver.reply("counted", tokens=Tokens(1200, 300, cached=800)))

    provider = make_provider(driver.name, driver.claude_model)
    opened(provider)
    assert isinstance(provider, PricedProvider)
    usage = completed(await collect(provider)).usage

    tokens = replace(usage, cost_usd=None)
    assert tokens == Usage(input_tokens=1200, output_tokens=300, cache_read_input_tokens=800)
    expected = cost_usd(driver.claude_model, tokens, driver.name)
    assert expected is not None
    assert usage.cost_usd == pytest.approx(expected)


# -- cancellation ---------------------------------------------------------------------


async def test_cancelling_mid_stream_closes_the_connection(driver: Driver) -> None:
    driver.script(driver.stall(30), driver.reply("unused"))
    seen: list[StreamEvent] = []
    provider = build(driver)

    async def consume() -> None:
        async for event in provider.stream(HELLO):
            seen.append(event)

    task = asyncio.create_task(consume())
    while not any(isinstance(event, TextDelta) for event in seen):
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        # A bound, not a measurement: an adapter that waits out the stall fails.
        await asyncio.wait_for(task, 10)

    for _ in range(1000):
        if driver.hangups:
            break
        await asyncio.sleep(0.005)
    assert driver.hangups == 1
    assert driver.requests == 1
    assert driver.pending == 1
    assert not any(isinstance(event, Completed | Retrying) for event in seen)
