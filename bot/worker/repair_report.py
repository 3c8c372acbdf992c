"""What a CI repair says, and where, without erasing what was said before. Pure.

A repair round has three places:

- its own comment on the pull request, edited while it runs, then its
  report: `round_lead` heads it (which checks failed on which commit, with
  links to their runs, and the attempt);
- a section appended to the report of the work that made the pull request
  (`running_section`, then `final_section`: what failed, what changed, what
  Neo measured, what it cost), between markers, so the earlier report stays
  whole and a retried round replaces its own section (`with_section`);
- the status line of the pull request's body (`status_*`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt

from bot.github.markers import REPAIR_ROUND_MARKER, repair_section_end, repair_section_start
from bot.jobs import Conclusion
from bot.worker.progress import Command, Outcome
from bot.worker.pull_request import cost_text, verification_lines
from bot.worker.rendering import MAX_COMMENT_CHARS, format_duration
from bot.worker.untrusted import code_span
from bot.worker.untrusted import inline_markdown as inline

__all__ = [
    "CheckLink",
    "Pushed",
    "RepairRound",
    "final_section",
    "round_lead",
    "running_section",
    "status_final",
    "status_limit",
    "status_running",
    "with_section",
]

# What the story comment may hold; GitHub refuses more.
_LIMIT = MAX_COMMENT_CHARS - 500
_MAX_CHECKS = 10


@dataclass(frozen=True, slots=True)
class CheckLink:
    """A failed check by name, and its run's page (empty: GitHub gave none)."""

    name: str
    url: str = ""


@dataclass(frozen=True, slots=True)
class RepairRound:
    """One repair of a red head: which, of how many, on what, and where it reports."""

    job_id: int | str
    attempt: int
    attempts: int
    pull_number: int
    pull_url: str
    red_sha: str
    checks: tuple[CheckLink, ...]
    # The round's comment on the pull request, once it has one.
    round_url: str | None = None


@dataclass(frozen=True, slots=True)
class Pushed:
    """What a repair pushed: the commit (its page shows the diff), and its subject."""

    commit: str
    subject: str | None = None


def _checks(round_: RepairRound) -> str:
    """The failed checks as code spans, each linked to its run where GitHub gave one."""
    shown = []
    # A check GitHub ran again is one check, at its latest run.
    unique = {check.name: check for check in round_.checks}
    for check in list(unique.values())[:_MAX_CHECKS]:
        name = code_span(check.name[:100])
        shown.append(f"[{name}]({check.url})" if _linkable(check.url) else name)
    more = len(unique) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "") or "a check"


def _linkable(url: str) -> bool:
    return re.fullmatch(r"https?://[^\s<>()\[\]`\\\x00-\x1f\x7f]+", url) is not None


def _attempt(round_: RepairRound) -> str:
    return f"CI repair {round_.attempt} of {round_.attempts}"


def _sha(sha: str) -> str:
    return code_span(sha[:7])


def round_lead(round_: RepairRound) -> str:
    """The first lines of the round's comment on the pull request, kept in every edit."""
    verb = "fails" if len({check.name for check in round_.checks}) == 1 else "fail"
    return (
        f"{REPAIR_ROUND_MARKER}\n🔧 **{_attempt(round_)}:** {_checks(round_)} {verb} on"
        f" {_sha(round_.red_sha)}; Neo continues the session that made this pull request."
    )


def running_section(round_: RepairRound) -> str:
    """The story's section while the round runs: what failed, and where to watch it."""
    watch = f" · [follow it]({round_.round_url})" if round_.round_url else ""
    head = f"### 🔧 {_attempt(round_)} on #{round_.pull_number} · running{watch}"
    return _wrap(round_, [head, _failed_line(round_)])


def final_section(
    round_: RepairRound, outcome: Outcome, commands: Sequence[Command], pushed: Pushed | None
) -> str:
    """The story's section once the round ended: what failed, what changed, what Neo
    measured, what it cost."""
    report = f" · [report]({round_.round_url})" if round_.round_url else ""
    head = f"### 🔧 {_attempt(round_)} on #{round_.pull_number} · {_ended(outcome, round_, pushed)}"
    lines = [f"{head}{report}", _failed_line(round_)]
    if outcome.conclusion in (Conclusion.FAILED, Conclusion.CANCELLED) and outcome.error:
        lines.append(f"**Error:** {code_span(outcome.error[:500])}")
    if pushed is not None and pushed.subject:
        lines.append(f"**Changed:** {inline(pushed.subject, 200)}")
    if outcome.conclusion is not Conclusion.CANCELLED or commands:
        lines.extend(
            verification_lines(
                commands,
                intro="**Verified**, as Neo measured it:",
                nothing="**Verified:** nothing; the agent ran no test, build or lint command.",
            )
        )
    lines.append(_footer(outcome))
    return _wrap(round_, lines)


def _failed_line(round_: RepairRound) -> str:
    return f"**Failed:** {_checks(round_)} on {_sha(round_.red_sha)}"


def _ended(outcome: Outcome, round_: RepairRound, pushed: Pushed | None) -> str:
    if pushed is not None:
        commit = f"[{_sha(pushed.commit)}]({round_.pull_url}/commits/{pushed.commit})"
        if outcome.conclusion is Conclusion.INCOMPLETE:
            return f"⚠️ incomplete, the work so far pushed as {commit}"
        return f"✅ pushed {commit}; CI runs again"
    if outcome.conclusion is Conclusion.FAILED:
        return "❌ failed"
    if outcome.conclusion is Conclusion.CANCELLED:
        return "🛑 cancelled"
    return "⚠️ no change made"


def _footer(outcome: Outcome) -> str:
    fields = []
    if outcome.models:
        fields.append("Model: " + " then ".join(code_span(m) for m in outcome.models))
    fields.append(f"Cost: {cost_text(outcome.cost_usd)}")
    if outcome.num_turns:
        fields.append(f"{outcome.num_turns} model call{'s' if outcome.num_turns != 1 else ''}")
    if outcome.duration_ms is not None:
        fields.append(format_duration(outcome.duration_ms / 1000))
    return f"<sub>{' · '.join(fields)}</sub>"


def _wrap(round_: RepairRound, lines: Sequence[str]) -> str:
    """The section between its markers; its heading line alone says what it is."""
    start, end = repair_section_start(round_.job_id), repair_section_end(round_.job_id)
    return "\n\n".join([start, *lines, end])


_START = re.compile(r"<!-- neo:repair=([A-Za-z0-9._:-]+) -->")
# Only the block structure matters: a marker counts as an HTML block of its own,
# never as text inside a fence or a code span, which a model or a fork can fill.
_BLOCKS = MarkdownIt("commonmark")
_BLOCKS.core.ruler.disable(["inline", "text_join"])


def _sections(text: str) -> list[tuple[str, int, int]]:
    """Each round's section in `text`: (job id, first line, line after its end marker)."""
    found: list[tuple[str, int, int]] = []
    open_: tuple[str, int] | None = None
    for token in _BLOCKS.parse(text):
        if token.type != "html_block" or token.level != 0 or token.map is None:
            continue
        content = token.content.strip()
        start = _START.fullmatch(content)
        if start is not None:
            open_ = (start[1], token.map[0])
        elif open_ is not None and content == repair_section_end(open_[0]):
            found.append((open_[0], open_[1], token.map[1]))
            open_ = None
    return found


def with_section(report: str, job_id: int | str, section: str) -> str | None:
    """`report` with round `job_id`'s section replaced by `section`, or added at its end.

    Within GitHub's size: the other rounds' sections shrink to their heading
    line (which links their report), then the oldest go, with a line saying
    so. None when even `section` alone does not fit beside the earlier
    report, which is never cut.
    """
    key = str(job_id)
    lines = report.split("\n")
    found = _sections(report)
    original = "\n".join(lines[: found[0][1]] if found else lines).rstrip()
    sections = [(name, "\n".join(lines[first:end]).strip("\n")) for name, first, end in found]
    if any(name == key for name, _ in sections):
        sections = [(name, section if name == key else text) for name, text in sections]
    else:
        sections.append((key, section))

    def joined(kept: Sequence[tuple[str, str]], dropped: int = 0) -> str:
        note = []
        if dropped:
            rounds = "repair" if dropped == 1 else "repairs"
            note = [f"_{dropped} earlier CI {rounds} left out to fit: see the pull request._"]
        return "\n\n".join([original, *note, *(text for _, text in kept)])

    text = joined(sections)
    if _units(text) <= _LIMIT:
        return text
    sections = [(name, text if name == key else _shrunk(text)) for name, text in sections]
    for dropped in range(len(sections)):
        others = [(name, text) for name, text in sections if name != key]
        kept = [pair for pair in sections if pair[0] == key or pair in others[dropped:]]
        text = joined(kept, dropped)
        if _units(text) <= _LIMIT:
            return text
    return None


def _shrunk(section: str) -> str:
    """A section as its markers and heading line alone."""
    start, heading, *_ = section.split("\n\n")
    end = section.rsplit("\n\n", 1)[-1]
    return "\n\n".join([start, heading, end])


def _units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def status_running(round_: RepairRound) -> str:
    watch = f" · [follow it]({round_.round_url})" if round_.round_url else ""
    return (
        f"**Status:** 🔧 {_attempt(round_)} running: {_checks(round_)} failed on"
        f" {_sha(round_.red_sha)}{watch}"
    )


def status_final(round_: RepairRound, outcome: Outcome, pushed: Pushed | None) -> str:
    report = f" · [report]({round_.round_url})" if round_.round_url else ""
    return f"**Status:** 🔧 {_attempt(round_)}: {_ended(outcome, round_, pushed)}{report}"


def status_limit(attempts: int, checks: Sequence[CheckLink], handle: str) -> str:
    unique = list(dict.fromkeys(check.name for check in checks))
    names = ", ".join(code_span(name[:100]) for name in unique[:_MAX_CHECKS])
    tries = "attempt" if attempts == 1 else "attempts"
    return (
        f"**Status:** 🛑 CI is still red after {attempts} repair {tries}"
        f"{f' ({names})' if names else ''}; Neo stopped. Mention {handle} here for another try."
    )
