"""bot.worker.progress: events -> state -> the live comment and the report.

Rendered Markdown is checked the way GitHub would read it where it matters:
parsed with a CommonMark parser, looking for mentions, raw HTML and code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from bot.worker.progress import (
    Command,
    Conclusion,
    Outcome,
    Progress,
    ProgressState,
    Status,
    Throttle,
    describe_call,
    job_id_of,
    job_marker,
)
from bot.worker.rendering import MAX_COMMENT_CHARS, format_duration, render_progress, render_report
from bot.worker.untrusted import neutralise
from runner.agent.events import (
    Compacted,
    Event,
    ProviderRetry,
    TextDelta,
    ToolFinished,
    ToolNotice,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from runner.llm.types import JSON, JSONObject, Usage
from runner.sandbox import LocalSandbox
from runner.skills import SkillsInvoked
from runner.tools import BashTool, ToolContext
from runner.tools.checklist import ChecklistChanged, ChecklistItem

ZWSP = "\u200b"
MD = MarkdownIt("commonmark").enable("table")


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def started(call_id: str, name: str, **args: JSON) -> ToolStarted:
    return ToolStarted(call_id, name, dict(args))


def finished(
    call_id: str, name: str, output: str = "ok", *, is_error: bool = False
) -> ToolFinished:
    return ToolFinished(call_id, name, is_error, output, len(output), False, 5)


def bash(progress: Progress, call_id: str, command: str, output: str, **kw: bool) -> None:
    progress.apply(started(call_id, "bash", command=command))
    progress.apply(finished(call_id, "bash", output, **kw))


def checklist(*items: tuple[str, str]) -> ToolNotice:
    changed = ChecklistChanged(tuple(ChecklistItem(content, status) for content, status in items))  # type: ignore[arg-type]
    return ToolNotice("w1", "workflow", changed)


def working(job_id: int = 42, clock: Clock | None = None) -> Progress:
    progress = Progress(job_id, clock=clock or Clock())
    progress.start()
    progress.apply(TurnStarted(1))
    return progress


def status(progress: Progress) -> Status:
    return progress.state.status


def step(progress: Progress) -> str | None:
    current = progress.state.step
    return None if current is None else current.text


def outcome(conclusion: Conclusion = Conclusion.SUCCESS, **kw: object) -> Outcome:
    fields: dict[str, object] = {
        "summary": "Fixed the date test.",
        "usage": Usage(1234, 567, 89, 10),
        "cost_usd": 0.0421,
        "duration_ms": 252_000,
        "num_turns": 7,
        # A job that succeeded or stopped early pushed a change (a review or an answer
        # says otherwise).
        "changed": conclusion in (Conclusion.SUCCESS, Conclusion.INCOMPLETE),
    }
    fields.update(kw)
    return Outcome(conclusion=conclusion, **fields)  # type: ignore[arg-type]


# --- what GitHub would see ---------------------------------------------------------


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        if token.children:
            yield from _walk(token.children)


def prose_text(markdown: str) -> str:
    """The text GitHub scans for mentions: everything but code."""
    texts = [
        token.content
        for token in _walk(MD.parse(markdown))
        if token.type in ("text", "html_inline", "html_block")
    ]
    return "\n".join(texts)


def raw_html(markdown: str) -> list[str]:
    return [t.content for t in _walk(MD.parse(markdown)) if t.type in ("html_inline", "html_block")]


def code_text(markdown: str) -> str:
    return "\n".join(
        t.content for t in _walk(MD.parse(markdown)) if t.type in ("fence", "code_inline")
    )


MENTION = re.compile(r"(?<![A-Za-z0-9])@[A-Za-z0-9]")


# --- the marker --------------------------------------------------------------------


def test_marker_round_trips_and_only_counts_at_the_start() -> None:
    assert job_marker(42) == "<!-- neo:job=42 -->"
    assert job_id_of(job_marker("abc-1") + "\nrest") == "abc-1"
    assert job_id_of("text\n<!-- neo:job=42 -->") is None
    with pytest.raises(ValueError, match="job id"):
        job_marker("42 --> <b>")


def test_progress_and_report_start_with_the_marker() -> None:
    progress = working(7)
    assert render_progress(progress.state, now=1000.0).startswith("<!-- neo:job=7 -->\n")
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome(summary="<!-- neo:job=99 --> hi"))
    assert job_id_of(report) == "7"
    assert report.count("neo:job=") == 2  # ours, and the summary's, defused
    assert "<!-- neo:job=99" not in report


# --- state -------------------------------------------------------------------------


def test_status_goes_queued_starting_working_then_final() -> None:
    clock = Clock(100.0)
    progress = Progress(1, clock=clock)
    assert status(progress) is Status.QUEUED
    assert "⏳ **Queued**" in render_progress(progress.state, now=100.0)
    clock.now = 110.0
    progress.start()
    assert status(progress) is Status.STARTING
    assert progress.state.started_at == 110.0
    progress.apply(TurnStarted(1))
    assert status(progress) is Status.WORKING
    clock.now = 300.0
    progress.finish(Conclusion.NO_CHANGES)
    assert status(progress) is Status.DONE
    # Events after the end change nothing; the elapsed time is frozen.
    progress.apply(started("c1", "bash", command="ls"))
    assert progress.state.calls == ()
    assert progress.state.elapsed(now=9999.0) == 190.0


@pytest.mark.parametrize(
    ("conclusion", "status"),
    [
        (Conclusion.SUCCESS, Status.DONE),
        (Conclusion.FAILED, Status.FAILED),
        (Conclusion.CANCELLED, Status.CANCELLED),
    ],
)
def test_finish_maps_conclusions_to_statuses(conclusion: Conclusion, status: Status) -> None:
    progress = working()
    progress.finish(conclusion)
    assert progress.state.status is status
    assert progress.state.step is None


def test_checklist_is_the_latest_workflow_change() -> None:
    progress = working()
    progress.apply(checklist(("Reproduce", "in_progress"), ("Fix", "pending")))
    progress.apply(checklist(("Reproduce", "done"), ("Fix", "in_progress"), ("Test", "pending")))
    assert [item.content for item in progress.state.checklist] == ["Reproduce", "Fix", "Test"]
    text = render_progress(progress.state, now=1000.0)
    assert "- [x] Reproduce\n- [ ] 🔄 Fix — _in progress_\n- [ ] Test" in text
    # A notice that is not a checklist leaves it alone.
    progress.apply(ToolNotice("x", "other", {"items": []}))
    assert len(progress.state.checklist) == 3


def test_the_checklist_tool_is_the_checklist_never_a_tool_call() -> None:
    # `workflow: 3 items` among the calls read as GitHub Actions.
    progress = working()
    progress.apply(started("w1", "workflow", items=[{"content": "Fix", "status": "pending"}]))
    assert step(progress) == "thinking"
    progress.apply(checklist(("Fix", "in_progress")))
    progress.apply(finished("w1", "workflow", "ok"))
    bash(progress, "c1", "pytest -q", "exit code: 0")
    progress.apply(started("w2", "workflow", items=[]))
    progress.apply(finished("w2", "workflow", "ok"))

    assert [call.name for call in progress.state.calls] == ["bash"]
    live = render_progress(progress.state, now=1000.0)
    assert "<sub>1 tool call so far</sub>" in live
    assert "- [ ] 🔄 Fix — _in progress_" in live
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome())
    assert "workflow" not in report
    assert "<summary>1 tool call</summary>" in report


def test_a_finished_report_shows_no_step_in_progress() -> None:
    progress = working()
    progress.apply(checklist(("Reproduce", "done"), ("Fix", "in_progress"), ("Test", "pending")))
    progress.finish(Conclusion.SUCCESS)

    report = render_report(progress.state, outcome())

    assert "**Checklist**\n\n- [x] Reproduce\n- [ ] Fix\n- [ ] Test" in report
    assert "in progress" not in report
    assert "🔄" not in report


def test_a_call_the_end_of_the_job_cut_short_is_not_shown_running() -> None:
    progress = working()
    bash(progress, "c1", "make deps", "exit code: 0")
    progress.apply(started("c2", "bash", command="make test"))
    progress.finish(Conclusion.CANCELLED)

    report = render_report(progress.state, outcome(Conclusion.CANCELLED, cancelled_by="mona"))

    assert "- ✅ `bash: make deps` → exit 0\n- ⏹️ `bash: make test` → did not finish" in report
    assert "⏳" not in report


@pytest.mark.parametrize(
    ("conclusion", "changed", "shown"),
    [
        (Conclusion.SUCCESS, True, True),
        (Conclusion.INCOMPLETE, True, True),
        # An answer to a question, a review: nothing changed, nothing to verify.
        (Conclusion.NO_CHANGES, False, False),
        (Conclusion.SUCCESS, False, False),
        (Conclusion.FAILED, False, False),
    ],
)
def test_what_was_verified_shows_only_where_code_changed(
    conclusion: Conclusion, changed: bool, shown: bool
) -> None:
    progress = working()
    bash(progress, "c1", "pytest -q", "1 failed\nexit code: 1")
    progress.finish(conclusion)

    report = render_report(progress.state, outcome(conclusion, changed=changed))

    assert ("**What was verified**" in report) is shown
    assert ("⚠️ The last test run failed" in report) is shown
    assert "- ❌ `bash: pytest -q` → exit 1" in report  # the call itself is always listed
    nothing = render_report(working().state, outcome(conclusion, changed=changed))
    assert ("No tests, builds or linters were run" in nothing) is shown


def test_current_step_follows_the_calls() -> None:
    progress = working()
    assert "**Now:** _thinking_" in render_progress(progress.state, now=1000.0)
    progress.apply(started("c1", "bash", command="pytest -q"))
    assert "**Now:** `bash: pytest -q`" in render_progress(progress.state, now=1000.0)
    # Two calls at once: the latest still running is shown.
    progress.apply(started("c2", "read_file", path="src/app.py"))
    assert step(progress) == "read_file: src/app.py"
    progress.apply(finished("c2", "read_file"))
    assert step(progress) == "bash: pytest -q"
    progress.apply(finished("c1", "bash", "exit code: 0"))
    assert step(progress) == "thinking"
    progress.apply(TextDelta("hmm"))
    assert step(progress) == "thinking"
    progress.apply(ProviderRetry(2, 4.0, "overloaded"))
    assert step(progress) == "the model provider failed (overloaded); retry 2 in 4s"
    progress.apply(TurnFinished("end_turn", "done", Usage()))
    assert progress.state.step is None  # after the turn
    progress.note("pushing the branch")
    assert "**Now:** _pushing the branch_" in render_progress(progress.state, now=1000.0)


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("bash", {"command": "pytest -q"}, "bash: pytest -q"),
        ("bash", {"command": "cd x &&\n  make   test"}, "bash: cd x && make test"),
        ("edit_file", {"path": "src/app.py", "old_string": "a"}, "edit_file: src/app.py"),
        ("write_file", {"path": "README.md", "content": "x"}, "write_file: README.md"),
        ("read_file", {"path": "a.py", "offset": 3}, "read_file: a.py"),
        ("grep", {"pattern": "def main", "path": "src"}, "grep: def main in src"),
        ("grep", {"pattern": "TODO", "path": "."}, "grep: TODO"),
        ("glob", {"pattern": "**/*.py"}, "glob: **/*.py"),
        ("mystery", {"n": 3, "query": "hello"}, "mystery: hello"),
        ("bash", {}, "bash"),
    ],
)
def test_describe_call(name: str, args: JSONObject, expected: str) -> None:
    assert describe_call(name, args) == expected


def test_describe_call_caps_long_commands() -> None:
    line = describe_call("bash", {"command": "echo " + "x" * 500})
    assert len(line) == 120
    assert line.endswith("…")


async def test_a_command_that_left_a_process_behind_still_counts_its_exit_code(
    tmp_path: Path,
) -> None:
    # bash's real output: a server started with & is stopped and named.
    command = "python3 -m http.server 0 & python3 -c 'print(3)'"
    sandbox = LocalSandbox(tmp_path)
    try:
        output = await BashTool(sandbox)({"command": command}, ToolContext("c1", print))
    finally:
        await sandbox.aclose()
    assert isinstance(output.content, str)
    assert "stopped 1 background process" in output.content
    progress = working()

    bash(progress, "c1", command, output.content)

    assert progress.state.commands == (Command(command, 0),)


def test_bash_exit_codes_become_verified_commands() -> None:
    progress = working()
    bash(progress, "c1", "pytest -q", "3 passed\nexit code: 0")
    bash(progress, "c2", "ruff check .", "E501\nexit code: 1\n")
    bash(
        progress,
        "c3",
        "make test",
        "exit code: -9\ntimed out after 120s; the process group was killed",
        is_error=True,
    )
    # Refused before it ran: listed as a call, but it verified nothing.
    progress.apply(started("c4", "bash", command=""))
    progress.apply(finished("c4", "bash", "invalid input: command", is_error=True))
    state = progress.state
    assert state.commands == (
        Command("pytest -q", 0),
        Command("ruff check .", 1),
        Command("make test", -9, timed_out=True),
    )
    assert [c.ok for c in state.commands] == [True, False, False]
    assert [call.state for call in state.calls] == ["ok", "error", "error", "error"]
    assert [call.exit_code for call in state.calls] == [0, 1, -9, None]

    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome())
    assert "- ✅ `pytest -q` → exit 0" in report
    assert "- ❌ `ruff check .` → exit 1" in report
    assert "- ⏱️ `make test` → timed out" in report


def test_a_command_with_backticks_stays_one_code_span() -> None:
    progress = working()
    bash(progress, "c1", "pytest -k `date` ``x`` && echo @alice", "exit code: 0")
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome())
    line = next(line for line in report.splitlines() if "exit 0" in line and "date" in line)
    spans = [t for t in _walk(MD.parse(line)) if t.type == "code_inline"]
    assert len(spans) == 1
    assert spans[0].content == "pytest -k `date` ``x`` && echo @alice"
    assert not MENTION.search(prose_text(report))


# --- the live comment ------------------------------------------------------------


def test_live_elapsed_time_is_coarse() -> None:
    clock = Clock(0.0)
    progress = working(clock=clock)
    assert "🛠️ **Working** · less than a minute" in render_progress(progress.state, now=59.0)
    assert "🛠️ **Working** · 3 min" in render_progress(progress.state, now=200.0)
    assert "1 h 05 min" in render_progress(progress.state, now=3_900.0)
    # Within a minute the clock alone does not change the text.
    assert render_progress(progress.state, now=181.0) == render_progress(progress.state, now=239.0)


def test_live_comment_counts_calls_and_caps_the_checklist() -> None:
    progress = working()
    progress.apply(checklist(*[(f"step {n}", "pending") for n in range(80)]))
    progress.apply(started("c1", "glob", pattern="*.py"))
    text = render_progress(progress.state, now=1000.0)
    assert "- [ ] step 49\n- … 30 more steps" in text
    assert "step 50" not in text
    assert "<sub>1 tool call so far</sub>" in text


def test_the_live_comment_says_when_the_conversation_was_compacted() -> None:
    progress = working()
    progress.apply(started("c1", "glob", pattern="*.py"))
    progress.apply(Compacted("summarised", 151_234, 23_456, Usage(100, 20)))
    text = render_progress(progress.state, now=1000.0)
    assert "**Now:** _compacted the conversation (151,234 → 23,456 tokens)_" in text
    progress.apply(TurnStarted(2))
    progress.apply(Compacted("cleared", 120_000, 60_000, Usage()))
    text = render_progress(progress.state, now=1000.0)
    assert (
        "<sub>1 tool call so far · compacted the conversation (120,000 → 60,000 tokens)</sub>"
    ) in text


def test_live_checklist_is_neutralised() -> None:
    progress = working()
    progress.apply(checklist(("Ping @alice and fix #3, <img src=x>", "in_progress")))
    text = render_progress(progress.state, now=1000.0)
    assert not MENTION.search(prose_text(text))
    assert raw_html(text) == ["<!-- neo:job=42 -->\n"]


# --- the report ------------------------------------------------------------------


def test_report_success_with_pull_request() -> None:
    progress = working()
    progress.apply(started("c1", "edit_file", path="src/app.py"))
    progress.apply(finished("c1", "edit_file"))
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome(pr_url="https://github.com/octo/app/pull/9"))
    lines = report.split("\n")
    assert lines[0] == "<!-- neo:job=42 -->"
    assert lines[2] == (
        "✅ **Done** — pull request: [#9](https://github.com/octo/app/pull/9) · 4m 12s"
    )
    assert "Fixed the date test." in report
    assert "_No tests, builds or linters were run._" in report
    assert (
        "<details><summary>1 tool call</summary>\n\n- ✅ `edit_file: src/app.py`\n\n</details>"
        in report
    )
    assert lines[-1] == (
        "<sub>Tokens: 1,234 in · 567 out (+ cache: 10 read, 89 written) · Cost: $0.04"
        " · Duration: 4m 12s · 7 model calls</sub>"
    )


def test_report_names_the_model_and_a_fallback_that_took_over() -> None:
    one = render_report(working().state, outcome(models=("claude-sonnet-5-5",)))
    assert one.split("\n")[-1].startswith("<sub>Model: `claude-sonnet-5-5` · Tokens: 1,234 in")
    assert "unavailable" not in one

    two = render_report(
        working().state,
        outcome(
            models=("claude-sonnet-5-5", "gpt-5"),
            fallback_reason="anthropic 529 overloaded_error: Overloaded",
        ),
    )
    assert (
        "ℹ️ `claude-sonnet-5-5` was unavailable (`anthropic 529 overloaded_error: Overloaded`),"
        " so the fallback `gpt-5` did the rest of the work."
    ) in two
    assert two.split("\n")[-1].startswith("<sub>Models: `claude-sonnet-5-5` then `gpt-5` · Tokens:")


def test_report_says_which_directories_were_left_out_as_repositories_of_their_own() -> None:
    progress = working()
    progress.finish(Conclusion.SUCCESS)
    left_out = ("vendor/lib", "@admin`s repo")  # the model names them: neither pings nor breaks out
    report = render_report(progress.state, outcome(left_out=left_out))
    assert "- Left out: `vendor/lib/` (a git repository of its own)" in report
    assert "- Left out: ``@admin`s repo/`` (a git repository of its own)" in report
    assert report.index("Fixed the date test.") < report.index("Left out")
    assert not MENTION.search(prose_text(report))


@pytest.mark.parametrize(
    ("generated", "line"),
    [
        pytest.param(
            (("__pycache__/", 2), (".pytest_cache/", 1)),
            "- Left out: 3 generated files (`__pycache__/`, `.pytest_cache/`):"
            " caches and build output are not committed",
            id="several-kinds",
        ),
        pytest.param(
            (("*.pyc", 1),),
            "- Left out: 1 generated file (`*.pyc`): caches and build output are not committed",
            id="one-file",
        ),
        pytest.param(
            (("node_modules/", 12345),),
            "- Left out: 12,345 generated files (`node_modules/`):"
            " caches and build output are not committed",
            id="many-files",
        ),
    ],
)
def test_report_says_how_many_generated_files_were_left_out(
    generated: tuple[tuple[str, int], ...], line: str
) -> None:
    progress = working()
    progress.finish(Conclusion.SUCCESS)

    report = render_report(progress.state, outcome(generated=generated, left_out=("vendor/lib",)))

    assert line in report.splitlines()
    assert report.index("(a git repository of its own)") < report.index(line)


def test_report_mentions_no_generated_files_when_none_were_left_out() -> None:
    progress = working()
    progress.finish(Conclusion.SUCCESS)

    assert "generated" not in render_report(progress.state, outcome())


def links(markdown: str) -> list[tuple[str, str]]:
    """(href, text) of each link GitHub would render."""
    found = []
    for token in _walk(MD.parse(markdown)):
        children = token.children or []
        for i, child in enumerate(children):
            if child.type == "link_open":
                found.append((str(child.attrs["href"]), children[i + 1].content))
    return found


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        pytest.param(
            "https://github.com/octo/app/pull/9",
            "[#9](https://github.com/octo/app/pull/9)",
            id="github.com",
        ),
        pytest.param(
            "http://ghe.internal:8080/octo/app/pull/123",
            "[#123](http://ghe.internal:8080/octo/app/pull/123)",
            id="enterprise-over-http",
        ),
        pytest.param(
            "https://ghe.example.com/octo/app/pulls?q=1",
            "[https://ghe.example.com/octo/app/pulls?q=1](https://ghe.example.com/octo/app/pulls?q=1)",
            id="not-a-pull-path",
        ),
    ],
)
def test_the_pull_request_is_a_link(url: str, shown: str) -> None:
    progress = working()
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome(pr_url=url))
    assert f"✅ **Done** — pull request: {shown} · 4m 12s" in report
    assert links(report) == [(url, shown[1 : shown.index("]")])]


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("https://x.example/pull/1) [evil](https://evil.example", id="brackets"),
        pytest.param("javascript:alert(1)", id="not-http"),
        pytest.param("https://x.example/a b", id="space"),
    ],
)
def test_a_pull_request_url_that_is_no_plain_link_stays_code(url: str) -> None:
    progress = working()
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome(pr_url=url))
    assert links(report) == []
    assert url in code_text(report)


def verified(report: str) -> list[str]:
    """The lines under "What was verified"."""
    section = report.split("**What was verified**\n\n", 1)[1]
    return section.split("\n\n", 1)[0].splitlines()


def test_what_was_verified_lists_only_tests_builds_and_linters() -> None:
    progress = working()
    bash(progress, "c1", "cat test_calc.py", "def test_add(): ...\nexit code: 0")
    bash(progress, "c2", "ls tests", "exit code: 0")
    bash(progress, "c3", "grep -rn add .", "exit code: 1")
    bash(progress, "c4", "cd app && python -m pytest -q | tail -5", "1 failed\nexit code: 1")
    bash(progress, "c5", "git status", "exit code: 0")
    bash(progress, "c6", "ruff check .", "exit code: 0")
    bash(progress, "c7", "pytest -q", "2 passed\nexit code: 0")
    progress.finish(Conclusion.SUCCESS)

    report = render_report(progress.state, outcome())

    assert verified(report) == [
        "- ❌ `cd app && python -m pytest -q | tail -5` → exit 1",
        "- ✅ `ruff check .` → exit 0",
        "- ✅ `pytest -q` → exit 0",
    ]
    # Every call still shows among the tool calls.
    assert "<summary>7 tool calls</summary>" in report
    assert "- ✅ `bash: cat test_calc.py` → exit 0" in report
    assert "⚠️" not in report


def test_only_other_commands_means_nothing_was_verified() -> None:
    progress = working()
    bash(progress, "c1", "cat test_calc.py", "exit code: 0")
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome())
    assert verified(report) == ["_No tests, builds or linters were run._"]


@pytest.mark.parametrize(
    ("runs", "warnings"),
    [
        pytest.param(
            [("pytest -q", "exit code: 1")],
            ["⚠️ The last test run failed: `pytest -q` exited 1."],
            id="failed",
        ),
        pytest.param(
            [("pytest -q", "exit code: 1"), ("pytest -q", "exit code: 0")],
            [],
            id="failed-then-passed",
        ),
        pytest.param(
            [("pytest test_calc.py", "exit code: 1"), ("pytest", "exit code: 0")],
            [],
            id="a-later-broader-run-passed",
        ),
        pytest.param(
            [("pytest -q", "exit code: 1"), ("ruff check .", "exit code: 0")],
            ["⚠️ The last test run failed: `pytest -q` exited 1."],
            id="a-passing-lint-does-not-hide-the-failed-tests",
        ),
        pytest.param(
            [("pytest -q", "exit code: 0"), ("cat log.txt", "exit code: 1")],
            [],
            id="a-failing-cat-is-no-check",
        ),
        pytest.param(
            [
                (
                    "go test ./...",
                    "exit code: -9\ntimed out after 600s; the process group was killed",
                )
            ],
            ["⚠️ The last test run failed: `go test ./...` timed out."],
            id="timed-out",
        ),
        pytest.param(
            [("ruff check . && pytest", "exit code: 1")],
            ["⚠️ The last test and lint run failed: `ruff check . && pytest` exited 1."],
            id="one-command-of-two-kinds",
        ),
        pytest.param(
            [("npm run build", "exit code: 2"), ("npm test", "exit code: 1")],
            [
                "⚠️ The last build run failed: `npm run build` exited 2.",
                "⚠️ The last test run failed: `npm test` exited 1.",
            ],
            id="two-kinds-failed",
        ),
    ],
)
def test_the_report_warns_when_the_last_run_of_a_check_failed(
    runs: list[tuple[str, str]], warnings: list[str]
) -> None:
    progress = working()
    for n, (command, output) in enumerate(runs):
        bash(progress, f"c{n}", command, output)
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome())
    assert [line for line in report.splitlines() if line.startswith("⚠️")] == warnings


def test_the_warning_sits_above_a_summary_that_claims_otherwise() -> None:
    # As a new user saw it: the summary claims a pass its last test run denies.
    progress = working()
    bash(progress, "c1", "cat test_calc.py", "exit code: 0")
    bash(progress, "c2", "python -m pytest test_calc.py", "1 failed\nexit code: 1")
    progress.finish(Conclusion.SUCCESS)
    summary = "Fixed `add`; test_calc.py passes now."

    report = render_report(progress.state, outcome(summary=summary))

    parts = report.split("\n\n")
    assert parts[1].startswith("✅ **Done**")
    assert parts[2] == ("⚠️ The last test run failed: `python -m pytest test_calc.py` exited 1.")
    assert parts[3] == summary


def test_report_no_changes() -> None:
    progress = working()
    progress.finish(Conclusion.NO_CHANGES)
    report = render_report(progress.state, outcome(Conclusion.NO_CHANGES, cost_usd=None))
    assert "✅ **Done** — no changes to the repository, so no pull request · 4m 12s" in report
    assert "Cost: unknown" in report
    assert "pull/" not in report


def test_report_failed_ends_with_the_error_line() -> None:
    progress = working()
    progress.finish(Conclusion.FAILED)
    report = render_report(
        progress.state,
        outcome(
            Conclusion.FAILED,
            summary="",
            error="provider_http_error: anthropic 529 overloaded_error:\nretry later",
        ),
    )
    assert "❌ **Failed** · 4m 12s" in report
    assert "**Error:** `provider_http_error: anthropic 529 overloaded_error: retry later`" in report


def test_report_cancelled_names_who_without_pinging() -> None:
    clock = Clock(0.0)
    progress = working(clock=clock)
    clock.now = 75.0
    progress.finish(Conclusion.CANCELLED)
    report = render_report(
        progress.state, outcome(Conclusion.CANCELLED, cancelled_by="alice", duration_ms=None)
    )
    assert f"🛑 **Cancelled** by @{ZWSP}alice · 1m 15s" in report
    assert not MENTION.search(prose_text(report))


HOSTILE_SUMMARY = """\
Thanks @alice and @octo/core! Fixes #12, closes octo/other#3, Resolves: #4.
See #5 and mail me at dev@example.com.
<!-- neo:job=99 --> <details><summary>x</summary> <img src="https://evil/p.png">
</details>

```python
@decorator
def f(x: List<int>) -> None: ...  # @bob
```

`@inline` code and <https://example.com/ok>
"""


def test_summary_is_neutralised_but_code_blocks_stay_verbatim() -> None:
    progress = working()
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome(summary=HOSTILE_SUMMARY))
    prose = prose_text(report)
    assert not MENTION.search(prose), prose
    assert not re.search(r"(?i)\b(close[sd]?|fix(e[sd])?|resolve[sd]?):?\s+\S*#\d", prose)
    # The only raw HTML is ours: the marker and the footer's <sub>.
    assert set(raw_html(report)) == {"<!-- neo:job=42 -->\n", "<sub>", "</sub>"}
    # Reads the same, a reference after a closing keyword named as an issue; links stay,
    # the fenced code is byte for byte.
    assert "See #5 and mail me at dev@example.com." in report
    assert "<https://example.com/ok>" in report
    assert "@decorator\ndef f(x: List<int>) -> None: ...  # @bob" in code_text(report)
    assert report.count("Fixes issue #12, closes issue octo/other#3, Resolves: issue #4") == 1


def test_neutralise_is_idempotent_and_sees_through_html_blocks() -> None:
    # Breaking the <div> HTML block turns its ``` into a fence opener: the
    # lines after must be re-read, or "@user" would end up outside code.
    text = "<div>\n```\n\n```\n@user\n```\n"
    once = neutralise(text)
    assert not MENTION.search(prose_text(once))
    assert neutralise(once) == once
    assert neutralise("a\r\nb\rc") == "a\nb\nc"


def test_a_fence_left_open_by_the_summary_is_closed() -> None:
    progress = working()
    bash(progress, "c1", "pytest", "exit code: 0")
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome(summary="Look:\n```\n@x"))
    # What follows the summary is still Markdown, not code.
    assert "What was verified" in prose_text(report)
    assert "Tokens: 1,234 in" in prose_text(report)
    assert "<sub>" in raw_html(report)


# --- size ----------------------------------------------------------------------------


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def huge_state() -> ProgressState:
    progress = working()
    progress.apply(checklist(*[(f"item {n} " + "y" * 100, "done") for n in range(400)]))
    for n in range(3000):
        bash(progress, f"b{n}", f"make check-{n} " + "z" * 80, f"exit code: {n % 2}")
    for n in range(3000):
        progress.apply(started(f"r{n}", "read_file", path=f"src/file_{n}.py"))
        progress.apply(finished(f"r{n}", "read_file"))
    progress.finish(Conclusion.SUCCESS)
    return progress.state


def test_report_fits_github_limit_with_visible_notes() -> None:
    summary = "intro\n\n```\n" + "code line\n" * 20_000 + "```\n" + "tail @bob\n" * 5_000
    report = render_report(huge_state(), outcome(summary=summary))
    assert len(report) <= MAX_COMMENT_CHARS
    assert utf16(report) <= MAX_COMMENT_CHARS
    assert job_id_of(report) == "42"
    assert "✂️ The summary was cut to fit GitHub's comment size limit" in report
    assert "earlier commands not shown" in report
    assert "calls not shown" in report
    # The latest commands are kept: the final checks matter most.
    assert "make check-2999" in report
    # The first and last tool calls are kept.
    assert "read_file: src/file_2999.py" in report
    assert "bash: make check-0 " in report
    # The cut summary's fence was closed: the report's end is not code.
    assert report.endswith("</sub>")
    assert "What was verified" in prose_text(report)
    assert "Tokens: 1,234 in" in prose_text(report)
    assert "<sub>" in raw_html(report)


def test_emoji_count_twice_towards_the_limit() -> None:
    report = render_report(working().state, outcome(summary="🎉" * 70_000))
    assert utf16(report) <= MAX_COMMENT_CHARS
    assert "🎉" * 1000 in report


def test_small_report_is_not_cut() -> None:
    report = render_report(working().state, outcome(summary="short"))
    assert "✂️" not in report
    assert "not shown" not in report


def test_format_duration() -> None:
    assert [format_duration(s) for s in (0, 42.9, 245, 3_725)] == ["0s", "42s", "4m 05s", "1h 02m"]


# --- throttle ------------------------------------------------------------------------


def test_throttle_edits_at_most_every_interval_and_only_on_change() -> None:
    throttle = Throttle(interval=3.0)
    assert throttle.should_edit("a", 0.0)
    throttle.edited("a", 0.0)
    assert not throttle.should_edit("a", 10.0)
    assert throttle.delay("a", 10.0) is None
    assert not throttle.should_edit("b", 1.0)
    assert throttle.delay("b", 1.0) == 2.0
    assert throttle.should_edit("b", 3.0)
    throttle.edited("b", 3.5)
    assert not throttle.should_edit("c", 6.0)
    assert throttle.should_edit("c", 6.5)


def test_throttle_default_interval_is_three_seconds() -> None:
    throttle = Throttle()
    throttle.edited("a", 0.0)
    assert not throttle.should_edit("b", 2.9)
    assert throttle.should_edit("b", 3.0)


def test_events_are_all_accepted() -> None:
    progress = working()
    events: list[Event] = [
        TurnStarted(2),
        TextDelta("x"),
        ProviderRetry(1, 1.0, "503"),
        started("c1", "glob", pattern="*"),
        finished("c1", "glob"),
        finished("orphan", "grep"),
        TurnFinished("end_turn", "ok", Usage()),
    ]
    for event in events:
        progress.apply(event)
    state = progress.state
    assert state.turns == 2
    assert [call.summary for call in state.calls] == ["glob: *", "grep"]


def test_an_incomplete_report_says_why_it_stopped_and_links_the_work_so_far() -> None:
    progress = working()
    progress.finish(Conclusion.INCOMPLETE)
    url = "https://github.com/octo/app/pull/9"
    report = render_report(
        progress.state,
        outcome(
            Conclusion.INCOMPLETE,
            pr_url=url,
            error="max_turns: stopped after 100 model calls (max turns)",
            summary="Fixed half.\n\n- [ ] left: the other half",
        ),
    )
    heading = report.splitlines()[2]
    assert heading.startswith("⚠️ **Incomplete** — the work so far: ")
    assert url in heading
    assert (
        "**Stopped before the end:** `max_turns: stopped after 100 model calls (max turns)`"
    ) in report
    assert report.index("Stopped before the end") < report.index("Fixed half.")
    assert "**Error:**" not in report


def test_the_invoked_skills_label_the_live_comment_and_the_report() -> None:
    progress = working()
    progress.apply(ToolNotice("", "skills", SkillsInvoked(("release-notes", "fix-ci"))))
    label = "**Skills:** `release-notes`, `fix-ci`"

    assert label in render_progress(progress.state, now=1000.0).split("\n\n")
    progress.finish(Conclusion.SUCCESS)
    assert render_report(progress.state, outcome()).split("\n\n")[2] == label
    assert "Skills" not in render_report(working().state, outcome())


def test_with_a_run_page_the_comment_and_the_report_link_to_it() -> None:
    url = "https://neo.example.com/runs/42"
    progress = Progress(42, clock=Clock(), run_url=url)
    progress.start()
    assert f"[Watch it live]({url})" in render_progress(progress.state, now=1000.0)
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome())
    assert f"[The run]({url})" in report.splitlines()[-1]
    without = working()
    assert "/runs/" not in render_progress(without.state, now=1000.0)
    assert "/runs/" not in render_report(without.state, outcome())
