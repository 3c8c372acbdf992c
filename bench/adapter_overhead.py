"""The adapters' own cost per turn: building the request and parsing the response.

For transcripts of 50 and 200 tool turns (10 KB of tool output each) this
prints, per adapter, the median time to build the request parameters and to
parse a finished response of one text block and one tool call, both pure
functions with no network.

    uv run python -m bench.adapter_overhead [--repeat 50]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable

from anthropic.types import Message as AnthropicMessage
from openai.types.responses import Response as OpenAIResponse

from runner.llm import anthropic as anthropic_adapter
from runner.llm import openai_responses
from runner.llm.types import Message, Request, SystemPrompt, Text, ToolResult, ToolSpec, ToolUse

SIZES = (50, 200)
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


def transcript(turns: int) -> Request:
    messages = [Message("user", (Text("go"),))]
    for n in range(turns):
        messages.append(Message("assistant", (Text("working"), ToolUse(f"c{n}", "echo", {"n": n}))))
        messages.append(Message("user", (ToolResult(f"c{n}", (Text(OUTPUT),)),)))
    return Request(messages=messages, system=SystemPrompt(("base", "env")), tools=(SPEC,))


def median_ms(work: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    print(f"{'adapter':>10} {'turns':>6} {'build ms':>9} {'parse ms':>9} {'total ms':>9}")
    for turns in SIZES:
        request = transcript(turns)
        rows = {
            "anthropic": (
                functools.partial(anthropic_adapter.build_params, "claude-sonnet-5-5", request),
                lambda: anthropic_adapter.parse_message(
                    AnthropicMessage.model_validate(ANTHROPIC_REPLY)
                ),
            ),
            "openai": (
                functools.partial(openai_responses.build_params, "gpt-5", request),
                lambda: openai_responses.parse_response(
                    OpenAIResponse.model_validate(OPENAI_REPLY)
                ),
            ),
        }
        for name, (build, parse) in rows.items():
            b, p = median_ms(build, args.repeat), median_ms(parse, args.repeat)
            print(f"{name:>10} {turns:>6} {b:>9.3f} {p:>9.3f} {b + p:>9.3f}")


if __name__ == "__main__":
    main()
