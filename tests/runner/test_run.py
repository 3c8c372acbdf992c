"""The run core a job and `neo run` share: the bound, the recording, the last word.

Against the real SDK and the fake Messages API, with a local sandbox on a
temporary directory and a real session store.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from runner.agent import Event, TurnStarted
from runner.assembly import Briefing, RunSession, RunSettings, agent_tools, make_agent, open_run
from runner.budget import RunBudget
from runner.llm.anthropic import AnthropicProvider
from runner.llm.pricing import cost_usd
from runner.llm.provider import close_provider
from runner.llm.retry import RetryPolicy
from runner.llm.types import SystemPrompt, Usage
from runner.run import (
    AgentRun,
    RunInterrupted,
    RunTimeout,
    bounded,
    session_meta,
)
from runner.sandbox.local import LocalSandbox
from runner.session import Session, SessionStore
from runner.skills import run_skills
from runner.subagent import SubagentSettings
from tests.fakes import ErrorReply, FakeAnthropicAPI, Reply, text, tool_use
from tests.fakes.anthropic_api import Usage as WireUsage

MODEL = "claude-sonnet-5-5"


async def _forever(cleaned: list[str]) -> int:
    try:
        await asyncio.Event().wait()
    finally:
        cleaned.append("cleaned")
    return 0


async def _answer() -> int:
    return 42


async def _raise() -> int:
    raise ValueError("broken")


# -- bounded -----------------------------------------------------------------


async def test_bounded_returns_what_the_work_returns() -> None:
    assert await bounded(_answer(), time_limit=None, stop=None, stopped="", timed_out="") == 42
    stop = asyncio.Event()
    assert await bounded(_answer(), time_limit=60, stop=stop, stopped="", timed_out="") == 42


async def test_bounded_raises_what_the_work_raises() -> None:
    with pytest.raises(ValueError, match="broken"):
        await bounded(_raise(), time_limit=60, stop=None, stopped="", timed_out="")


async def test_a_stop_cancels_the_work_and_says_so() -> None:
    stop = asyncio.Event()
    stop.set()
    cleaned: list[str] = []

    cut = await bounded(
        _forever(cleaned), time_limit=60, stop=stop, stopped="the job was stopped", timed_out=""
    )

    assert isinstance(cut, RunInterrupted)
    assert (cut.kind, str(cut)) == ("interrupted", "the job was stopped")
    assert cleaned == ["cleaned"]  # the work ran its cleanup before `bounded` returned


async def test_a_time_limit_cancels_the_work_and_names_the_limit() -> None:
    cleaned: list[str] = []

    cut = await bounded(
        _forever(cleaned),
        time_limit=0.01,
        stop=asyncio.Event(),
        stopped="",
        timed_out="not done within {limit:g}s (--timeout)",
    )

    assert isinstance(cut, RunTimeout)
    assert (cut.kind, str(cut)) == ("timeout", "not done within 0.01s (--timeout)")
    assert cleaned == ["cleaned"]


# -- session_meta -------------------------------------------------------------


def test_a_new_session_is_named_and_dated_once() -> None:
    meta = session_meta(None, new_id="s-1", provider="anthropic", model=MODEL, cwd="/tree")

    assert (meta.id, meta.provider, meta.model, meta.cwd) == ("s-1", "anthropic", MODEL, "/tree")
    assert meta.created_at == meta.updated_at
    assert meta.usage == Usage()


def test_a_resumed_session_keeps_its_name_history_and_usage() -> None:
    first = session_meta(None, new_id="s-1", provider="anthropic", model="old", cwd="/old")
    previous = Session(replace(first, usage=Usage(input_tokens=7), created_at="2020-01-01"), ())

    meta = session_meta(previous, new_id="s-2", provider="anthropic", model=MODEL, cwd="/tree")

    assert (meta.id, meta.model, meta.cwd) == ("s-1", MODEL, "/tree")
    assert meta.created_at == "2020-01-01"
    assert meta.usage == Usage(input_tokens=7)


# -- AgentRun -----------------------------------------------------------------


@pytest.fixture
async def provider(fake_anthropic: FakeAnthropicAPI) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(
        MODEL,
        api_key=fake_anthropic.api_key,
        base_url=fake_anthropic.base_url,
        retry=RetryPolicy(max_retries=0),
    )
    yield provider
    await close_provider(provider)


async def _agent_run(
    provider: AnthropicProvider,
    tmp_path: Path,
    *,
    max_turns: int = 10,
    events: list[Event] | None = None,
    hold: bool = False,
) -> tuple[AgentRun, SessionStore, LocalSandbox]:
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    (tree / "a.txt").write_text("hello\n")
    store = SessionStore(tmp_path / "home")
    box = LocalSandbox(tree)
    agent = make_agent(
        provider,
        agent_tools(provider.model, box),
        system=SystemPrompt(("You are a test.",)),
        budget=RunBudget(max_turns=max_turns),
    )
    meta = session_meta(None, new_id=store.new_id(), provider="anthropic", model=MODEL, cwd="/t")
    on_event = events.append if events is not None else None
    return AgentRun(agent, store, meta, on_event=on_event, hold_after_compaction=hold), store, box


async def test_the_session_is_saved_before_each_model_call(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider, tmp_path: Path
) -> None:
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "read_file", {"path": "a.txt"})], "tool_use"),
        Reply([text("Read it.")]),
    )
    events: list[Event] = []
    run, store, box = await _agent_run(provider, tmp_path, events=events)
    saved_at_calls: list[int] = []
    run.agent.subscribe(
        lambda event: (
            saved_at_calls.append(len(store.load(run.session_id).messages))
            if isinstance(event, TurnStarted)
            else None
        )
    )

    try:
        assert await run.send("read a.txt") is None
        run.save()
    finally:
        await box.aclose()

    # Before call 1 the prompt; before call 2 the prompt, the call and its result.
    assert saved_at_calls == [1, 3]
    assert run.turns == 2
    assert run.finished is not None
    assert run.finished.text == "Read it."
    assert run.usage == run.finished.usage
    saved = store.load(run.session_id)
    assert saved.messages == tuple(run.agent.transcript())
    assert saved == run.session
    assert any(isinstance(event, TurnStarted) for event in events)  # passed on to the caller


async def test_a_budget_running_out_is_returned_and_the_last_word_counted(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider, tmp_path: Path
) -> None:
    fake_anthropic.script(
        Reply(
            [tool_use("toolu_1", "read_file", {"path": "a.txt"})],
            "tool_use",
            usage=WireUsage(input_tokens=100, output_tokens=10),
        ),
        Reply([text("## Summary\nRead a.txt.")], usage=WireUsage(input_tokens=50, output_tokens=5)),
    )
    run, _, box = await _agent_run(provider, tmp_path, max_turns=1)
    try:
        error = await run.send("read a.txt")
        assert error is not None
        assert error.kind == "max_turns"
        before = run.usage

        assert await run.wrap_up(error) is None
    finally:
        await box.aclose()

    assert run.finished is not None
    assert run.finished.text == "## Summary\nRead a.txt."
    assert (run.finished.error, run.finished.message) == ("max_turns", str(error))
    assert run.usage.output_tokens == before.output_tokens + 5
    # The last word is asked for with the tools out of reach.
    assert fake_anthropic.requests[-1].body["tool_choice"] == {"type": "none"}


async def test_no_last_word_leaves_the_last_turn_as_it_was(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider, tmp_path: Path
) -> None:
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "read_file", {"path": "a.txt"})], "tool_use"),
        ErrorReply(400, "invalid_request_error", "no summary today"),
    )
    run, _, box = await _agent_run(provider, tmp_path, max_turns=1)
    try:
        error = await run.send("read a.txt")
        assert error is not None
        finished = run.finished

        failure = await run.wrap_up(error)
    finally:
        await box.aclose()

    assert failure is not None
    assert "no summary today" in str(failure)
    assert run.finished is finished


async def test_held_after_compaction_the_file_keeps_its_last_save(
    fake_anthropic: FakeAnthropicAPI, provider: AnthropicProvider, tmp_path: Path
) -> None:
    fake_anthropic.script(Reply([text("Done.")]))
    run, store, box = await _agent_run(provider, tmp_path, hold=True)
    try:
        await run.send("hello")
    finally:
        await box.aclose()
    on_disk = store.load(run.session_id)

    run.compacted = True  # as a Compacted event from the agent leaves it
    run.save()

    assert store.load(run.session_id) == on_disk
    assert run.session is not None
    assert run.session.messages == tuple(run.agent.transcript())
    assert len(run.session.messages) > len(on_disk.messages)


# -- the last word a cost limit keeps back --------------------------------------------------

SONNET = "claude-sonnet-4-6"  # a published price: $3 a million prompt tokens, $15 output


class _WritesATurnAFile:
    """Each turn writes a file of 20,000 characters; the last word writes all it may.

    Prompts are billed at four characters a token, as the fake's text is.
    """

    def __init__(self) -> None:
        self.billed: list[tuple[str, float]] = []
        self._turns = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        last_word = body.get("tool_choice") == {"type": "none"}
        written = body["max_tokens"] if last_word else min(body["max_tokens"], 500)
        usage = WireUsage(input_tokens=len(json.dumps(body)) // 4, output_tokens=written)
        cost = cost_usd(SONNET, Usage(usage.input_tokens, usage.output_tokens), "anthropic")
        assert cost is not None
        self.billed.append(("last word" if last_word else "turn", cost))
        if last_word:
            return Reply([text("Wrote files.\n\n- [ ] the rest")], usage=usage)
        self._turns += 1
        n = self._turns
        write = tool_use(f"w{n}", "write_file", {"path": f"f{n}.txt", "content": "x" * 20_000})
        return Reply([write], "tool_use", usage=usage)


async def test_a_run_a_cost_limit_stops_writes_its_last_word_with_what_was_kept(
    fake_anthropic: FakeAnthropicAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The last word asks for no tool: its prompt was bounded from its text
    # alone, not as the conversation's next request, at about four times what
    # had been kept back for it, and the call was refused ($0.34 spent of $1.00).
    limit = 1.00
    model = _WritesATurnAFile()
    fake_anthropic.script(*([model] * 200))
    for name, value in fake_anthropic.env.items():
        monkeypatch.setenv(name, value)
    tree = tmp_path / "tree"
    tree.mkdir()
    store = SessionStore(tmp_path / "home")
    settings = RunSettings(
        provider="anthropic",
        model=SONNET,
        max_turns=200,
        max_cost_usd=limit,
        subagents=SubagentSettings(enabled=False),
    )
    async with open_run(settings) as kit:
        meta = session_meta(None, new_id="s", provider="anthropic", model=SONNET, cwd=str(tree))
        box = LocalSandbox(tree)
        try:
            run = kit.start(
                box,
                RunSession(store, meta),
                Briefing("", run_skills((), request="write files")),
            )
            error = await run.send("write files")
            assert error is not None
            assert error.kind == "max_cost"

            assert await run.wrap_up(error) is None
        finally:
            await box.aclose()

    kinds = [kind for kind, _ in model.billed]
    assert kinds.count("turn") > 3, kinds
    assert kinds[-1] == "last word", kinds
    assert sum(cost for _, cost in model.billed) <= limit
