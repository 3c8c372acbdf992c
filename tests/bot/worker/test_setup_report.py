"""The report's setup section: what ran, how long it took, a failure's last lines."""

from __future__ import annotations

from typing import Any

from bot.jobs import Conclusion
from bot.worker import setup_report
from bot.worker.progress import Outcome, Progress
from bot.worker.rendering import render_report
from bot.worker.untrusted import code_span
from runner.sandbox.setup_plan import SetupOutcome, StepOutcome


def lines_of(setup: SetupOutcome | None, **given: Any) -> list[str]:
    return setup_report.setup_lines(setup, code=code_span, **given)


UV = StepOutcome("uv pip install -r requirements.txt", "python", 12.4, 0)
NPM = StepOutcome("npm ci", "node", 0.4, 1, tail="npm ERR! code E404\nnpm ERR! 404 `left-pad`")


def test_nothing_ran_nothing_is_said() -> None:
    assert lines_of(None) == []
    assert lines_of(SetupOutcome("off")) == []
    assert lines_of(SetupOutcome("auto")) == []


def test_a_setup_that_succeeded_folds_into_one_line() -> None:
    (section,) = lines_of(SetupOutcome("auto", (UV,), kept=True))

    assert section == (
        "<details><summary>Setup: 1 command in 12s, kept for the next jobs</summary>\n\n"
        "- ✅ `uv pip install -r requirements.txt` · 12s\n\n</details>"
    )


def test_a_reused_environment_says_how_old_it_is() -> None:
    (section,) = lines_of(
        SetupOutcome("auto", (UV,), reused_from=1_000.0), clock=lambda: 1_000.0 + 7_200
    )
    assert section.startswith(
        "<details><summary>Setup: reused the environment an earlier job prepared 2h 00m ago"
    )


def test_a_failed_command_is_shown_open_with_its_last_lines() -> None:
    lines = lines_of(SetupOutcome("auto", (UV, NPM), notes=("yarn.lock is odd",)))

    assert lines == [
        "⚠️ **Setup: 2 commands in 12s; `npm ci` failed.** The run went on without what it"
        " should have installed: commit what is missing, or write the commands as `setup` in"
        " `.github/neo.yml`.",
        "- ✅ `uv pip install -r requirements.txt` · 12s\n"
        "- ❌ `npm ci` · 0.4s → exit code 1\n"
        "- ℹ️ `yarn.lock is odd`",
        "Last lines of `npm ci`:\n\n```text\nnpm ERR! code E404\nnpm ERR! 404 `left-pad`\n```",
    ]


def test_a_failing_command_of_the_repositorys_own_setup_ended_the_job() -> None:
    # The error's one line said which command, not why: the reader had nothing to fix.
    failing = StepOutcome("pip install -e .[test]", None, 12.0, 1, tail="ERROR: no foo>=9")
    setup = SetupOutcome("explicit", (StepOutcome("true", None, 0.1, 0), failing))

    assert lines_of(setup, config_path="ci/neo.yml") == [
        "❌ **Setup failed:** `pip install -e .[test]` (`setup` in `ci/neo.yml`): exit code 1."
        " The agent did not start.",
        "- ✅ `true` · 0.1s\n- ❌ `pip install -e .[test]` · 12s → exit code 1",
        "Last lines of `pip install -e .[test]`:\n\n```text\nERROR: no foo>=9\n```",
    ]
    timed_out = StepOutcome("make deps", None, 600.0, -1, timed_out=True)
    assert lines_of(SetupOutcome("explicit", (timed_out,)))[0] == (
        "❌ **Setup failed:** `make deps` (`setup` in `.github/neo.yml`): timed out after 600s."
        " The agent did not start."
    )


def test_output_cannot_close_its_block_nor_a_command_its_span() -> None:
    step = StepOutcome("echo `x`", None, 1.0, 2, tail="```\n@mona [x](http://e.test)")
    lines = lines_of(SetupOutcome("explicit", (step,)))

    assert "- ❌ `` echo `x` `` · 1s → exit code 2" in lines[1]
    assert lines[2].endswith("````text\n```\n@mona [x](http://e.test)\n````")


def test_the_report_carries_the_section() -> None:
    progress = Progress("job-1", clock=lambda: 0.0)
    report = render_report(
        progress.state,
        Outcome(conclusion=Conclusion.NO_CHANGES, setup=SetupOutcome("auto", (UV, NPM))),
    )
    assert "⚠️ **Setup: 2 commands in 12s; `npm ci` failed.**" in report
    assert "npm ERR! code E404" in report


def test_the_report_of_a_job_setup_failed_shows_the_command_and_its_last_lines() -> None:
    failing = StepOutcome("make deps", None, 3.0, 2, tail="make: *** No rule to make target")
    progress = Progress("job-1", clock=lambda: 0.0)
    progress.finish(Conclusion.FAILED)
    outcome = Outcome(
        conclusion=Conclusion.FAILED,
        error="sandbox_error: setup command 1 of 1 failed (exit code 2): make deps",
        setup=SetupOutcome("explicit", (failing,)),
        config_path="ci/neo.yml",
    )

    report = render_report(progress.state, outcome)

    assert "❌ **Setup failed:** `make deps` (`setup` in `ci/neo.yml`): exit code 2." in report
    assert "```text\nmake: *** No rule to make target\n```" in report
