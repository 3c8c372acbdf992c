"""The report's word on a fork's pull request: Neo's change proposed as a patch, or
what of the fork a pushed branch left out. Pure.

Paths and the patch come from the fork and the model: paths are shown through
the report's own `code` span, the patch in a fenced block longer than any
backtick run inside it, where GitHub neither links, pings nor closes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from runner.fork import ForkResult

__all__ = ["MAX_PATHS_SHOWN", "PROPOSED", "fork_pushed_line", "patch_section"]

# Paths listed by name; the rest are counted.
MAX_PATHS_SHOWN = 20
# A patch this many lines or fewer is shown open; a longer one is folded.
_OPEN_LINES = 80
_SHORT = 12
_BACKTICKS = re.compile(r"`+")

# What the heading says of a change proposed rather than pushed.
PROPOSED = "the change is proposed below as a patch; nothing was pushed"


def patch_section(
    fork: ForkResult, *, config_path: str, code: Callable[[str], str]
) -> tuple[str, str]:
    """The report's section holding the proposed patch; and the short one that stands in
    for it when the comment cannot hold it (a patch is never cut: half of one is no patch)."""
    why = (
        "Nothing was pushed: this pull request comes from a fork, and a fork's code"
        f" reaches this repository only with `fork_work: push` in {code(config_path)}."
    )
    count = len(fork.patch_files)
    files = f"{count} file" if count == 1 else f"{count} files"
    short = (
        f"**The change** ({files}: {_paths(fork.patch_files, code)}) is a patch of"
        f" {fork.patch_chars:,} characters against the fork's head {code(fork.head[:_SHORT])},"
        f" too long for this comment. {why}"
    )
    if fork.patch is None:
        return short, short
    longest = max((len(run) for run in _BACKTICKS.findall(fork.patch)), default=0)
    fence = "`" * max(3, longest + 1)
    body = fork.patch if fork.patch.endswith("\n") else fork.patch + "\n"
    opened = " open" if body.count("\n") <= _OPEN_LINES else ""
    full = (
        f"**The change, as a patch** against the fork's head {code(fork.head[:_SHORT])}. {why}"
        " On the pull request's branch, save it as `neo.patch` and run `git apply neo.patch`."
        f"\n\n<details{opened}><summary>neo.patch: {files}</summary>\n\n"
        f"{fence}diff\n{body}{fence}\n\n</details>"
    )
    return full, short


def fork_pushed_line(fork: ForkResult, *, code: Callable[[str], str]) -> str | None:
    """A line on what of the fork a pushed branch left out, when it left anything out."""
    if not fork.pushed or not fork.left_out:
        return None
    return (
        f"The branch holds the fork's changes at {code(fork.head[:_SHORT])} without its"
        f" changes to CI configuration, which never come into this repository from a fork:"
        f" {_paths(fork.left_out, code)}."
    )


def _paths(paths: Sequence[str], code: Callable[[str], str]) -> str:
    shown = ", ".join(code(path) for path in paths[:MAX_PATHS_SHOWN])
    more = len(paths) - MAX_PATHS_SHOWN
    return f"{shown} and {more:,} more" if more > 0 else shown
