"""A thread's conversation across its jobs: the session a job continues, under a
mark of its own, and the mark closed when the job ends.

A job's turns are saved into the thread's session file as they come, under
the job's open mark: should the job never end, the next one drops those
turns (`drops_last_job`). Once compacted, the transcript no longer begins
with the one the job found, so the mark could not cut this job's turns away
again: the file keeps its last save from before, until the job ends. Only
then, with the branch pushed or the work dropped, is the mark closed, with a
note on what the branch lacks (`end_session`). docs/architecture.md, "One job
on the host".
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import replace
from pathlib import Path

from runner.assembly import RunSession
from runner.context.prompt import WORKFLOWS_DIR
from runner.fork import fork_note
from runner.job_spec import JobResult, JobSpec
from runner.llm.types import Message, Text
from runner.run import session_meta
from runner.session import (
    Session,
    SessionError,
    SessionStore,
    before_job,
    start_job,
    utc_timestamp,
)

__all__ = ["end_session", "open_session", "session_id_for"]

log = logging.getLogger("neo.job")


def session_id_for(key: str) -> str:
    """The session id of thread `key`: readable, and a hash so distinct keys never collide."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", key).strip("-")[:60] or "thread"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{slug}-{digest}"


def open_session(
    spec: JobSpec, store: SessionStore, session_id: str, *, model: str, tree: Path
) -> RunSession:
    """Session `session_id` as job `spec.job_id` starts it, under the job's open mark."""
    previous = store.load(session_id) if store.path(session_id).is_file() else None
    if previous is not None and drops_last_job(previous, spec.job_id):
        previous = before_job(previous)
    meta = session_meta(
        previous,
        new_id=session_id,
        provider=spec.settings.provider_name,
        model=model,
        cwd=str(tree),
    )
    meta = start_job(Session(meta, previous.messages if previous else ()), spec.job_id).meta
    return RunSession(store, meta, previous, hold_after_compaction=True)


def drops_last_job(session: Session, job_id: str) -> bool:
    """Whether a job `job_id` starts from before the job that last wrote `session`."""
    mark = session.meta.job
    # A mark never finished is a dead attempt's; one of `job_id` is this job's own.
    return mark is not None and (not mark.finished or mark.id == job_id)


def end_session(
    spec: JobSpec, session: Session | None, result: JobResult, *, compacted: bool = False
) -> None:
    """Close the job's mark on its session, with a note on what the branch lacks."""
    if session is None or session.meta.job is None:
        return  # the agent never ran: the session is as the job found it
    messages = list(session.messages)
    note = _outcome_note(result)
    if note is not None:
        if messages and messages[-1].role == "user":
            last = messages.pop()
            messages.append(replace(last, content=(*last.content, Text(note))))
        else:
            messages.append(Message("user", (Text(note),)))
    mark = replace(session.meta.job, finished=True)
    if compacted:
        # The transcript no longer starts with the one the job found: the
        # job's turns are in its summary, and nothing is left to cut away.
        mark = replace(
            mark,
            messages=len(messages),
            blocks=len(messages[-1].content) if messages else 0,
            usage=session.meta.usage,
        )
    meta = replace(session.meta, updated_at=utc_timestamp(), job=mark)
    try:
        SessionStore(spec.data_dir).save(Session(meta, tuple(messages)))
    except SessionError as error:
        # The saves while the agent ran worked; the result stands. The open
        # mark makes the next job start from before this one.
        log.warning("job %s: %s", spec.job_id, error)


def _outcome_note(result: JobResult) -> str | None:
    """What the next job must know that this job's conversation does not say."""
    discarded = (
        "Its working tree was discarded: none of the changes made in it is on"
        f" branch {result.branch}."
    )
    if result.conclusion == "cancelled":
        return f"[Neo: this job was cancelled before it finished. {discarded}]"
    if result.conclusion == "failed":
        reason = f"{result.error_kind}: {result.error_message}"
        return f"[Neo: this job failed ({reason}). {discarded}]"
    notes = []
    if result.fork is not None and (note := fork_note(result.fork, result.branch)):
        notes.append(note)
    if result.blocked_paths:
        paths = ", ".join(result.blocked_paths)
        notes.append(
            f"[Neo: changes to {paths} were reverted before the commit: files under"
            f" {WORKFLOWS_DIR}/ may not be changed in this repository.]"
        )
    if result.left_out:
        paths = ", ".join(f"{path}/" for path in result.left_out)
        notes.append(
            f"[Neo: left out of the commit: {paths}. A directory holding a git repository"
            " of its own would be committed as a link to a commit no remote has.]"
        )
    return " ".join(notes) or None
