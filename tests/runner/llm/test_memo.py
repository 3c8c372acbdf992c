"""Memo: encodings remembered per message identity."""

from __future__ import annotations

import gc

from runner.agent.copying import copy_message
from runner.llm import chat_completions, google, openai_responses
from runner.llm.memo import Memo
from runner.llm.types import Message, Request, Text, ToolResult, ToolSpec, ToolUse


def test_a_value_is_made_once_per_object() -> None:
    made: list[str] = []
    memo: Memo[str] = Memo()
    first = Message("user", (Text("a"),))

    def make(message: Message) -> str:
        made.append(message.text)
        return message.text.upper()

    assert memo.get(first, make) == "A"
    assert memo.get(first, make) == "A"
    assert made == ["a"]


def test_an_equal_but_distinct_object_and_another_extra_are_made_afresh() -> None:
    calls: list[object] = []
    memo: Memo[int] = Memo()
    first, twin = Message("user", (Text("a"),)), Message("user", (Text("a"),))

    def make(message: Message) -> int:
        calls.append(message)
        return len(calls)

    assert memo.get(first, make) == 1
    assert memo.get(twin, make) == 2
    assert memo.get(first, make, "other") == 3
    assert memo.get(first, make) == 1
    assert memo.get(twin, make) == 2


def test_the_oldest_entry_goes_first() -> None:
    memo: Memo[int] = Memo(size=2)
    a, b, c = (Message("user", (Text(t),)) for t in "abc")
    count = iter(range(100))

    def make(_: Message) -> int:
        return next(count)

    memo.get(a, make)
    memo.get(b, make)
    memo.get(c, make)  # evicts a
    assert len(memo) == 2
    assert memo.get(b, make) == 1
    assert memo.get(a, make) == 3


def _request(turns: int) -> Request:
    messages = [Message("user", (Text("go"),))]
    for n in range(turns):
        messages.append(Message("assistant", (Text("w"), ToolUse(f"c{n}", "echo", {"n": n}))))
        messages.append(Message("user", (ToolResult(f"c{n}", (Text(f"out {n}"),)),)))
    return Request(messages=messages)


def _copy(request: Request) -> Request:
    return Request(messages=[Message(m.role, m.content) for m in request.messages])


def test_cached_encodings_equal_fresh_ones_for_every_adapter() -> None:
    request = _request(3)
    # Twice on the same objects (the second from the memo), once on copies.
    for build in (
        lambda r: openai_responses.build_params("gpt-5", r),
        lambda r: chat_completions.build_params("gpt-4.1", r),
        lambda r: google.build_params("gemini-2.5-pro", r)["contents"],
    ):
        assert build(request) == build(request) == build(_copy(request))


def test_gemini_responses_follow_the_names_of_the_calls_they_answer() -> None:
    answer = Message("user", (ToolResult("c1", (Text("out"),)),))
    asked = [Message("assistant", (ToolUse("c1", name, {}),)) for name in ("first", "second")]
    names = [
        google.build_params("gemini-2.5-pro", Request(messages=[call, answer]))["contents"][1]
        .parts[0]
        .function_response.name
        for call in asked
    ]
    assert names == ["first", "second"]


def test_gemini_configs_follow_each_requests_settings() -> None:
    tools = (ToolSpec("echo", "Echo.", {"type": "object"}),)
    base = Request(messages=[Message("user", (Text("go"),))], tools=tools, max_tokens=1000)
    other = Request(messages=base.messages, tools=tools, max_tokens=2000, tool_choice="none")
    configs = [google.build_params("gemini-2.5-pro", r)["config"] for r in (base, other, base)]
    assert [c.max_output_tokens for c in configs] == [1000, 2000, 1000]
    assert [c.tool_config is None for c in configs] == [True, False, True]


def test_gemini_call_ids_differ_by_turn_and_stay_for_a_retry() -> None:
    turns = [_request(n) for n in (1, 2, 2)]
    prefixes = [google._call_prefix(r) for r in turns]
    assert prefixes[1] == prefixes[2]
    assert prefixes[0] != prefixes[1]
    # Same length, different newest message.
    changed = Request(messages=[*turns[1].messages[:-1], Message("user", (Text("other"),))])
    assert google._call_prefix(changed) != prefixes[1]


def test_an_entry_goes_with_its_message() -> None:
    memo: Memo[str] = Memo()
    kept = Message("user", (Text("kept"),))
    memo.get(kept, lambda m: m.text)
    gone = Message("user", (Text("gone"),))
    memo.get(gone, lambda m: m.text)
    del gone
    gc.collect()
    memo.get(Message("user", (Text("next"),)), lambda m: m.text)  # an addition tidies up
    assert len(memo) == 2
    assert memo.get(kept, lambda m: "made again") == "kept"


def test_an_owner_weakref_cannot_track_is_kept_alive() -> None:
    memo: Memo[int] = Memo()
    specs = (ToolSpec("echo", "Echo.", {}),)
    assert memo.get(specs, len) == 1
    assert memo.get(specs, lambda s: 99) == 1


def test_a_copy_of_a_message_with_tool_calls_is_found_by_value() -> None:
    made: list[Message] = []
    memo: Memo[int] = Memo()
    original = Message("assistant", (Text("w"), ToolUse("c1", "echo", {"n": 1})))

    def make(message: Message) -> int:
        made.append(message)
        return len(made)

    assert memo.get(original, make) == 1
    assert memo.get(copy_message(original), make) == 1
    # Same id and signature, other input: equality tells them apart.
    changed = Message("assistant", (Text("w"), ToolUse("c1", "echo", {"n": 2})))
    assert memo.get(changed, make) == 2
    assert len(made) == 2
