"""What a job's report on GitHub says of how it ended: the durable mark of published work.

The report is a job's last effect on GitHub, made before its outcome goes to
the queue. Its second line, hidden, carries what the queue is to keep: the
outcome and what the run spent. A job whose worker could not write them (the
queue was away and the worker died, or another host took the job back) is
claimed again, and that attempt finds the report by the job's marker and
writes what the line says instead of running the job again.

    <!-- neo:job=12 -->
    <!-- neo:outcome={"attempt":1,"outcome":{...},"spend":[...]} -->

Only a comment of the bot's, whose first line is the job's marker, counts;
model text cannot open an HTML comment (`neutralise`), so a summary cannot
fake the line. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from bot.github.markers import job_marker
from bot.jobs import Conclusion, Job, JobOutcome, JobState
from bot.queue import SpendRecord
from runner.text import one_line

__all__ = ["Reported", "reported_outcome", "with_outcome"]

_PREFIX: Final = "<!-- neo:outcome="
_SUFFIX: Final = " -->"
_LINE = re.compile(r"<!-- neo:outcome=(\{[^\n]*\}) -->")
# The report is cut to leave 1,000 characters of GitHub's limit free; the line
# stays well within them (one_line bounds the only free text, the error).
_ERROR_CHARS = 300
# Inside an HTML comment: no `>` may end it early, so none is written raw.
_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


@dataclass(frozen=True, slots=True)
class Reported:
    """What an earlier attempt's report says: its attempt, the outcome, the spend."""

    attempt: int
    outcome: JobOutcome
    spend: tuple[SpendRecord, ...]


def with_outcome(report: str, job: Job, outcome: JobOutcome, spend: Sequence[SpendRecord]) -> str:
    """`report` (which starts with the job's marker) with the outcome line after it.

    The stored outcome's own report is `report` without it: the queue keeps
    what the thread shows.
    """
    marker = job_marker(job.id)
    if not report.startswith(marker):
        raise ValueError("a report starts with its job's marker")
    kept = outcome.to_json()
    kept.pop("report", None)
    if kept.get("error"):
        kept["error"] = one_line(kept["error"], _ERROR_CHARS)
    data = {
        "attempt": job.attempts,
        "outcome": kept,
        "spend": [
            {
                "model": record.model,
                "at": record.at,
                "cost_usd": record.cost_usd,
                "input_tokens": record.input_tokens,
                "output_tokens": record.output_tokens,
            }
            for record in spend
        ],
    }
    encoded = json.dumps(data, separators=(",", ":"), ensure_ascii=True).translate(_ESCAPES)
    return f"{marker}\n{_PREFIX}{encoded}{_SUFFIX}{report[len(marker) :]}"


def reported_outcome(body: str, job: Job) -> Reported | None:
    """What the report `body` of `job` says, if it is one an attempt finished; else None.

    A progress comment, another job's comment, a report written before the
    line existed or a line that does not parse: None, and the job runs.
    """
    marker = job_marker(job.id)
    text = body.replace("\r\n", "\n")
    if not text.startswith(marker + "\n"):
        return None
    rest = text[len(marker) + 1 :]
    line, _, after = rest.partition("\n")
    found = _LINE.fullmatch(line)
    if found is None:
        return None
    try:
        data = json.loads(found[1])
        outcome_data = data["outcome"]
        state = _state(outcome_data)
        outcome = JobOutcome.from_json({**outcome_data, "report": marker + "\n" + after}, state)
        spend = tuple(_spend(job, entry) for entry in data["spend"])
        attempt = int(data["attempt"])
    except (ValueError, KeyError, TypeError):
        return None
    return Reported(attempt=attempt, outcome=outcome, spend=spend)


def _state(outcome: Any) -> JobState:
    if not isinstance(outcome, dict):
        raise TypeError("the outcome is an object")
    return Conclusion(outcome["conclusion"]).state


def _spend(job: Job, entry: Any) -> SpendRecord:
    if not isinstance(entry, dict):
        raise TypeError("a spend record is an object")
    request = job.request
    return SpendRecord(
        job_id=job.id,
        repository=request.thread.repository,
        installation_id=request.installation_id,
        model=str(entry["model"]),
        at=float(entry["at"]),
        cost_usd=float(entry["cost_usd"]),
        input_tokens=int(entry["input_tokens"]),
        output_tokens=int(entry["output_tokens"]),
    )
