"""The user's requests through compactions: found, kept in the head, found again."""

from __future__ import annotations

from runner.compact.requests import (
    COMPACTED_MARK,
    compacted_head,
    request_indexes,
    shorten,
    user_requests,
)
from runner.compact.summary import render_for_summary
from runner.llm.types import Message, Text, ToolResult, ToolUse


def exchange(n: int, output: str = "ok") -> list[Message]:
    call = ToolUse(f"t{n}", "bash", {"command": f"step {n}"})
    return [
        Message("assistant", (Text(f"Step {n}."), call)),
        Message(
            "user",
            (ToolResult(call.id, (Text(output),)), Text("[Neo: 8 of 10 model calls used]")),
        ),
    ]


def thread() -> list[Message]:
    return [
        Message("user", (Text("Fix the flaky date test."),)),
        *exchange(1),
        Message("assistant", (Text("Fixed."),)),
        Message("user", (Text("[Neo: this job failed (timeout: ...).]"), Text("Also handle X."))),
        *exchange(2),
        Message("assistant", (Text("Handled."),)),
        Message("user", (Text("And document it."),)),
    ]


def test_requests_are_the_users_words_and_never_neos_notes() -> None:
    messages = thread()

    assert user_requests(messages) == [
        "Fix the flaky date test.",
        "Also handle X.",
        "And document it.",
    ]
    assert request_indexes(messages) == [0, 4, 8]


def test_a_head_keeps_every_request_and_a_later_compaction_finds_them_again() -> None:
    head = compacted_head(user_requests(thread()), "## Requests\n- all three", 9, cap_tokens=1_000)

    blocks = [b.text for b in head.content if isinstance(b, Text)]
    assert blocks[:3] == [
        "[Earlier request 1 of 2]\nFix the flaky date test.",
        "[Earlier request 2 of 2]\nAlso handle X.",
        "Current request:\n\nAnd document it.",
    ]
    assert blocks[3].startswith(COMPACTED_MARK + " 9 earlier messages were replaced")
    assert blocks[3].endswith("\n\n## Requests\n- all three")
    # Compacted again, with a fourth request since: nothing is lost.
    later = [head, *exchange(3), Message("assistant", (Text("Documented."),))]
    later.append(Message("user", (Text("Now release it."),)))
    assert user_requests(later) == [
        "Fix the flaky date test.",
        "Also handle X.",
        "And document it.",
        "Now release it.",
    ]


def test_past_the_cap_the_oldest_requests_are_shortened_never_dropped() -> None:
    requests = ["A" * 5_000 + " the oldest ask", "B" * 3_000, "C" * 3_000, "the current one"]

    head = compacted_head(requests, "notes", 3, cap_tokens=1_500)  # 6,000 characters

    kept = user_requests([head])
    assert kept[-1] == "the current one"
    assert kept[1:3] == ["B" * 3_000, "C" * 3_000]  # the newest, whole
    assert kept[0] == shorten(requests[0], 600)
    assert kept[0].endswith("the oldest ask")
    assert len(kept) == 4


def test_a_head_written_before_requests_had_blocks_is_read_too() -> None:
    legacy = Message(
        "user",
        (Text(f"Fix the flaky date test.\n\n{COMPACTED_MARK} 40 earlier messages ...]\n\nnotes"),),
    )

    assert user_requests([legacy]) == ["Fix the flaky date test."]


def test_the_summariser_sees_every_request_even_when_the_middle_is_cut() -> None:
    messages = [Message("user", (Text("Fix the flaky date test."),))]
    for n in range(40):
        messages += exchange(n, output="x" * 2_000)
        if n == 10:
            messages.append(Message("assistant", (Text("Fixed."),)))
            messages.append(Message("user", (Text("Also handle X."),)))

    document = render_for_summary(messages, 20_000)

    assert "older messages left out here" in document
    assert "user: Fix the flaky date test." in document
    assert "user: Also handle X." in document
    assert len(document) < 24_000
