"""The live comment while subagents run: one line each, fed by the real loop's events.

A parent on a scripted provider delegates two investigations; their provider
holds each child until the test lets it answer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.worker.progress import Progress
from bot.worker.rendering import render_progress
from runner.agent import Agent
from runner.llm.types import END_TURN, JSONObject, Request, Response, Text, Usage
from runner.sandbox import LocalSandbox
from runner.subagent import AgentTool, SubagentSettings, Supervisor
from tests.fakes.scripted import AnsweringProvider, ScriptedProvider, calls, says


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_running_children_show_as_one_line_each_until_they_finish(tmp_path: Path) -> None:
    release = {"Task: find the port": asyncio.Event(), "Task: list the routes": asyncio.Event()}

    async def held(request: Request) -> Response:
        await release[request.messages[0].text.splitlines()[0]].wait()
        return Response((Text("found it"),), END_TURN, Usage(10, 1))

    uses: list[tuple[str, str, JSONObject]] = [
        ("a1", "agent", {"description": "find the port", "prompt": "Which port?"}),
        ("a2", "agent", {"description": "list the routes", "prompt": "Which routes?"}),
    ]
    parent = ScriptedProvider(calls(*uses), says("done"))
    supervisor = Supervisor(SubagentSettings(), AnsweringProvider(held))
    progress = Progress(7, clock=Clock())
    progress.start()
    agent = Agent(
        parent, tools=[AgentTool(supervisor, LocalSandbox(tmp_path))], on_event=progress.apply
    )

    send = asyncio.create_task(agent.send("go"))
    while len(progress.state.children) < 2:
        await asyncio.sleep(0)
    text = render_progress(progress.state, now=1000.0)
    assert "- 🔎 subagent 1: find the port · model call 1" in text
    assert "- 🔎 subagent 2: list the routes · model call 1" in text

    release["Task: list the routes"].set()
    while len(progress.state.children) > 1:
        await asyncio.sleep(0)
    text = render_progress(progress.state, now=1000.0)
    assert "subagent 1: find the port" in text
    assert "list the routes ·" not in text

    release["Task: find the port"].set()
    await send
    assert progress.state.children == ()
    assert "🔎" not in render_progress(progress.state, now=1000.0)
    assert [call.summary for call in progress.state.calls] == [
        "agent: find the port",
        "agent: list the routes",
    ]
