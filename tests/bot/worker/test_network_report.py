"""The report's network section: refused hosts with their commands, and the fixes."""

from __future__ import annotations

from markdown_it import MarkdownIt

from bot.jobs import Conclusion
from bot.worker.network_report import MAX_BLOCKED_SHOWN, blocked_lines
from bot.worker.progress import Outcome, Progress
from bot.worker.rendering import render_report
from runner.network import Blocked
from runner.network.accesses import UNKNOWN_COMMAND


def _code(text: str) -> str:
    return f"`{text}`"


def test_each_host_is_listed_with_its_command_and_the_two_fixes() -> None:
    blocked = (
        Blocked("files.example.org", "pip install left-pad", "host", "agent", attempts=3),
        Blocked("web.test", "curl -X POST http://web.test/form", "method", "agent"),
        Blocked("internal.example", "./install.sh", "address", "setup"),
    )

    lines = blocked_lines(blocked, config_path=".github/neo.yml", code=_code)

    assert lines == [
        "**Blocked by the network policy:** Neo's proxy refused 3 hosts.",
        "- `files.example.org`, by `pip install left-pad`",
        "- `web.test` (a method `network.methods: read` does not allow: set it to `all`),"
        " by `curl -X POST http://web.test/form`",
        "- `internal.example` during setup (its address is private or local: only the"
        " operator's `NEO_NETWORK` can open it), by `./install.sh`",
        "",
        "To let the agent reach a host, add it to `network.allow` in `.github/neo.yml` on the"
        " default branch; or move the step that needs it into `setup`, which reaches public"
        " hosts before the agent starts.",
    ]


def test_a_connection_no_command_owned_is_said_in_words_not_as_code() -> None:
    blocked = (Blocked("a.example", UNKNOWN_COMMAND, "host", "agent"),)

    lines = blocked_lines(blocked, config_path="x", code=_code)

    assert lines[1] == f"- `a.example`, by {UNKNOWN_COMMAND}"


def test_nothing_blocked_says_nothing() -> None:
    assert blocked_lines((), config_path=".github/neo.yml", code=_code) == []


def test_a_long_list_is_cut_and_counted() -> None:
    blocked = tuple(Blocked(f"h{n}.example", "curl", "host", "agent") for n in range(25))

    lines = blocked_lines(blocked, config_path="x", code=_code)

    assert len(lines) == 1 + MAX_BLOCKED_SHOWN + 3
    assert lines[-3] == "- … and 5 more"


def test_the_report_shows_the_section_with_commands_as_code() -> None:
    command = "curl https://evil.example/@someone `echo x` [link](http://x)"
    outcome = Outcome(
        conclusion=Conclusion.SUCCESS,
        blocked_hosts=(Blocked("evil.example", command, "host", "agent"),),
        notes=("the operator's NEO_NETWORK does not allow example.com",),
        config_path=".neo/config.yml",
    )

    progress = Progress(7, clock=lambda: 1000.0)
    progress.start()
    progress.finish(Conclusion.SUCCESS)
    report = render_report(progress.state, outcome)

    assert "ℹ️ the operator's NEO_NETWORK does not allow example.com" in report
    assert "**Blocked by the network policy:** Neo's proxy refused 1 host." in report
    assert (
        "- `evil.example`, by ``curl https://evil.example/@someone `echo x` [link](http://x)``"
        in report
    )
    assert "`network.allow` in `.neo/config.yml`" in report


def test_the_fixes_are_a_paragraph_of_their_own_not_part_of_the_last_host() -> None:
    blocked = (Blocked("a.example", "curl a", "host", "agent"),)
    markdown = "\n".join(blocked_lines(blocked, config_path="x", code=_code))

    html = MarkdownIt("commonmark").render(markdown)

    assert "<li><code>a.example</code>, by <code>curl a</code></li>" in html
    assert "</ul>\n<p>To let the agent reach a host" in html
