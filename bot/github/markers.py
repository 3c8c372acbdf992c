"""The hidden markers that let Neo find its own comments again on a thread."""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "CONFIG_ERROR_MARKER",
    "REPAIR_ROUND_MARKER",
    "STATUS_END",
    "STATUS_START",
    "job_id_of",
    "job_marker",
    "repair_section_end",
    "repair_section_start",
    "reply_marker",
]

# The comment that says a repository's `.github/neo.yml` is invalid.
CONFIG_ERROR_MARKER: Final = "<!-- neo:config-error -->"

# Around the status line of the body of a pull request Neo opened: a CI
# repair rewrites what is between them, and nothing else of the body.
STATUS_START: Final = "<!-- neo:status -->"
STATUS_END: Final = "<!-- /neo:status -->"

# In the comment of a CI repair's round, on the pull request: not the story
# of a thread, which a later repair appends its section to.
REPAIR_ROUND_MARKER: Final = "<!-- neo:repair-round -->"

_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,99}")
_JOB_MARKER = re.compile(r"<!-- neo:job=([A-Za-z0-9][A-Za-z0-9._:-]{0,99}) -->")


def job_marker(job_id: int | str) -> str:
    """The hidden first line of a job's comment; a retried job finds its comment by it."""
    text = str(job_id)
    if not _JOB_ID.fullmatch(text):
        raise ValueError(f"a job id is letters, digits and ._:- (got {text!r})")
    return f"<!-- neo:job={text} -->"


def job_id_of(body: str) -> str | None:
    """The job a comment belongs to: only a marker at the very start counts.

    Model text never starts a comment and its `<!--` is neutralised, so a
    summary cannot claim another job's comment.
    """
    match = _JOB_MARKER.match(body)
    return match[1] if match else None


def reply_marker(key: str) -> str:
    """The hidden marker that identifies a one-off reply on a thread."""
    return f"<!-- neo:reply={key} -->"


def repair_section_start(job_id: int | str) -> str:
    """Where a CI repair's section of a report starts; the repair finds it again by it."""
    return job_marker(job_id).replace("neo:job=", "neo:repair=")


def repair_section_end(job_id: int | str) -> str:
    return job_marker(job_id).replace("neo:job=", "/neo:repair=")
