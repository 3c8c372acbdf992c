"""Memo: encodings remembered per message identity."""

from __future__ import annotations

from runner.llm import chat_completions, google, openai_responses
from runner.llm.memo import Memo
from runner.llm.types import Message, Request, Text, ToolResult, ToolUse


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


def test_the_least_recently_used_entry_goes_first() -> None:
    memo: Memo[int] = Memo(size=2)
    a, b, c = (Message("user", (Text(t),)) for t in "abc")
    count = iter(range(100))

    def make(_: Message) -> int:
        return next(count)

    memo.get(a, make)
    memo.get(b, make)
    memo.get(a, make)  # a is now the most recent
    memo.get(c, make)  # evicts b
    assert len(memo) == 2
    assert memo.get(a, make) == 0
    assert memo.get(b, make) == 3


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
