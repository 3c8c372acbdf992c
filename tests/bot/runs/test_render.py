"""What reaches the page stays text: the templates escape every value."""

from __future__ import annotations

import pytest

from bot.runs import render
from bot.runs.stream import message, resume_point, update
from bot.runs.view import place, transcript
from tests.bot.runs.records import Rec, numbered

HOSTILE = '<script>alert(1)</script></details></pre><a href="javascript:alert(2)">x</a>'


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("text", {"text": HOSTILE}),
        ("thinking", {"text": HOSTILE}),
        ("tool_call", {"call_id": HOSTILE, "name": HOSTILE, "args": {"command": HOSTILE}}),
        ("steer", {"author": HOSTILE, "text": HOSTILE}),
        ("network_blocked", {"host": HOSTILE}),
        ("setup", {"command": HOSTILE}),
        ("state", {"state": "failed", "error": HOSTILE}),
        ("made-up", {"x": HOSTILE}),
    ],
)
def test_hostile_text_in_any_record_is_escaped(kind: str, data: dict[str, object]) -> None:
    html = render.item(place(Rec(1, kind, data)))
    assert "<script" not in html
    assert "</details></pre>" not in html
    assert "<a " not in html
    assert "&lt;script&gt;" in html or "&#34;" in html or "&lt;" in html


def test_a_results_output_is_escaped_inside_its_call() -> None:
    records = numbered(
        ("tool_call", {"call_id": "c", "name": "bash", "args": {}}),
        (
            "tool_result",
            {"call_id": "c", "output": HOSTILE, "truncated": True, "output_bytes": 90_000},
        ),
    )
    html = render.item(transcript(records)[0])
    assert "<script" not in html
    assert "&lt;/details&gt;" in html
    assert "Cut: 87.9 KB in all." in html


def test_the_stream_sends_the_escaped_html_and_the_seq_as_the_id() -> None:
    sent = message(Rec(41, "text", {"text": HOSTILE}))
    assert sent.startswith(b"id: 41\ndata: {")
    assert sent.endswith(b"}\n\n")
    assert b"\n" not in sent.removeprefix(b"id: 41\n").removesuffix(b"\n\n")
    assert b"<script" not in sent


def test_a_turn_sets_the_header_and_goes_in_no_transcript() -> None:
    sent = update(
        Rec(
            3,
            "turn",
            {
                "turn": 2,
                "input_tokens": 1200,
                "output_tokens": 5,
                "cost_usd": 0.004,
                "limits": {"cost_usd": 0.996, "seconds": 3000},
            },
        )
    )
    assert "html" not in sent
    assert sent["header"] == {
        "turns": "2",
        "tokens": "1,200 in · 5 out",
        "limits": [
            {"name": "cost", "left": "$1.00 left"},
            {"name": "time", "left": "50m 00s left"},
        ],
        "cost": "$0.0040",
    }


def test_a_final_state_ends_the_page_live_part() -> None:
    assert update(Rec(9, "state", {"state": "succeeded"}))["final"] is True
    assert update(Rec(9, "state", {"state": "running"}))["final"] is False


@pytest.mark.parametrize(
    ("last_event_id", "after", "start"),
    [("12", "5", 12), (None, "5", 5), ("junk", "7", 7), (None, None, 0), ("-3", None, 0)],
)
def test_a_reconnect_resumes_after_the_browsers_last_id_else_the_pages(
    last_event_id: str | None, after: str | None, start: int
) -> None:
    assert resume_point(last_event_id, after) == start


def test_a_subagents_start_and_end_show_its_task_in_its_box() -> None:
    records = numbered(
        (
            "subagent",
            {
                "agent": 1,
                "description": "find the parser",
                "event": {"kind": "started", "data": {}},
            },
        ),
        ("subagent", {"agent": 1, "event": {"kind": "turn", "data": {"turn": 1}}}),
        (
            "subagent",
            {
                "agent": 1,
                "description": "find the parser",
                "event": {"kind": "finished", "data": {"turns": 2, "cost_usd": 0.02}},
            },
        ),
    )
    (box,) = transcript(records)
    html = render.item(box)
    assert 'data-key="agent:1"' in html
    assert "Started: find the parser" in html
    assert "Model call 1" in html
    assert "Finished · 2 model calls · $0.02" in html


@pytest.mark.parametrize(
    ("data", "ended"),
    [
        ({"state": "finished", "conclusion": "success"}, "succeeded"),
        ({"state": "finished", "conclusion": "incomplete"}, "failed"),
        ({"state": "finished", "conclusion": "cancelled"}, "cancelled"),
        ({"state": "finished"}, "finished"),
        ({"state": "cancelled"}, "cancelled"),
        ({"state": "running"}, None),
        ({"state": "queued"}, None),
    ],
)
def test_the_workers_finished_record_ends_the_page_in_its_conclusions_state(
    data: dict[str, object], ended: str | None
) -> None:
    sent = update(Rec(5, "state", data))
    assert sent["final"] is (ended is not None)
    assert sent["header"] == {"state": ended or data["state"]}
