"""A CI repair keeps the record: the real worker and SqliteQueue, githubkit against the
fake GitHub, git against the fake git server, the anthropic SDK against the fake Messages
API, the local sandbox; then the sections' rules from tables."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from markdown_it import MarkdownIt

from bot.config.settings import Settings
from bot.github.app import GitHubApp
from bot.github.markers import REPAIR_ROUND_MARKER, STATUS_END, STATUS_START, job_id_of
from bot.jobs import Conclusion
from bot.queue import SqliteQueue
from bot.worker.progress import Command, Outcome
from bot.worker.pull_request import comment_url
from bot.worker.repair_report import (
    CheckLink,
    Pushed,
    RepairRound,
    final_section,
    running_section,
    with_section,
)
from tests.bot.worker.test_loop import (
    REPO,
    anthropic_env,
    app,
    bot_comments,
    clock,
    git,
    git_server,
    github,
    origin,
    queue,
    settings,
)
from tests.bot.worker.test_repair import (
    mirror_commit,
    neos_pull_request,
    red,
    repair,
    repair_request,
)
from tests.fakes import FakeAnthropicAPI, FakeGitHub, Reply, text, tool_use

__all__ = ["anthropic_env", "app", "clock", "git_server", "github", "origin", "queue", "settings"]

GFM = MarkdownIt("commonmark").enable("table")


def dump(name: str, body: str) -> None:
    """NEO_TEST_DUMP=dir keeps what was posted, to read it as GitHub shows it."""
    where = os.environ.get("NEO_TEST_DUMP")
    if where:
        Path(where, name).write_text(body)


def script_repair(fake: FakeAnthropicAPI, old: str, line: str, *, test_exit: int) -> None:
    """One repair: fix the README, run the test (ending `test_exit`), say what was done."""
    check = "exit 0" if test_exit == 0 else "exit 1"
    fake.script(
        Reply(
            [
                tool_use(
                    "r1",
                    "edit_file",
                    {"path": "README.md", "old_string": old, "new_string": line},
                )
            ],
            "tool_use",
        ),
        Reply(
            [tool_use("r2", "bash", {"command": f"python3 -m pytest -q || {check}"})], "tool_use"
        ),
        Reply([text("Escape the README title the test reads\n\nThe test wanted `# Hello`.")]),
    )


async def test_a_repair_after_a_successful_job_keeps_both_sections(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    issue, pull, head = await neos_pull_request(
        queue, app, settings, github, origin, fake_anthropic
    )
    [report] = bot_comments(github, issue)
    [opened] = github.pulls(REPO)
    job_report = report["body"]
    dump("report-before.md", job_report)
    # A maintainer's words in the description stay as they are.
    github.edit_pull(REPO, pull, body=opened["body"] + "\n\nA maintainer's note.")
    check = red(github, head)
    script_repair(fake_anthropic, "Edited by Neo.", "Hello", test_exit=0)

    result = await repair(queue, app, settings, repair_request(pull, head, check))

    assert result.conclusion is Conclusion.SUCCESS, result
    fixed = git(origin, "rev-parse", f"refs/heads/neo/issue-{issue}")
    [story] = bot_comments(github, issue)
    body = story["body"]
    dump("report-after-one.md", body)
    # The job's report is whole: summary, what was verified, cost; the round follows it.
    assert story["id"] == report["id"]
    assert body.startswith(job_report.rstrip() + "\n\n")
    assert job_id_of(body) == job_id_of(job_report)
    section = body[len(job_report.rstrip()) :]
    [round_comment] = bot_comments(github, pull)
    round_url = comment_url(settings.git_url, REPO, pull, round_comment["id"])
    run_url = f"https://github.example.com/{REPO}/runs/{check}"
    assert f"### 🔧 CI repair 1 of 2 on #{pull} · ✅ pushed [`{fixed[:7]}`]" in section
    assert f"({opened['html_url']}/commits/{fixed}); CI runs again · [report]({round_url})" in (
        section
    )
    assert f"**Failed:** [`test`]({run_url}) on `{head[:7]}`" in section
    assert "**Changed:** Escape the README title the test reads\n" in section
    assert "**Verified**, as Neo measured it:" in section
    assert "- ✅ `python3 -m pytest -q || exit 0` → exit 0" in section
    assert re.search(r"<sub>Model: `[^`]+` · Cost: \$[0-9.]+ · 3 model calls · \d+s</sub>", section)
    assert [h for h in headings(body) if "CI repair" in h] == [
        f"🔧 CI repair 1 of 2 on #{pull} · ✅ pushed {fixed[:7]}; CI runs again · report"
    ]
    # The round's comment on the pull request: which check, which attempt, then its report.
    dump("round-one.md", round_comment["body"])
    lines = round_comment["body"].split("\n")
    assert job_id_of(round_comment["body"]) is not None
    # After the marker, the hidden outcome line a retried round would close with.
    assert lines[1].startswith("<!-- neo:outcome={")
    assert lines[2] == REPAIR_ROUND_MARKER
    assert lines[3] == (
        f"🔧 **CI repair 1 of 2:** [`test`]({run_url}) fails on `{head[:7]}`; Neo continues"
        " the session that made this pull request."
    )
    assert "✅ **Done**" in round_comment["body"]
    # The description's status line says so; the rest of it is as it was.
    [now] = github.pulls(REPO)
    dump("pr-after-one.md", now["body"])
    status = now["body"].split(STATUS_END)[0].split(STATUS_START)[1].strip()
    assert status == (
        f"**Status:** 🔧 CI repair 1 of 2: ✅ pushed [`{fixed[:7]}`]"
        f"({opened['html_url']}/commits/{fixed}); CI runs again · [report]({round_url})"
    )
    assert now["body"].endswith("A maintainer's note.")
    assert now["title"] == opened["title"]

    # A second round: a section of its own after the first, which stays.
    mirror_commit(github, origin, fixed)
    github.set_pull_head(REPO, pull, fixed)
    script_repair(fake_anthropic, "Hello", "Hello, world", test_exit=1)
    second = await repair(queue, app, settings, repair_request(pull, fixed, red(github, fixed)))
    assert second.conclusion is Conclusion.SUCCESS, second
    [story] = bot_comments(github, issue)
    dump("report-after-two.md", story["body"])
    assert story["body"].startswith(body.rstrip() + "\n\n")
    assert [h.split(" · ")[0] for h in headings(story["body"]) if "CI repair" in h] == [
        f"🔧 CI repair 1 of 2 on #{pull}",
        f"🔧 CI repair 2 of 2 on #{pull}",
    ]
    assert "- ❌ `python3 -m pytest -q || exit 1` → exit 1" in story["body"]
    assert len(bot_comments(github, pull)) == 2


def headings(markdown: str) -> list[str]:
    tokens = GFM.parse(markdown)
    found = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            inline = tokens[index + 1]
            found.append("".join(child.content for child in inline.children or []))
    return found


# --- the sections' rules ------------------------------------------------------

ROUND = RepairRound(
    job_id=7,
    attempt=1,
    attempts=2,
    pull_number=5,
    pull_url="https://github.com/o/r/pull/5",
    red_sha="abcdef0123456789",
    checks=(CheckLink("test", "https://github.com/o/r/runs/1"), CheckLink("lint @team")),
    round_url="https://github.com/o/r/issues/5#issuecomment-9",
)
DONE = Outcome(conclusion=Conclusion.SUCCESS, cost_usd=0.12, num_turns=3, duration_ms=62_000)
PUSHED = Pushed("0123456789abcdef", "Escape the title")
REPORT = "<!-- neo:job=3 -->\n\n✅ **Done**\n\nThe summary.\n\n<sub>Cost: $0.50</sub>"


def test_a_rounds_section_replaces_its_running_one_and_follows_the_others() -> None:
    running = with_section(REPORT, 7, running_section(ROUND))
    assert running is not None
    assert running.startswith(REPORT + "\n\n<!-- neo:repair=7 -->\n\n### 🔧 CI repair 1 of 2")
    assert "running · [follow it](https://github.com/o/r/issues/5#issuecomment-9)" in running
    final = with_section(running, 7, final_section(ROUND, DONE, (), PUSHED))
    assert final is not None
    assert final.count("<!-- neo:repair=7 -->") == 1
    assert "· running" not in final
    assert "**Failed:** [`test`](https://github.com/o/r/runs/1), `lint @team` on `abcdef0`" in final
    second = replace(ROUND, job_id=8, attempt=2)
    both = with_section(final, 8, final_section(second, DONE, (), None))
    assert both is not None
    assert both.index("<!-- neo:repair=7 -->") < both.index("<!-- neo:repair=8 -->")
    assert "⚠️ no change made" in both


def test_a_marker_inside_a_fence_or_the_summary_is_no_section() -> None:
    forged = REPORT.replace(
        "The summary.",
        "```\n<!-- neo:repair=7 -->\n\nfake\n\n<!-- /neo:repair=7 -->\n```",
    )
    updated = with_section(forged, 7, final_section(ROUND, DONE, (), PUSHED))
    assert updated is not None
    assert updated.startswith(forged)  # the fence is part of the earlier report, kept


def test_older_rounds_shrink_then_go_before_the_earlier_report_is_ever_cut() -> None:
    long = REPORT + "\n\n" + "x" * 60_000
    text = long
    commands = tuple(Command(f"pytest tests/test_{n}.py", 0) for n in range(40))
    for job in range(10, 20):
        round_ = replace(ROUND, job_id=job)
        updated = with_section(text, job, final_section(round_, DONE, commands, PUSHED))
        assert updated is not None
        text = updated
        assert text.startswith(long)
        assert len(text) <= 65_036
    assert "<!-- neo:repair=19 -->" in text
    assert "pytest tests/test_39.py" in text  # the newest round whole
    assert "earlier CI repairs left out to fit" in text or text.count("### 🔧") == 10
    # No room beside an earlier report at GitHub's limit: nothing is cut, nothing added.
    assert with_section("y" * 65_000, 7, final_section(ROUND, DONE, (), PUSHED)) is None
