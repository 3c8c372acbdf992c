from __future__ import annotations

from bot.jobs import Job, JobKind, JobRequest, JobState, Thread, TriggerKind
from bot.runs.view import header, place, transcript
from tests.bot.runs.records import Rec, in_subagent, numbered


def _job(state: JobState = JobState.RUNNING) -> Job:
    request = JobRequest(
        kind=JobKind.TASK,
        thread=Thread("octo/hello", 7),
        installation_id=1,
        event="issue_comment.created",
        trigger=TriggerKind.COMMENT,
        trigger_id=3,
        author="mona",
        author_association="OWNER",
        instruction="fix it",
        dedupe_key="k",
        delivery_id="d",
    )
    return Job(1, request, state, 1, created_at=900.0, updated_at=950.0)


def test_a_call_opens_a_container_its_result_goes_into() -> None:
    call = place(Rec(1, "tool_call", {"call_id": "c1", "name": "bash", "args": {}}))
    result = place(Rec(2, "tool_result", {"call_id": "c1", "output": "ok"}))
    assert (call.key, call.into) == ("call::c1", None)
    assert result.into == "call::c1"


def test_a_subagents_records_are_unwrapped_into_its_box_nested_ones_into_theirs() -> None:
    inner = in_subagent("1", "tool_call", {"call_id": "c1", "name": "grep", "args": {}})
    nested = in_subagent("2", *in_subagent("a", "text", {"text": "deep"}))
    shown, deep = place(Rec(1, *inner)), place(Rec(2, *nested))
    assert (shown.kind, shown.agent, shown.key, shown.into) == (
        "tool_call",
        "1",
        "call:1:c1",
        "agent:1",
    )
    assert (deep.kind, deep.agent, deep.into) == ("text", "2/a", "agent:2/a")


def test_the_transcript_puts_results_in_calls_and_subagents_in_boxes() -> None:
    records = numbered(
        ("text", {"text": "looking"}),
        ("tool_call", {"call_id": "c1", "name": "bash", "args": {"command": "ls"}}),
        in_subagent("1", "tool_call", {"call_id": "c1", "name": "read", "args": {}}),
        ("turn", {"turn": 1}),
        ("tool_result", {"call_id": "c1", "output": "a b"}),
        in_subagent("1", "tool_result", {"call_id": "c1", "output": "inner"}),
        in_subagent("1", *in_subagent("x", "text", {"text": "grandchild"})),
        ("tool_result", {"call_id": "gone", "output": "its call was dropped"}),
    )
    top = transcript(records)
    assert [s.kind for s in top] == ["text", "tool_call", "agent", "tool_result"]
    assert top[1].result is not None
    assert top[1].result.data["output"] == "a b"
    box = top[2]
    assert [c.kind for c in box.children] == ["tool_call", "agent"]
    assert box.children[0].result is not None
    assert box.children[0].result.data["output"] == "inner"
    assert box.children[1].children[0].data == {"text": "grandchild"}


def test_the_header_shows_the_last_turns_totals_the_checklist_and_what_is_left() -> None:
    records = numbered(
        ("state", {"state": "running", "model": "claude-x"}),
        ("turn", {"turn": 1, "input_tokens": 100, "output_tokens": 10}),
        ("checklist", {"items": [{"text": "read", "done": True}, {"text": "fix", "done": False}]}),
        (
            "turn",
            {
                "turn": 2,
                "input_tokens": 250,
                "output_tokens": 30,
                "cost_usd": 0.5,
                "limits": {"turns": 48, "cost_usd": 1.5, "bad": "x"},
            },
        ),
    )
    h = header(_job(), records)
    assert (h.model, h.turns, h.input_tokens, h.output_tokens, h.cost_usd) == (
        "claude-x",
        2,
        250,
        30,
        0.5,
    )
    assert h.checklist == (("read", True), ("fix", False))
    assert [(limit.name, limit.left) for limit in h.limits] == [("turns", 48.0), ("cost_usd", 1.5)]
    assert (h.started_at, h.ended_at, h.final, h.last_seq) == (1001.0, None, False, 4)
    assert (h.repository, h.number, h.requester) == ("octo/hello", 7, "mona")


def test_an_ended_jobs_header_is_final_even_without_its_last_state_record() -> None:
    h = header(_job(JobState.FAILED), [])
    assert (h.final, h.ended_at, h.last_seq) == (True, 950.0, 0)
