"""Clearing old tool results: which go, which stay, and what the note says."""

from __future__ import annotations

import pytest

from runner.compact import CLEARED_MARK, clear_tool_results
from runner.llm.types import Message, Text, ToolResult, ToolUse
from tests.runner.compact.transcripts import problems


def exchange(call_id: str, name: str, output: str, *, error: bool = False) -> list[Message]:
    return [
        Message("assistant", (ToolUse(call_id, name, {"path": f"{call_id}.py"}),)),
        Message("user", (ToolResult(call_id, (Text(output),), is_error=error),)),
    ]


def transcript(*exchanges: list[Message]) -> list[Message]:
    messages = [Message("user", (Text("Fix the flaky date test."),))]
    for part in exchanges:
        messages += part
    return messages


def result_texts(messages: tuple[Message, ...]) -> list[str]:
    return [b.text for m in messages for b in m.content if isinstance(b, ToolResult)]


CASES = [
    pytest.param(
        [("a", "read_file", "x" * 5000, False), ("b", "read_file", "y" * 10, False)],
        1,
        ["cleared", "y" * 10],
        id="all-but-the-newest",
    ),
    pytest.param(
        [("a", "bash", "boom", True), ("b", "read_file", "y", False), ("c", "grep", "z", False)],
        1,
        ["boom", "cleared", "z"],
        id="error-results-stay",
    ),
    pytest.param(
        [
            ("a", "workflow", "[ ] step", False),
            ("b", "read_file", "y", False),
            ("c", "grep", "z", False),
        ],
        1,
        ["[ ] step", "cleared", "z"],
        id="the-checklist-stays",
    ),
    pytest.param(
        [("a", "read_file", "x", False), ("b", "read_file", "y", False)],
        2,
        ["x", "y"],
        id="nothing-past-keep",
    ),
]


@pytest.mark.parametrize(("calls", "keep", "expected"), CASES)
def test_clearing(calls: list[tuple[str, str, str, bool]], keep: int, expected: list[str]) -> None:
    messages = transcript(*(exchange(i, n, o, error=e) for i, n, o, e in calls))
    cleared, count = clear_tool_results(messages, keep=keep, keep_tools=("workflow",))

    texts = result_texts(cleared)
    assert len(texts) == len(expected)
    for text, want in zip(texts, expected, strict=True):
        if want == "cleared":
            assert text.startswith(CLEARED_MARK)
        else:
            assert text == want
    assert count == expected.count("cleared")
    assert problems(cleared) == []


def test_a_cleared_result_names_the_tool_its_arguments_and_its_size() -> None:
    messages = transcript(exchange("a", "read_file", "é" * 1000), exchange("b", "bash", "ok"))
    cleared, _ = clear_tool_results(messages, keep=1)
    note = result_texts(cleared)[0]
    assert note == (
        f'{CLEARED_MARK} read_file {{"path": "a.py"}} returned 2,000 bytes;'
        " call it again if you need it."
    )


def test_clearing_again_changes_nothing() -> None:
    messages = transcript(*(exchange(str(i), "read_file", "x" * 100) for i in range(6)))
    once, first = clear_tool_results(messages, keep=2)
    twice, second = clear_tool_results(once, keep=2)
    assert (first, second) == (4, 0)
    assert twice == once
