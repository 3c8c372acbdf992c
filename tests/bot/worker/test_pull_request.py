"""The pull request a job opens: its title and body from tables, then from a job the real
worker runs (githubkit against the fake GitHub, git against the fake git server, the
anthropic SDK against the fake Messages API, the local sandbox), read as GitHub renders it."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from bot.config.settings import Settings
from bot.github.app import GitHubApp
from bot.github.markers import STATUS_END, STATUS_START
from bot.jobs import JobState, Thread, TriggerKind
from bot.queue import SqliteQueue
from bot.worker.progress import Command
from bot.worker.pull_request import (
    RunFacts,
    comment_url,
    pr_body,
    pr_title,
    threadless_pr_body,
    with_status,
)
from runner.git import DiffStat, FileStat
from runner.job import JobResult
from runner.tools.checklist import ChecklistItem
from tests.bot.worker.test_loop import (
    REPO,
    anthropic_env,
    app,
    bot_comments,
    clock,
    enqueue,
    finished,
    get,
    git,
    git_server,
    github,
    origin,
    queue,
    request,
    run_until,
    settings,
    worker,
)
from tests.bot.worker.test_spec import REQUEST
from tests.fakes import FakeAnthropicAPI, FakeGitHub, Reply, text, tool_use

__all__ = ["anthropic_env", "app", "clock", "git_server", "github", "origin", "queue", "settings"]

SUMMARY = """\
Parse dates in UTC in parse_date

## Summary

`parse_date` built naive datetimes in local time, so the round trip failed east of UTC,
@octocat. fixes #3 as well.

## Changes

- `src/dates.py`: aware datetimes in UTC.

### Testing

I ran the whole suite: 120 tests pass.
"""
CHANGED = JobResult(
    conclusion="changed",
    branch="neo/issue-12",
    summary=SUMMARY,
    subject="Parse dates in UTC in parse_date",
    diffstat=DiffStat((FileStat("src/dates.py", 10, 2), FileStat("tests/test_dates.py", 4, 0))),
    models=("claude-sonnet-5-5",),
    cost_usd=0.4213,
    num_turns=14,
    duration_ms=245_000,
)
REPORT = "https://github.com/octo/hello/issues/12#issuecomment-99"
FACTS = RunFacts(
    commands=(
        Command("cat src/dates.py", 0),
        Command("uv run pytest -q tests/test_dates.py", 1),
        Command("uv run pytest -q", 0),
    ),
    report_url=REPORT,
)
GFM = MarkdownIt("commonmark").enable("table")


def headings(markdown: str) -> list[str]:
    """The headings GitHub would show, as text."""
    tokens = GFM.parse(markdown)
    return [
        tokens[i + 1].content
        for i, token in enumerate(tokens)
        if token.type == "heading_open" and i + 1 < len(tokens)
    ]


def section(markdown: str, heading: str) -> str:
    """The text under `## heading`, up to the next `## `."""
    after = markdown.split(f"\n## {heading}\n", 1)[1]
    return after.split("\n## ", 1)[0]


def test_the_title_is_the_commits_subject_never_the_issues() -> None:
    assert pr_title(CHANGED) == "Parse dates in UTC in parse_date"
    # No subject (an older runner): the files changed, not the issue's words.
    assert pr_title(replace(CHANGED, subject=None)) == (
        "Change src/dates.py and tests/test_dates.py"
    )
    assert pr_title(replace(CHANGED, subject="Fixes #4 and more")) == "Fixes issue #4 and more"


def test_a_threads_body_has_one_changes_and_one_verification_section() -> None:
    body = pr_body(CHANGED, REQUEST, FACTS)

    assert headings(body) == ["Changes", "Verification"]
    assert body.startswith(f"{STATUS_START}\n**Status:** ✅ Ready for review")
    assert "Neo made this change at the request of @mona in #12." in body
    changes = section(body, "Changes")
    # The model's sections fold into one.
    assert changes.startswith("\nParse dates in UTC in parse_date\n\n`parse_date` built")
    assert "`parse_date` built naive datetimes" in changes
    assert "**Testing**\n\nI ran the whole suite" in changes
    # The model's text mentions and closes nothing.
    assert "@\u200boctocat" in changes
    assert "fixes issue #3" in changes
    assert "<details><summary>2 files changed, +14 −2</summary>" in changes
    assert "src/dates.py | +10 -2" in changes
    assert body.endswith("\n\nFixes #12")


def test_verification_is_what_neo_measured_not_what_the_model_said() -> None:
    verification = section(pr_body(CHANGED, REQUEST, FACTS), "Verification")

    assert "- ❌ `uv run pytest -q tests/test_dates.py` → exit 1" in verification
    assert "- ✅ `uv run pytest -q` → exit 0" in verification
    assert "cat src/dates.py" not in verification  # not a check
    assert "120 tests pass" not in verification
    footer = "<sub>Model: `claude-sonnet-5-5` · Cost: $0.42 · 14 model calls · 4m 05s"
    assert f"{footer} · [Neo's report]({REPORT})</sub>" in verification
    failed = replace(FACTS, commands=(Command("ruff check .", 1),))
    assert "⚠️ The last lint run failed." in pr_body(CHANGED, REQUEST, failed)
    nothing = pr_body(CHANGED, REQUEST, RunFacts())
    assert "The agent ran no test, build or lint command in this run" in nothing
    assert "Neo's report" not in nothing


def test_an_incomplete_body_leads_with_what_is_left_and_closes_nothing() -> None:
    incomplete = replace(
        CHANGED,
        error_kind="max_turns",
        error_message="out of turns",
        summary="Parse dates in UTC\n\nSo far: the parser.\n\n- [x] parser\n- [ ] a UTC+14 test",
    )
    body = pr_body(incomplete, REQUEST, FACTS)

    status = body.split(STATUS_END)[0]
    assert "⚠️ Incomplete: Neo stopped before it finished (`max_turns: out of turns`)" in status
    assert headings(body)[0] == "What is left"
    assert section(body, "What is left").strip() == "- [ ] a UTC+14 test"
    assert "Fixes #12" not in body
    assert body.endswith("Refs #12 (incomplete: merging this does not close it)")
    # Without a checklist in the summary: the agent's own steps not done.
    steps = (ChecklistItem("fix the parser", "done"), ChecklistItem("add a test", "pending"))
    plain = replace(incomplete, summary="Parse dates in UTC")
    body = pr_body(plain, REQUEST, replace(FACTS, checklist=steps))
    assert section(body, "What is left").strip() == "- [ ] add a test"


@pytest.mark.parametrize(
    ("is_pull", "from_workflow", "first", "last"),
    [
        (False, False, "Neo made this change at the request of @mona in #12.", "Fixes #12"),
        (True, False, "Neo made this change at the request of @mona in #12.", "Based on #12."),
        (
            False,
            True,
            "Neo made this change in a workflow run on #12, started by @mona.",
            "Fixes #12",
        ),
    ],
)
def test_a_threads_body_says_who_asked_where(
    is_pull: bool, from_workflow: bool, first: str, last: str
) -> None:
    asked = replace(
        REQUEST,
        thread=Thread("octo/hello", 12, is_pull_request=is_pull),
        instruction_from_workflow=from_workflow,
    )
    parts = pr_body(CHANGED, asked, FACTS).split("\n\n")
    assert (parts[1], parts[-1]) == (first, last)


@pytest.mark.parametrize(
    ("event", "from_workflow", "author", "why"),
    [
        ("schedule", False, "", "on a schedule in `.github/neo.yml`; each run updates"),
        ("schedule", True, "", "on a workflow's schedule; each run updates this pull request"),
        ("workflow_dispatch", True, "mona", "(`workflow_dispatch`), at the request of @mona"),
        ("workflow_dispatch", False, "mona", "(`workflow_dispatch`), at the request of @mona"),
        ("workflow_dispatch", True, "ci[bot]", "from a workflow run (`workflow_dispatch`)."),
    ],
)
def test_a_threadless_body_says_why_and_quotes_the_task(
    event: str, from_workflow: bool, author: str, why: str
) -> None:
    asked = replace(
        REQUEST,
        thread=Thread("octo/hello", 0),
        event=event,
        trigger=TriggerKind(event),
        author=author,
        instruction="Update the docs\n@everyone",
        instruction_from_workflow=from_workflow,
    )
    body = threadless_pr_body(CHANGED, asked, FACTS)
    assert why in body.split("\n\n")[1]
    assert "> Update the docs\n> @\u200beveryone" in body
    assert headings(body) == ["Task", "Changes", "Verification"]
    assert "Fixes" not in body


def test_a_status_line_is_replaced_alone() -> None:
    body = pr_body(CHANGED, REQUEST, FACTS)
    edited = body.replace("Neo made this change", "A maintainer's note.\n\nNeo made this change")

    updated = with_status(edited, "**Status:** 🔧 Repairing CI")
    assert updated == edited.replace(
        edited[edited.index(STATUS_START) : edited.index(STATUS_END)],
        f"{STATUS_START}\n**Status:** 🔧 Repairing CI\n",
    )
    # A body whose markers a maintainer deleted gets the line first.
    assert with_status("Theirs.", "**Status:** x") == (
        f"{STATUS_START}\n**Status:** x\n{STATUS_END}\n\nTheirs."
    )


def test_a_summary_past_githubs_limit_is_cut_with_a_note() -> None:
    long = replace(CHANGED, summary="Parse dates\n\n" + "word " * 30_000)
    body = pr_body(long, REQUEST, FACTS)

    assert len(body) <= 65_536
    assert "_✂️ The summary was cut to fit GitHub's size limit" in body
    assert body.endswith("Fixes #12")


def test_a_comments_url_goes_through_issues() -> None:
    assert comment_url("https://ghe.example/", "o/r", 3, 7) == (
        "https://ghe.example/o/r/issues/3#issuecomment-7"
    )


# --- from a job ---------------------------------------------------------------

TEST_FILE = """\
import pathlib, sys
sys.exit(0 if "Hello from Neo" in pathlib.Path("README.md").read_text() else 1)
"""


async def test_a_jobs_pull_request_is_titled_by_its_change_and_shows_what_neo_ran(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = github.add_issue(REPO, "README is missing a greeting", user="mona")
    comment = github.add_comment(REPO, number, "@neo add a greeting", user="mona")
    edit = {
        "path": "README.md",
        "old_string": "# fixture\n",
        "new_string": "# fixture\n\nHello from Neo.\n",
    }
    fake_anthropic.script(
        Reply(
            [tool_use("w", "write_file", {"path": "test_readme.py", "content": TEST_FILE})],
            "tool_use",
        ),
        Reply([tool_use("r1", "bash", {"command": "python3 test_readme.py"})], "tool_use"),
        Reply([tool_use("e", "edit_file", edit)], "tool_use"),
        Reply([tool_use("r2", "bash", {"command": "python3 test_readme.py"})], "tool_use"),
        Reply(
            [
                text(
                    "Greet readers at the top of the README\n\n## Changes\n\n- README.md:"
                    " a greeting.\n- test_readme.py: checks it.\n\n## Verification\n\n"
                    "All 300 tests pass."
                )
            ]
        ),
    )
    job_id = await enqueue(queue, request(number, comment))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    (pull,) = github.pulls(REPO)
    head = git(origin, "rev-parse", f"refs/heads/neo/issue-{number}")
    # The change, in the model's line, for the title and the commit alike.
    assert pull["title"] == "Greet readers at the top of the README"
    message = git(origin, "log", "-1", "--format=%B", head)
    assert message.startswith(f"Greet readers at the top of the README\n\nRefs #{number}\n")
    body = pull["body"]
    assert headings(body) == ["Changes", "Verification"]
    verification = section(body, "Verification")
    assert re.findall(r"- (.) `python3 test_readme.py` → exit (\d)", verification) == [
        ("❌", "1"),
        ("✅", "0"),
    ]
    assert "300 tests" not in verification
    (report,) = bot_comments(github, number)
    url = comment_url(settings.git_url, REPO, number, report["id"])
    assert f"[Neo's report]({url})" in verification
    assert "Model: `claude-" in verification
    assert "Cost: $" in verification
    assert body.endswith(f"Fixes #{number}")


def test_with_a_run_page_the_body_links_to_it() -> None:
    url = "https://neo.example.com/runs/5"
    body = pr_body(CHANGED, REQUEST, replace(FACTS, run_url=url))
    assert f"[Neo's report]({REPORT}) · [The run]({url})</sub>" in body
    assert "/runs/" not in pr_body(CHANGED, REQUEST, FACTS)
