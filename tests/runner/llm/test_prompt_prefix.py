"""Every adapter keeps its prompt's prefix byte-identical from one call to the next.

A few tool turns run through the agent loop against each fake with prompt
caching modelled: what the SDK put on the wire for a call must begin with all
of the previous call's prompt, and the cached tokens the fake reported must
reach the loop's usage under `cache_read_input_tokens`.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from runner.agent import Agent
from runner.llm.anthropic import AnthropicProvider
from runner.llm.chat_completions import CHAT_COMPLETIONS, ChatCompletionsProvider, Dialect
from runner.llm.google import GoogleProvider
from runner.llm.openai_responses import OpenAIResponsesProvider
from runner.llm.openrouter import OPENROUTER
from runner.llm.types import JSONObject, SystemPrompt, ToolSpec
from runner.tools.base import ToolContext, ToolOutput
from tests.fakes import anthropic_api, chat_completions, gemini_api, openai_responses
from tests.fakes.prompt_cache import BreakpointCache, PrefixCache, pieces

TURNS = 4
SYSTEM = SystemPrompt(("You are Neo. " * 20, "Repository notes. " * 10))


class EchoTool:
    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            "echo", "Echo.", {"type": "object", "properties": {"n": {"type": "integer"}}}
        )

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(f"output of step {args['n']}\n" * 30)


async def _converse(provider: Any) -> int:
    try:
        agent = Agent(provider, tools=[EchoTool()], system=SYSTEM)
        result = await agent.send("echo each step")
    finally:
        await provider.aclose()
    assert result.turns == TURNS
    return result.usage.cache_read_input_tokens


def _assert_prefixes(prompts: list[str]) -> None:
    assert len(prompts) == TURNS
    for before, after in itertools.pairwise(prompts):
        # Without the brackets that close the previous prompt's lists.
        assert after.startswith(before.rstrip("]"))


def _replayed(prompts: list[str], key: str) -> int:
    cache = PrefixCache()
    return sum(cache.read(key, prompt) for prompt in prompts)


async def test_anthropic(fake_anthropic: anthropic_api.FakeAnthropicAPI) -> None:
    fake_anthropic.prompt_cache = True
    for n in range(1, TURNS):
        call = anthropic_api.tool_use(f"toolu_{n}", "echo", {"n": n})
        fake_anthropic.script(anthropic_api.Reply([anthropic_api.text("step"), call], "tool_use"))
    fake_anthropic.script(anthropic_api.Reply([anthropic_api.text("done")]))
    provider = AnthropicProvider(api_key=fake_anthropic.api_key, base_url=fake_anthropic.base_url)

    cached = await _converse(provider)

    bodies = [r.body for r in fake_anthropic.requests]
    _assert_prefixes(["".join(piece for piece, _ in pieces(body)) for body in bodies])
    cache = BreakpointCache()
    assert cached == sum(cache.use(body["model"], body).read for body in bodies) > 0


async def test_openai(fake_openai: openai_responses.FakeOpenAIResponses) -> None:
    fake_openai.prompt_cache = True
    for n in range(1, TURNS):
        output = [
            openai_responses.reasoning("thinking"),
            openai_responses.function_call(f"call_{n}", "echo", {"n": n}),
        ]
        fake_openai.script(openai_responses.Reply(output))
    fake_openai.script(openai_responses.Reply([openai_responses.message("done")]))
    provider = OpenAIResponsesProvider(
        "gpt-5", api_key=fake_openai.api_key, base_url=fake_openai.base_url
    )

    cached = await _converse(provider)

    bodies = [r.body for r in fake_openai.requests]
    assert len({body["prompt_cache_key"] for body in bodies}) == 1
    prompts = [openai_responses.prompt_text(body) for body in bodies]
    _assert_prefixes(prompts)
    assert cached == _replayed(prompts, f"gpt-5/{bodies[0]['prompt_cache_key']}") > 0


@pytest.mark.parametrize(
    ("model", "dialect"),
    [("gpt-4.1", CHAT_COMPLETIONS), ("anthropic/claude-sonnet-5.5", OPENROUTER)],
    ids=["chat-completions", "openrouter"],
)
async def test_chat_completions(model: str, dialect: Dialect) -> None:
    reasoning = [{"type": "reasoning.text", "text": "thinking", "index": 0}]
    with chat_completions.FakeChatCompletions() as fake:
        fake.prompt_cache = True
        fake.models = [chat_completions.ModelInfo(model)]
        for n in range(1, TURNS):
            call = chat_completions.call(f"call_{n}", "echo", {"n": n})
            fake.script(chat_completions.Reply(tool_calls=[call], reasoning_details=reasoning))
        fake.script(chat_completions.Reply(text="done"))
        provider = ChatCompletionsProvider(
            model, api_key=fake.api_key, base_url=fake.base_url, dialect=dialect
        )

        cached = await _converse(provider)

    prompts = [chat_completions.prompt_text(r.body) for r in fake.completions]
    _assert_prefixes(prompts)
    assert cached == _replayed(prompts, model) > 0


async def test_google(fake_gemini: gemini_api.FakeGemini) -> None:
    fake_gemini.prompt_cache = True
    for n in range(1, TURNS):
        parts = [gemini_api.text("step"), gemini_api.call("echo", {"n": n}, signed=True)]
        fake_gemini.script(gemini_api.Reply(parts))
    fake_gemini.script(gemini_api.Reply([gemini_api.text("done")]))
    provider = GoogleProvider(
        "gemini-2.5-pro", api_key=fake_gemini.api_key, base_url=fake_gemini.base_url
    )

    cached = await _converse(provider)

    prompts = [gemini_api.prompt_text(r.body) for r in fake_gemini.requests]
    _assert_prefixes(prompts)
    assert cached == _replayed(prompts, "gemini-2.5-pro") > 0


def test_a_changed_prefix_fails_the_check() -> None:
    grown = [json.dumps(["system", list(range(n))]) for n in range(1, TURNS + 1)]
    _assert_prefixes(grown)
    with pytest.raises(AssertionError):
        _assert_prefixes([grown[0], grown[1].replace("system", "System"), *grown[2:]])
