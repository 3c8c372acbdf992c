"""What the report says of a job's setup: what ran, how long it took, and a failure's last lines.

Pure: the runner's SetupOutcome in, Markdown lines out; commands go through
the report's own code span, which nothing can break out of. A failed detected
command is shown open, with its output's last lines, since the job went on
without what it should have installed; a command of the repository's own
`setup` that failed ended the job, and is shown so, with where it is written
and its last lines; a setup that succeeded folds into one line; none at all
says nothing. docs/setup.md is the user's side of this.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from runner.sandbox.setup_plan import SetupOutcome, StepOutcome

__all__ = ["setup_lines"]

_BACKTICKS = re.compile(r"`+")
_SHOWN = 20


def setup_lines(
    setup: SetupOutcome | None,
    *,
    code: Callable[[str], str],
    clock: Callable[[], float] = time.time,
    config_path: str = ".github/neo.yml",
) -> list[str]:
    """The report's setup section, empty when no setup ran; commands and notes
    go through the report's own `code` span; `config_path` is where `setup` is written."""
    if setup is None or not setup.steps:
        return []
    steps = setup.steps[:_SHOWN]
    more = len(setup.steps) - len(steps)
    listed = [_step_line(step, code) for step in steps]
    if more:
        listed.append(f"- … and {more} more")
    if setup.reused_from is not None:
        age = format_duration(max(clock() - setup.reused_from, 0))
        head = f"Setup: reused the environment an earlier job prepared {age} ago"
    else:
        took = format_duration(setup.seconds)
        noun = "command" if len(setup.steps) == 1 else "commands"
        head = f"Setup: {len(setup.steps)} {noun} in {took}"
        if setup.kept:
            head += ", kept for the next jobs"
    notes = [f"- ℹ️ {code(note)}" for note in setup.notes]
    if not setup.failed:
        body = "\n".join([*listed, *notes])
        return [f"<details><summary>{head}</summary>\n\n{body}\n\n</details>"]
    failed = setup.failed
    if setup.mode == "explicit":
        # Only the repository's own commands fail the job, at the first that fails.
        step = failed[-1]
        head = (
            f"❌ **Setup failed:** {code(step.command)} (`setup` in {code(config_path)}):"
            f" {step.ended}. The agent did not start."
        )
        lines = [head, "\n".join([*listed, *notes])]
        if step.tail:
            lines.append(f"Last lines of {code(step.command)}:\n\n{_fenced(step.tail)}")
        return lines
    names = ", ".join(code(step.command) for step in failed)
    lines = [
        f"⚠️ **{head}; {names} failed.** The run went on without what"
        f" {'it' if len(failed) == 1 else 'they'} should have installed: commit what is"
        f" missing, or write the commands as `setup` in {code(config_path)}.",
        "\n".join([*listed, *notes]),
    ]
    for step in failed:
        if step.tail:
            lines.append(f"Last lines of {code(step.command)}:\n\n{_fenced(step.tail)}")
    return lines


def format_duration(seconds: float) -> str:
    """`0.4s`, `42s`, `4m 05s`, `1h 02m`."""
    if seconds < 1:
        return f"{max(seconds, 0):.1f}s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _step_line(step: StepOutcome, code: Callable[[str], str]) -> str:
    mark = "✅" if step.ok else "❌"
    line = f"- {mark} {code(step.command)} · {format_duration(step.seconds)}"
    return line if step.ok else f"{line} → {step.ended}"


def _fenced(text: str) -> str:
    """`text` in a code block no line of it can close."""
    text = text.replace("\0", "\ufffd")
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"
