"""The adapters' own cost per turn: building the request and parsing the response.

For transcripts of 50 and 200 tool turns (10 KB of tool output each, the same
content for every adapter) this prints, per adapter, the median time to build
the request and to parse a reply of one text block and one tool call: the
adapter's pure functions, no network, no HTTP client. Each timed turn gets the
transcript as the agent loop passes it (a fresh copy of every message holding
tool calls), its newest exchange new to the adapter.
Parsing starts from the SDK's own objects (the finished message for Anthropic
and OpenAI Responses, the chunks for Chat Completions and Gemini); building
those from wire JSON is the SDK's work, shown apart as `sdk ms`. Each case is
warmed up, then timed `--repeat` times with the garbage collector off (as
`timeit` does), the adapters taking turns so a slow spell of the machine hits
them alike; the medians are compared with the targets: at most 2 ms a turn,
within 1.5x of the Anthropic adapter.

    uv run python -m bench.adapter_overhead [--repeat 300]
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from anthropic.types import Message as AnthropicMessage
from google.genai import types as gt
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import Response as OpenAIResponse

from runner.agent.copying import copy_block, copy_message
from runner.llm import anthropic as anthropic_adapter
from runner.llm import chat_completions, google, openai_responses
from runner.llm.openrouter import OPENROUTER
from runner.llm.types import Message, Request, SystemPrompt, Text, ToolResult, ToolSpec, ToolUse

SIZES = (50, 200)
TARGET_MS = 2.0
TARGET_RATIO = 1.5
WARMUP = 20
OUTPUT = ("x" * 99 + "\n") * 100
SPEC = ToolSpec("echo", "Echo.", {"type": "object", "properties": {"n": {"type": "integer"}}})

ANTHROPIC_REPLY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-5-5",
    "content": [
        {"type": "text", "text": "working"},
        {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"n": 1}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 5},
}
OPENAI_REPLY = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "status": "completed",
    "model": "gpt-5",
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "output": [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "encrypted_content": "gAAAA" + "x" * 800,
        },
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "working", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "echo",
            "arguments": '{"n": 1}',
        },
    ],
    "usage": {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    },
}


def _chunk(delta: Mapping[str, Any] | None, finish: str | None = None, **extra: Any) -> Any:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "gpt-4.1",
        "choices": choices,
        **extra,
    }


def _call_delta(**function: str) -> dict[str, Any]:
    call: dict[str, Any] = {"index": 0, "function": function}
    if "name" in function:
        call.update(id="call_1", type="function")
    return {"tool_calls": [call]}


# The same reply as the others, streamed as a server sends it.
CHAT_CHUNKS = [
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"content": "work"}),
    _chunk({"content": "ing"}),
    _chunk(_call_delta(name="echo", arguments="")),
    _chunk(_call_delta(arguments='{"n"')),
    _chunk(_call_delta(arguments=": 1}")),
    _chunk({}, "tool_calls"),
    _chunk(
        None,
        usage={
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "total_tokens": 15,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    ),
]
GEMINI_CHUNKS = [
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "work"}]}}]},
    {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "ing"},
                        {
                            "function_call": {"id": "call_1", "name": "echo", "args": {"n": 1}},
                            "thought_signature": b"sig" * 100,
                        },
                    ],
                },
                "finish_reason": "STOP",
            }
        ],
        "usage_metadata": {
            "prompt_token_count": 10,
            "candidates_token_count": 5,
            "total_token_count": 15,
        },
        "model_version": "gemini-2.5-pro",
    },
]


def transcript(turns: int) -> Request:
    messages = [Message("user", (Text("go"),))]
    for n in range(turns):
        messages.append(Message("assistant", (Text("working"), ToolUse(f"c{n}", "echo", {"n": n}))))
        messages.append(Message("user", (ToolResult(f"c{n}", (Text(OUTPUT),)),)))
    return Request(messages=messages, system=SystemPrompt(("base", "env")), tools=(SPEC,))


@dataclass(frozen=True, slots=True)
class Adapter:
    name: str
    build: Callable[[Request], object]
    # What the SDK hands over, from wire JSON; then the adapter's parse of it.
    receive: Callable[[], Any]
    parse: Callable[[Any], object]


def _parse_chat(provider: str | None) -> Callable[[list[ChatCompletionChunk]], object]:
    def parse(chunks: list[ChatCompletionChunk]) -> object:
        assembly = chat_completions.ChunkAssembly(provider)
        for chunk in chunks:
            assembly.feed(chunk)
        return assembly.finish()

    return parse


def _build_google(request: Request) -> object:
    # The call-id prefix is worked out from the request on every call too.
    return google.build_params("gemini-2.5-pro", request), google._call_prefix(request)


def _parse_google(chunks: list[gt.GenerateContentResponse]) -> object:
    state = google.StreamState("neo-call-x-")
    for chunk in chunks:
        state.add(chunk)
    return state.response("gemini-2.5-pro")


def _chat_chunks() -> list[ChatCompletionChunk]:
    return [ChatCompletionChunk.model_validate(raw) for raw in CHAT_CHUNKS]


ADAPTERS = (
    Adapter(
        "anthropic",
        lambda r: anthropic_adapter.build_params("claude-sonnet-5-5", r),
        lambda: AnthropicMessage.model_validate(ANTHROPIC_REPLY),
        anthropic_adapter.parse_message,
    ),
    Adapter(
        "openai",
        lambda r: openai_responses.build_params("gpt-5", r),
        lambda: OpenAIResponse.model_validate(OPENAI_REPLY),
        openai_responses.parse_response,
    ),
    Adapter(
        "chat-completions",
        lambda r: chat_completions.build_params("gpt-4.1", r),
        _chat_chunks,
        _parse_chat(None),
    ),
    Adapter(
        "openrouter",
        lambda r: chat_completions.build_params(
            "anthropic/claude-sonnet-5.5", r, dialect=OPENROUTER, official=False
        ),
        _chat_chunks,
        _parse_chat(OPENROUTER.name),
    ),
    Adapter(
        "google",
        _build_google,
        lambda: [gt.GenerateContentResponse.model_validate(raw) for raw in GEMINI_CHUNKS],
        _parse_google,
    ),
)


def turn_requests(turns: int, count: int) -> list[Request]:
    """`count` requests for turn `turns`, each as the agent loop sends one: a
    copy of the transcript (`copy_message`, which shares the frozen blocks and
    copies tool calls), whose newest exchange is new to the adapter."""
    base = transcript(turns)
    head, tail = list(base.messages[:-2]), base.messages[-2:]
    return [
        Request(
            messages=[
                *(copy_message(m) for m in head),
                *(Message(m.role, tuple(copy_block(b) for b in m.content)) for m in tail),
            ],
            system=base.system,
            tools=base.tools,
        )
        for _ in range(count)
    ]


def _timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def measure(requests: Sequence[Request], repeat: int) -> dict[str, tuple[float, float, float]]:
    """Median build, parse and SDK milliseconds per adapter.

    The adapters take turns within each round, so a machine that slows down
    for a while slows them all alike.
    """
    received = {a.name: a.receive() for a in ADAPTERS}
    samples: dict[str, tuple[list[float], list[float], list[float]]] = {
        a.name: ([], [], []) for a in ADAPTERS
    }
    gc.collect()
    gc.disable()
    try:
        for i in range(WARMUP + repeat):
            for a in ADAPTERS:
                times = (
                    _timed(functools.partial(a.build, requests[i])),
                    _timed(functools.partial(a.parse, received[a.name])),
                    _timed(a.receive),
                )
                if i >= WARMUP:
                    for into, took in zip(samples[a.name], times, strict=True):
                        into.append(took)
    finally:
        gc.enable()
    return {
        name: (
            statistics.median(b) * 1000,
            statistics.median(p) * 1000,
            statistics.median(s) * 1000,
        )
        for name, (b, p, s) in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    print(
        f"{'adapter':<17} {'turns':>5} {'build ms':>9} {'parse ms':>9} {'total ms':>9}"
        f" {'vs anthropic':>12}  {'<=2 ms':<6} {'<=1.5x':<6} {'sdk ms':>7}"
    )
    for turns in SIZES:
        figures = measure(turn_requests(turns, WARMUP + args.repeat), args.repeat)
        baseline = sum(figures["anthropic"][:2])
        for name, (build, parse, sdk) in figures.items():
            total = build + parse
            ratio = total / baseline
            fast = "pass" if total <= TARGET_MS else "FAIL"
            near = "pass" if ratio <= TARGET_RATIO else "FAIL"
            print(
                f"{name:<17} {turns:>5} {build:>9.3f} {parse:>9.3f} {total:>9.3f}"
                f" {ratio:>11.2f}x  {fast:<6} {near:<6} {sdk:>7.3f}"
            )


if __name__ == "__main__":
    main()
