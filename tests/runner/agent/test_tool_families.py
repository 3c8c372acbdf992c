"""The loop with each family's tools: a scripted GPT-5 patches a file through it."""

from __future__ import annotations

from pathlib import Path

from runner.agent import Agent
from runner.assembly import agent_tools, make_agent
from runner.budget import RunBudget
from runner.llm.types import SystemPrompt, ToolResult
from runner.sandbox import LocalSandbox
from tests.fakes.scripted import ScriptedProvider, calls, says

PATCH = """\
*** Begin Patch
*** Update File: app.py
@@ def greet():
-    return "hi"
+    return "hello"
*** Add File: NOTES.md
+greeting changed
*** End Patch
"""


async def run_once(provider: ScriptedProvider, tree: Path, prompt: str) -> Agent:
    """`prompt` sent through the loop make_agent builds for `provider`, in `tree`."""
    box = LocalSandbox(tree)
    agent = make_agent(
        provider,
        agent_tools(provider.model, box),
        system=SystemPrompt(("You are a test.",)),
        budget=RunBudget(max_turns=5),
    )
    try:
        await agent.send(prompt)
    finally:
        await box.aclose()
    return agent


async def test_a_gpt5_model_applies_a_patch_through_the_loop(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text('def greet():\n    return "hi"\n')
    provider = ScriptedProvider(
        calls(("call-1", "apply_patch", {"input": PATCH})),
        calls(("call-2", "shell", {"command": ["cat", "NOTES.md"]})),
        says("done"),
        model="gpt-5",
    )
    agent = await run_once(provider, tmp_path, "greet with hello")

    offered = {tool.name for tool in provider.requests[0].tools}
    assert {"apply_patch", "shell"} <= offered
    assert not {"edit_file", "write_file", "bash"} & offered
    assert (tmp_path / "app.py").read_text() == 'def greet():\n    return "hello"\n'
    results = [
        block
        for message in agent.transcript()
        for block in message.content
        if isinstance(block, ToolResult)
    ]
    assert [(result.tool_use_id, result.is_error) for result in results] == [
        ("call-1", False),
        ("call-2", False),
    ]
    assert results[0].text == "applied the patch:\nM app.py\nA NOTES.md"
    assert results[1].text == "greeting changed\nexit code: 0"


async def test_a_claude_model_is_offered_edit_file_and_bash(tmp_path: Path) -> None:
    provider = ScriptedProvider(says("nothing to do"), model="claude-sonnet-5-5")
    await run_once(provider, tmp_path, "hello")

    offered = {tool.name for tool in provider.requests[0].tools}
    assert {"edit_file", "bash", "write_file"} <= offered
    assert not {"apply_patch", "shell"} & offered
