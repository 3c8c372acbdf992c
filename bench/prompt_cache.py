"""How much of each adapter's prompt a provider could serve from its cache.

A scripted tool conversation (one call a turn, 2 KB of output each, the last
turn answering in text) runs through the real agent loop for every adapter,
over its SDK, against its wire-level fake with prompt caching modelled (see
`tests/fakes/prompt_cache.py`: a request reads the longest prefix it shares
with an earlier one; for Anthropic, prefixes written at `cache_control`
breakpoints). This prints, per adapter, the input tokens over the run, how
many were reported as cached, their share and, for Anthropic, the tokens
written to the cache. A low share means the prefix (system prompt, tools,
transcript, OpenAI's `prompt_cache_key`) changed between calls.

With `--gaps`, Anthropic alone, with time: the fake's cache entries expire
five minutes (or an hour) after their last use, and each tool call takes a
scripted time on a simulated clock (a test suite: six minutes). Each
schedule runs with the five-minute cache only and with the rule of
`runner/llm/cache_ttl.py` (an hour's cache once a gap passed four minutes),
and prints the input per model call weighted by what Anthropic bills: plain
input 1x, cache reads 0.1x, five-minute writes 1.25x, one-hour writes 2x.

    uv run python -m bench.prompt_cache [--turns 30] [--gaps]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from bench import prompt_cache_gaps as gaps
from runner.agent import Agent
from runner.llm.anthropic import AnthropicProvider
from runner.llm.chat_completions import CHAT_COMPLETIONS, ChatCompletionsProvider, Dialect
from runner.llm.google import GoogleProvider
from runner.llm.openai_responses import OpenAIResponsesProvider
from runner.llm.openrouter import OPENROUTER
from runner.llm.provider import Provider
from runner.llm.types import JSONObject, SystemPrompt, ToolSpec, Usage
from runner.tools.base import ToolContext, ToolOutput
from tests.fakes import anthropic_api, chat_completions, gemini_api, openai_responses

SYSTEM = SystemPrompt(
    ("You are Neo, a coding agent. " * 40, "Repository notes: a Python project. " * 20)
)


class EchoTool:
    """Returns 2 KB that differ from call to call, as a real tool's output does."""

    @property
    def spec(self) -> ToolSpec:
        schema: JSONObject = {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        }
        return ToolSpec("echo", "Echo 2 KB of output for step n.", schema)

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        return ToolOutput("".join(f"step {args['n']} line {i:03}\n" for i in range(110)))


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    # Starts the fake with caching modelled and `turns` replies scripted,
    # and yields a provider pointed at it.
    serve: Callable[[int], contextlib.AbstractAsyncContextManager[Provider]]


@contextlib.asynccontextmanager
async def _anthropic(turns: int) -> AsyncIterator[Provider]:
    with anthropic_api.FakeAnthropicAPI() as fake:
        fake.prompt_cache = True
        for n in range(1, turns):
            call = anthropic_api.tool_use(f"toolu_{n:02}", "echo", {"n": n})
            fake.script(anthropic_api.Reply([anthropic_api.text(f"step {n}"), call], "tool_use"))
        fake.script(anthropic_api.Reply([anthropic_api.text("done")]))
        provider = AnthropicProvider(api_key=fake.api_key, base_url=fake.base_url)
        yield provider
        await provider.aclose()


@contextlib.asynccontextmanager
async def _openai(turns: int) -> AsyncIterator[Provider]:
    with openai_responses.FakeOpenAIResponses() as fake:
        fake.prompt_cache = True
        for n in range(1, turns):
            output = [
                openai_responses.reasoning("thinking"),
                openai_responses.message(f"step {n}"),
                openai_responses.function_call(f"call_{n:02}", "echo", {"n": n}),
            ]
            fake.script(openai_responses.Reply(output))
        fake.script(openai_responses.Reply([openai_responses.message("done")]))
        provider = OpenAIResponsesProvider("gpt-5", api_key=fake.api_key, base_url=fake.base_url)
        yield provider
        await provider.aclose()


def _chat(
    model: str, dialect: Dialect, reasoning: bool
) -> Callable[[int], contextlib.AbstractAsyncContextManager[Provider]]:
    @contextlib.asynccontextmanager
    async def serve(turns: int) -> AsyncIterator[Provider]:
        with chat_completions.FakeChatCompletions() as fake:
            fake.prompt_cache = True
            fake.models = [chat_completions.ModelInfo(model)]
            details = [{"type": "reasoning.text", "text": "thinking", "index": 0}]
            for n in range(1, turns):
                fake.script(
                    chat_completions.Reply(
                        text=f"step {n}",
                        tool_calls=[chat_completions.call(f"call_{n:02}", "echo", {"n": n})],
                        reasoning_details=details if reasoning else (),
                    )
                )
            fake.script(chat_completions.Reply(text="done"))
            provider = ChatCompletionsProvider(
                model, api_key=fake.api_key, base_url=fake.base_url, dialect=dialect
            )
            yield provider
            await provider.aclose()

    return serve


@contextlib.asynccontextmanager
async def _google(turns: int) -> AsyncIterator[Provider]:
    with gemini_api.FakeGemini() as fake:
        fake.prompt_cache = True
        for n in range(1, turns):
            parts = [
                gemini_api.text(f"step {n}"),
                gemini_api.call("echo", {"n": n}, id=f"call_{n:02}", signed=True),
            ]
            fake.script(gemini_api.Reply(parts))
        fake.script(gemini_api.Reply([gemini_api.text("done")]))
        provider = GoogleProvider("gemini-2.5-pro", api_key=fake.api_key, base_url=fake.base_url)
        yield provider
        await provider.aclose()


CASES = (
    Case("anthropic", _anthropic),
    Case("openai", _openai),
    Case("chat-completions", _chat("gpt-4.1", CHAT_COMPLETIONS, reasoning=False)),
    Case("openrouter", _chat("anthropic/claude-sonnet-5.5", OPENROUTER, reasoning=True)),
    Case("google", _google),
)


async def run(case: Case, turns: int) -> tuple[int, Usage]:
    """Provider calls made and the usage they reported."""
    async with case.serve(turns) as provider:
        agent = Agent(provider, tools=[EchoTool()], system=SYSTEM, max_turns=turns + 1)
        result = await agent.send("Run echo for each step, then say done.")
    return result.turns, result.usage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument(
        "--gaps", action="store_true", help="Anthropic's cache over time, with and without 1h"
    )
    args = parser.parse_args()
    if args.gaps:
        gaps.main(args.turns)
        return
    print(
        f"{'adapter':<17} {'calls':>5} {'input tokens':>12} {'cached':>9} {'cached %':>8}"
        f" {'cache writes':>12}"
    )
    for case in CASES:
        calls, usage = asyncio.run(run(case, args.turns))
        total = (
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        )
        cached = usage.cache_read_input_tokens
        share = 100 * cached / total if total else 0.0
        writes = str(usage.cache_creation_input_tokens) if case.name == "anthropic" else "-"
        print(f"{case.name:<17} {calls:>5} {total:>12} {cached:>9} {share:>7.1f}% {writes:>12}")


if __name__ == "__main__":
    main()
