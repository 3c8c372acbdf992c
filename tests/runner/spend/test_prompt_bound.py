"""The prompt bound: never below what a provider counts, tightened by what it counted."""

from __future__ import annotations

import json

from runner.llm.types import (
    Image,
    Message,
    Request,
    SystemPrompt,
    Text,
    ToolResult,
    ToolSpec,
    ToolUse,
    Usage,
)
from runner.spend.prompt_bound import PromptBound, bound_messages, bound_request, within_window

TASK = Message("user", (Text("fix the date test " * 500),))
SYSTEM = SystemPrompt(("You are Neo.", "Project notes: " + "x" * 3_000))
TOOLS = (ToolSpec("bash", "Run a command.", {"type": "object", "properties": {}}),)


def test_every_byte_of_text_is_at_least_one_token() -> None:
    unicode = Message("user", (Text("日本語のテキスト" * 100),))

    assert bound_messages([unicode]) >= len("日本語のテキスト".encode()) * 100


def test_tool_input_is_counted_in_its_longest_json_form() -> None:
    call = Message("assistant", (ToolUse("t1", "write_file", {"text": "é" * 1_000}),))

    # Escaped, each "é" is six bytes: "\u00e9".
    assert bound_messages([call]) >= len(json.dumps({"text": "é" * 1_000}))


def test_images_tools_and_the_system_prompt_are_counted() -> None:
    image = Message("user", (ToolResult("t1", (Image("image/png", "AAAA"),)),))
    bare = Request(messages=(image,))
    full = Request(messages=(image,), system=SYSTEM, tools=TOOLS)

    assert bound_request(bare) >= 1_600  # a screenshot, whatever its encoded size
    assert bound_request(full) >= bound_request(bare) + 3_000 + 300


def test_a_conversations_next_request_is_its_last_count_plus_what_was_appended() -> None:
    bound = PromptBound()
    first = Request(messages=(TASK,), system=SYSTEM, tools=TOOLS)
    bound.counted(first, Usage(input_tokens=10, cache_read_input_tokens=2_490))
    added = (Message("assistant", (Text("done"),)), Message("user", (Text("thanks"),)))
    follow = Request(messages=(TASK, *added), system=SYSTEM, tools=TOOLS)

    tokens = bound.tokens(follow)

    assert tokens == int(2_500 * 1.01) + 256 + bound_messages(added)
    assert tokens < bound_request(follow)


def test_a_request_that_is_not_a_continuation_gets_the_full_bound() -> None:
    bound = PromptBound()
    first = Request(messages=(TASK,), system=SYSTEM, tools=TOOLS)
    bound.counted(first, Usage(input_tokens=2_500))
    other_system = Request(messages=(TASK,), system=SystemPrompt(("Summarise.",)), tools=TOOLS)
    rewritten = Request(messages=(Message("user", (Text("notes"),)),), system=SYSTEM, tools=TOOLS)
    other_tools = Request(messages=(TASK,), system=SYSTEM, tools=())

    for request in (other_system, rewritten, other_tools):
        assert bound.tokens(request) == bound_request(request)


def test_the_last_word_is_its_conversations_next_request_whatever_its_tool_choice() -> None:
    # It asks for no tool: bounded from its text alone, it was about four
    # times its size, more than the run had kept back for it.
    bound = PromptBound()
    first = Request(messages=(TASK,), system=SYSTEM, tools=TOOLS)
    bound.counted(first, Usage(input_tokens=2_500))
    added = (Message("assistant", (Text("done"),)), Message("user", (Text("sum up"),)))
    last_word = Request(messages=(TASK, *added), system=SYSTEM, tool_choice="none", tools=TOOLS)

    tokens = bound.tokens(last_word)

    # The tools' preamble allowed for again, as a provider may word it otherwise.
    assert tokens == int(2_500 * 1.01) + 256 + 1_024 + bound_messages(added)
    assert tokens < bound_request(last_word)


def test_a_known_models_window_caps_the_bound_an_unknown_ones_does_not() -> None:
    assert within_window(10**7, "claude-sonnet-5-5") == 200_000
    assert within_window(10**7, "some-local-model") == 10**7
    assert within_window(5, "claude-sonnet-5-5") == 5
