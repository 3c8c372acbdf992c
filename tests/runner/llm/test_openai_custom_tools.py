"""apply_patch as a custom (free-form) tool for GPT-5-class models: the real SDK
against the fake Responses API, through the loop and a saved session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

from runner.agent import Agent
from runner.llm import codec
from runner.llm.openai_responses import build_params, takes_custom_tools
from runner.llm.types import Message, Request, Text, ToolResult, ToolUse
from runner.sandbox.local import LocalSandbox
from runner.tools.apply_patch import SPEC as APPLY_PATCH
from runner.tools.patch_grammar import PATCH_GRAMMAR
from runner.tools.registry import tools_for
from tests.fakes.openai_responses import (
    FakeOpenAIResponses,
    Reply,
    custom_tool_call,
    message,
    reasoning,
)
from tests.runner.llm.streams import HELLO, collect, completed, sent_body
from tests.runner.llm.test_openai import provider

PATCH = """*** Begin Patch
*** Update File: greet.py
@@ def greet():
-    return "hello"
+    return "hello, world"
*** End Patch"""


async def test_a_custom_apply_patch_call_round_trips_through_the_loop(
    fake_openai: FakeOpenAIResponses, tmp_path: Path
) -> None:
    (tmp_path / "greet.py").write_text('def greet():\n    return "hello"\n')

    def answered(body: dict[str, Any]) -> Reply:
        replayed = [i for i in body["input"] if i["type"].startswith("custom_tool_call")]
        assert [i["type"] for i in replayed] == ["custom_tool_call", "custom_tool_call_output"]
        assert replayed[0]["input"] == PATCH
        assert replayed[1]["output"].startswith("applied the patch:\nM greet.py")
        return Reply([message("Patched.")])

    fake_openai.script(
        Reply([reasoning(), custom_tool_call("call_1", "apply_patch", PATCH)]), answered
    )
    box = LocalSandbox(tmp_path)
    agent = Agent(provider(fake_openai, max_retries=0), tools=tools_for("gpt-5", box))

    result = await agent.send("greet the world")

    assert result.stop_reason == "end_turn"
    assert result.text == "Patched."
    assert (tmp_path / "greet.py").read_text() == 'def greet():\n    return "hello, world"\n'
    tools = {t["name"]: t for t in sent_body(fake_openai, 0)["tools"]}
    assert tools["apply_patch"] == {
        "type": "custom",
        "name": "apply_patch",
        "description": APPLY_PATCH.description,
        "format": {"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR.definition},
    }
    assert tools["shell"]["type"] == "function"
    # The fake's 400s would have refused an output of the wrong kind.
    assert len(fake_openai.requests) == 2


async def test_a_free_form_call_survives_a_saved_session(fake_openai: FakeOpenAIResponses) -> None:
    fake_openai.script(Reply([custom_tool_call("call_9", "apply_patch", PATCH)]))
    request = Request(messages=HELLO.messages, tools=(APPLY_PATCH,))
    p = provider(fake_openai)
    first = completed(await collect(p, request)).response
    (call,) = first.tool_uses
    assert call == ToolUse("call_9", "apply_patch", {"input": PATCH}, freeform=True)

    # Through the session codec and back, as a resumed run replays it.
    saved = codec.message_from_json(codec.message_to_json(Message("assistant", first.content)))
    fake_openai.script(Reply([message("resumed")]))
    follow = Request(
        messages=(
            *HELLO.messages,
            saved,
            Message("user", (ToolResult("call_9", (Text("applied the patch"),)),)),
        ),
        tools=(APPLY_PATCH,),
    )

    assert completed(await collect(p, follow)).response.text == "resumed"
    replayed = sent_body(fake_openai, 1)["input"]
    assert [i["type"] for i in replayed[1:]] == ["custom_tool_call", "custom_tool_call_output"]


@pytest.mark.parametrize(
    ("model", "custom"),
    [
        ("gpt-5", True),
        ("gpt-5-codex", True),
        ("gpt-5.1-codex-max", True),
        ("gpt-5-mini", True),
        ("gpt-5-chat-latest", False),
        ("o3", False),
        ("o4-mini", False),
        ("gpt-4.1", False),
        ("codex-mini-latest", False),
    ],
)
def test_only_gpt5_class_models_get_apply_patch_as_a_custom_tool(model: str, custom: bool) -> None:
    assert takes_custom_tools(model) is custom
    (tool,) = build_params(model, Request(messages=HELLO.messages, tools=(APPLY_PATCH,)))["tools"]

    assert tool["type"] == ("custom" if custom else "function")
    if not custom:
        assert tool["parameters"]["required"] == ["input"]


async def test_the_fake_refuses_custom_tools_for_a_model_that_has_none(
    fake_openai: FakeOpenAIResponses,
) -> None:
    body = build_params("gpt-5", Request(messages=HELLO.messages, tools=(APPLY_PATCH,)))
    body["model"] = "gpt-4.1"
    client = openai.AsyncOpenAI(api_key=fake_openai.api_key, base_url=fake_openai.base_url)
    async with client:
        with pytest.raises(openai.BadRequestError, match="Custom tools are not supported"):
            await client.responses.create(**body)
