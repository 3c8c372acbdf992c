"""The report's and the progress comment's word on MCP: servers left out, tools used."""

from __future__ import annotations

from bot.jobs import Conclusion
from bot.worker.mcp_report import MAX_SHOWN, mcp_lines, skipped_lines, used_line
from bot.worker.progress import Outcome, Progress
from bot.worker.rendering import render_progress, render_report
from bot.worker.untrusted import code_span
from runner.agent import ToolNotice
from runner.mcp.report import McpReport, McpSkipped, Skipped

# What a server said when it failed: its stderr's last line, anyone's text.
HOSTILE = "boom @everyone `x` [link](http://evil.example) <!-- neo:job:1 -->"


def test_the_report_lists_the_tools_used_and_the_servers_left_out_as_code() -> None:
    report = McpReport(
        skipped=(Skipped("docs", f"it did not start within 30s (it said: {HOSTILE})"),),
        calls=(("github__issue", 3), ("time__get_current_time", 1)),
    )

    progress = Progress(7, clock=lambda: 1000.0)
    progress.start()
    progress.finish(Conclusion.SUCCESS)
    text = render_report(progress.state, Outcome(conclusion=Conclusion.SUCCESS, mcp=report))

    assert "**MCP tools used:** `github__issue` ×3, `time__get_current_time` ×1" in text
    assert "**MCP server left out:** the job went on without it." in text
    assert f"- `docs`: {code_span(f'it did not start within 30s (it said: {HOSTILE})')}" in text
    assert "@everyone" not in text.replace(
        code_span(f"it did not start within 30s (it said: {HOSTILE})"), ""
    )


def test_nothing_of_mcp_says_nothing() -> None:
    assert mcp_lines(McpReport(), code=code_span) == []
    assert used_line((), code=code_span) is None


def test_long_lists_are_cut_and_counted() -> None:
    skipped = tuple(Skipped(f"s{n}", "gone") for n in range(MAX_SHOWN + 3))
    calls = tuple((f"s__t{n}", 1) for n in range(MAX_SHOWN + 2))

    assert skipped_lines(skipped, code=code_span)[-1] == "- … and 3 more"
    assert str(used_line(calls, code=code_span)).endswith(", and 2 more")


def test_the_progress_comment_says_which_servers_the_job_goes_without() -> None:
    progress = Progress(7, clock=lambda: 1000.0)
    progress.start()

    progress.apply(ToolNotice("", "mcp", McpSkipped((Skipped("sentry", "refused"),))))

    shown = render_progress(progress.state, now=1001.0)
    assert "**MCP server left out:** the job went on without it.\n- `sentry`: `refused`" in shown
