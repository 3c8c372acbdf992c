"""The `agent` tool on the real loop, a local sandbox and scripted providers.

The parent and its children have providers of their own, so each side's
requests can be checked apart; the children's provider answers by the task
in the request, since parallel children reach it in any order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from runner.agent import Agent, Event, ToolNotice, TurnFinished
from runner.llm.price_book import Price, PriceBook
from runner.llm.types import END_TURN, JSONObject, Request, Response, Text, ToolResult, Usage
from runner.sandbox import LocalSandbox
from runner.session import SessionStore
from runner.spend import Ledger, MeteredProvider
from runner.subagent import (
    AgentTool,
    ChildFinished,
    ChildStarted,
    Placement,
    SubagentSettings,
    Supervisor,
)
from tests.fakes.scripted import AnsweringProvider, ScriptedProvider, calls, says

CHILD_USAGE = Usage(100, 7)
DEFAULTS = SubagentSettings()


def task_of(request: Request) -> str:
    """The child's task: the first line of its first message."""
    return request.messages[0].text.splitlines()[0]


def answer(text: str, usage: Usage = CHILD_USAGE) -> Response:
    return Response((Text(text),), END_TURN, usage)


def reads_then_answers(request: Request) -> Response:
    """A child that reads app.py, then reports what the file holds."""
    if len(request.messages) == 1:
        return calls(("r1", "read_file", {"path": "app.py"}))
    result = request.messages[-1].content[0]
    assert isinstance(result, ToolResult)
    return answer(f"{task_of(request)}: app.py:1 says {result.text.split()[-1]}")


def children(reply: Callable[[Request], Response | Awaitable[Response]]) -> AnsweringProvider:
    async def respond(request: Request) -> Response:
        got = reply(request)
        return got if isinstance(got, Response) else await got

    return AnsweringProvider(respond, model="scripted-child")


def delegate(*tasks: str) -> Response:
    """A parent response calling the agent tool once per task, in one batch."""
    uses: list[tuple[str, str, JSONObject]] = [
        (f"a{i}", "agent", {"description": task, "prompt": f"look into {task}"})
        for i, task in enumerate(tasks)
    ]
    return calls(*uses)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "app.py").write_text("value = 42\n")
    return root


def parent(
    tree: Path,
    provider: ScriptedProvider,
    child: AnsweringProvider | MeteredProvider,
    settings: SubagentSettings = DEFAULTS,
    **options: object,
) -> tuple[Agent, list[Event], Supervisor]:
    supervisor = Supervisor(settings, child, **options)  # type: ignore[arg-type]
    events: list[Event] = []
    agent = Agent(
        provider, tools=[AgentTool(supervisor, LocalSandbox(tree))], on_event=events.append
    )
    return agent, events, supervisor


def results(agent: Agent) -> list[ToolResult]:
    return [
        block
        for message in agent.transcript()
        for block in message.content
        if isinstance(block, ToolResult)
    ]


async def test_a_child_gets_exactly_the_three_read_tools_and_its_answer_is_the_result(
    tree: Path,
) -> None:
    child = children(reads_then_answers)
    provider = ScriptedProvider(delegate("the value"), says("It is 42."))
    agent, _, _ = parent(tree, provider, child)

    await agent.send("what is the value?")

    assert len(child.requests) == 2
    for request in child.requests:
        assert sorted(spec.name for spec in request.tools) == ["glob", "grep", "read_file"]
        assert "change nothing" in request.system.text
    assert child.requests[0].messages[0].text.startswith("Task: the value")
    # The child's transcript is its own: nothing of the parent's conversation.
    assert "what is the value?" not in child.requests[0].messages[0].text
    (result,) = results(agent)
    assert not result.is_error
    assert result.text == "Task: the value: app.py:1 says 42"


async def test_the_run_usage_is_the_parents_plus_the_childrens_exactly(tree: Path) -> None:
    child = children(reads_then_answers)
    provider = ScriptedProvider(delegate("one", "two"), says("done"))
    agent, events, _ = parent(tree, provider, child)

    turn = await agent.send("go")

    parent_usage = Usage(10, 5) + Usage(10, 5)  # calls() and says()
    child_usage = Usage(10, 5) + CHILD_USAGE  # each child: one read, one answer
    assert turn.usage == parent_usage + child_usage + child_usage
    assert agent.usage == turn.usage
    finished = [e for e in events if isinstance(e, TurnFinished)]
    assert finished[-1].usage == turn.usage


async def test_children_per_run_run_out_with_an_error_and_no_call(tree: Path) -> None:
    child = children(reads_then_answers)
    provider = ScriptedProvider(delegate("first"), delegate("second"), says("done"))
    agent, _, _ = parent(tree, provider, child, SubagentSettings(max_children=1))

    await agent.send("go")

    first, second = results(agent)
    assert not first.is_error
    assert second.is_error
    assert "may start 1" in second.text
    assert len(child.requests) == 2  # the first child's two calls, none for the second


async def test_a_spent_token_budget_refuses_before_the_child_calls(tree: Path) -> None:
    child = children(reads_then_answers)
    provider = ScriptedProvider(delegate("first"), says("done"))
    agent, events, _ = parent(tree, provider, child, SubagentSettings(max_tokens=50))

    turn = await agent.send("go")

    (result,) = results(agent)
    assert result.is_error
    assert "token budget" in result.text
    assert child.requests == []
    assert turn.usage == Usage(10, 5) + Usage(10, 5)
    (ended,) = [
        e.payload
        for e in events
        if isinstance(e, ToolNotice) and isinstance(e.payload, ChildFinished)
    ]
    assert ended.error == "subagent_budget"


async def test_the_childrens_share_caps_what_they_take_of_the_runs_limit(tree: Path) -> None:
    # $1 a million prompt tokens, $10 a million output tokens; a $1 limit, half
    # of it the children's.
    ledger = Ledger(1.0, PriceBook(operator={"child-model": Price(input=1.0, output=10.0)}))

    async def write_all_it_may(request: Request) -> Response:
        return answer("x", Usage(1_000, request.max_tokens))

    child = AnsweringProvider(write_all_it_may, model="child-model")
    metered = MeteredProvider(child, ledger, ledger.share("the subagents' share", 0.5))
    provider = ScriptedProvider(delegate("first"), delegate("second"), delegate("third"), says("."))
    agent, _, _ = parent(tree, provider, metered, SubagentSettings(budget_share=0.5))

    await agent.send("go")

    first, second, third = results(agent)
    assert not first.is_error
    assert not second.is_error
    assert third.is_error
    assert "the subagents' share of the cost limit is spent" in third.text
    # The second child was asked for no more than the share had left.
    assert child.requests[0].max_tokens == 32_000
    assert child.requests[1].max_tokens < 32_000
    assert len(child.requests) == 2
    assert ledger.spent <= 0.5


async def _ready(response: Response) -> Response:
    return response


async def test_parallel_children_finish_in_any_order_and_results_keep_call_order(
    tree: Path,
) -> None:
    gates = {task: asyncio.Event() for task in ("Task: a", "Task: b", "Task: c")}
    order: list[str] = []
    running = 0
    most = 0

    async def slow(request: Request) -> Response:
        nonlocal running, most
        task = task_of(request)
        running += 1
        most = max(most, running)
        try:
            await gates[task].wait()
        finally:
            running -= 1
        order.append(task)
        return answer(f"answer to {task}")

    child = AnsweringProvider(slow)
    provider = ScriptedProvider(delegate("a", "b", "c"), says("done"))
    agent, _, _ = parent(tree, provider, child, SubagentSettings(max_parallel=2))

    send = asyncio.create_task(agent.send("go"))
    while len(child.requests) < 2:
        await asyncio.sleep(0)
    assert len(child.requests) == 2  # the third waits for a slot
    gates["Task: b"].set()
    while len(child.requests) < 3:
        await asyncio.sleep(0)
    gates["Task: c"].set()
    while order != ["Task: b", "Task: c"]:
        await asyncio.sleep(0)
    gates["Task: a"].set()
    await send

    assert order == ["Task: b", "Task: c", "Task: a"]
    assert most == 2
    assert [r.text for r in results(agent)] == [
        "answer to Task: a",
        "answer to Task: b",
        "answer to Task: c",
    ]


async def test_cancelling_the_run_cancels_the_children_and_answers_every_call(
    tree: Path,
) -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    async def hang(request: Request) -> Response:
        try:
            if task_of(request) == "Task: quick":
                return answer("quick answer")
            started.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(task_of(request))
            raise
        raise AssertionError("unreachable")

    child = AnsweringProvider(hang)
    provider = ScriptedProvider(delegate("quick", "slow one", "slow two"))
    agent, events, _ = parent(tree, provider, child)

    send = asyncio.create_task(agent.send("go"))
    await asyncio.wait_for(started.wait(), timeout=10)
    while len(child.requests) < 3:
        await asyncio.sleep(0)
    send.cancel()
    with pytest.raises(asyncio.CancelledError):
        await send

    assert sorted(cancelled) == ["Task: slow one", "Task: slow two"]
    quick, one, two = results(agent)
    assert quick.text == "quick answer"
    assert one.is_error
    assert two.is_error
    assert [r.tool_use_id for r in results(agent)] == ["a0", "a1", "a2"]
    ended = [
        e.payload
        for e in events
        if isinstance(e, ToolNotice) and isinstance(e.payload, ChildFinished)
    ]
    assert sorted((e.description, e.error) for e in ended) == [
        ("quick", None),
        ("slow one", "interrupted"),
        ("slow two", "interrupted"),
    ]
    # The quick child's tokens were spent and count, once.
    assert agent.usage == Usage(10, 5) + CHILD_USAGE


async def test_each_childs_transcript_is_saved_beside_the_session(
    tree: Path, tmp_path: Path
) -> None:
    store = SessionStore(tmp_path / "home")
    child = children(reads_then_answers)
    provider = ScriptedProvider(delegate("one", "two"), says("done"))
    agent, events, _ = parent(
        tree, provider, child, placement=Placement(store, "20261201T000000Z-abcd")
    )

    await agent.send("go")

    assert store.child_count("20261201T000000Z-abcd") == 2
    for number, task in ((1, "one"), (2, "two")):
        saved = store.load_child("20261201T000000Z-abcd", number)
        assert saved.meta.model == "scripted-child"
        assert saved.meta.usage == Usage(10, 5) + CHILD_USAGE
        assert [m.role for m in saved.messages] == ["user", "assistant", "user", "assistant"]
        assert saved.messages[-1].text == f"Task: {task}: app.py:1 says 42"
    started = [
        e.payload
        for e in events
        if isinstance(e, ToolNotice) and isinstance(e.payload, ChildStarted)
    ]
    assert sorted(s.number for s in started) == [1, 2]
    # A later run of the session numbers its children on from there.
    again = Supervisor(
        SubagentSettings(), child, placement=Placement(store, "20261201T000000Z-abcd")
    )
    assert again.admit() == 3


FINDINGS = "app.py:1 sets value = 42; no other file sets it."


def searches_until_stopped(request: Request) -> Response:
    """A child that keeps searching, and reports when it may no longer call tools."""
    if request.tool_choice == "none":
        return answer(FINDINGS)
    return calls((f"g{len(request.messages)}", "glob", {"pattern": "*.py"}), text="still looking")


def child_ended(events: list[Event]) -> ChildFinished:
    (ended,) = [
        e.payload
        for e in events
        if isinstance(e, ToolNotice) and isinstance(e.payload, ChildFinished)
    ]
    return ended


async def test_a_child_out_of_turns_returns_its_findings_as_a_partial_result(
    tree: Path,
) -> None:
    # Before: "the subagent stopped: ... (max turns)", and nothing it had found.
    child = children(searches_until_stopped)
    provider = ScriptedProvider(delegate("endless"), says("done"))
    agent, events, _ = parent(tree, provider, child, SubagentSettings(max_turns=3))

    turn = await agent.send("go")

    assert len(child.requests) == 4
    last = child.requests[-1]
    assert last.tool_choice == "none"
    assert last.messages[-1].text.startswith(
        "[Neo: You have used all the model calls you may make, so your investigation stops"
    )
    (result,) = results(agent)
    assert not result.is_error
    assert result.text == (
        "[partial: the subagent stopped before it finished (stopped after 3 model calls"
        f" (max turns)); what it found so far:]\n\n{FINDINGS}"
    )
    ended = child_ended(events)
    assert ended.error == "max_turns"
    assert ended.usage == Usage(10, 5) + Usage(10, 5) + Usage(10, 5) + CHILD_USAGE
    assert turn.usage == Usage(10, 5) + Usage(10, 5) + ended.usage


async def test_a_child_the_token_budget_stops_keeps_room_for_its_findings(tree: Path) -> None:
    def costly(request: Request) -> Response:
        response = searches_until_stopped(request)
        if request.tool_choice == "none":
            return response
        return Response(response.content, response.stop_reason, Usage(1_000, 5))

    child = children(costly)
    provider = ScriptedProvider(delegate("endless"), says("done"))
    agent, events, _ = parent(tree, provider, child, SubagentSettings(max_tokens=2_500))

    await agent.send("go")

    assert [r.tool_choice for r in child.requests] == ["auto", "none"]
    (result,) = results(agent)
    assert not result.is_error
    assert result.text.endswith(FINDINGS)
    assert "token budget is spent" in result.text
    assert child_ended(events).error == "subagent_budget"


async def test_a_child_that_failed_gets_no_findings_call(tree: Path) -> None:
    def unknown(request: Request) -> Response:
        return Response((Text("half a thought"),), "something_new", Usage(10, 5))

    child = children(unknown)
    provider = ScriptedProvider(delegate("odd"), says("done"))
    agent, _, _ = parent(tree, provider, child)

    await agent.send("go")

    assert len(child.requests) == 1
    (result,) = results(agent)
    assert result.is_error
    assert result.text.startswith("the subagent stopped: unexpected stop reason")


def test_bad_settings_are_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="budget_share"):
        SubagentSettings(budget_share=1.5)
    with pytest.raises(ValueError, match="at least 1"):
        SubagentSettings(max_parallel=0)
