"""`neo jobs`: operators list, inspect, retry and cancel queued jobs, follow a job's
event log (bot/cli/jobs_logs.py), and see the spend.

It works on the same queue URL as `neo serve`. Instruction text comes from
GitHub users: it is printed with control characters escaped, so a comment
cannot drive the operator's terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from bot.cli.argtypes import positive_int
from bot.cli.jobs_logs import print_logs
from bot.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from bot.jobs import Job, JobState
from bot.queue import JobQueue, QueueError, SpendLine, default_queue_url, open_queue
from runner.errors import ConfigError
from runner.text import one_line

RETRYABLE = frozenset({JobState.FAILED, JobState.CANCELLED})

Parser = TypeVar("Parser", bound=argparse.ArgumentParser)


def add_jobs_parser(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add `jobs` to the `neo` subcommands (`commands` from add_subparsers)."""
    jobs = commands.add_parser(
        "jobs",
        help="list, inspect, retry and cancel queued jobs; see what they spent",
        description="Operate on the job queue that `neo serve` fills.",
    )
    actions = jobs.add_subparsers(dest="jobs_command", required=True, parser_class=type(jobs))
    common = type(jobs)(add_help=False)
    common.add_argument(
        "--queue-url",
        metavar="URL",
        help="the queue (default: $NEO_QUEUE_URL, else sqlite:///<NEO_DATA_DIR or ~/.neo>/neo.db)",
    )
    formats = ("text", "json")

    listing = actions.add_parser("list", parents=[common], help="the newest jobs first")
    listing.add_argument("--state", choices=[state.value for state in JobState])
    listing.add_argument("--repo", type=_repository, metavar="OWNER/NAME")
    listing.add_argument("--limit", type=positive_int, default=100, metavar="N")
    listing.add_argument("--format", choices=formats, default="text")

    show = actions.add_parser("show", parents=[common], help="one job in full")
    show.add_argument("id", type=_job_id, metavar="ID")
    show.add_argument("--format", choices=formats, default="text")

    logs = actions.add_parser(
        "logs",
        parents=[common],
        help="a job's events, oldest first: what the run page shows",
        description="Print a job's event log, oldest first: states, the model's text,"
        " each tool call with its arguments and the start of its output, turns with"
        " tokens, cost and what is left of each limit.",
    )
    logs.add_argument("id", type=_job_id, metavar="ID")
    logs.add_argument(
        "--follow", "-f", action="store_true", help="print events as they come, until the job ends"
    )
    logs.add_argument(
        "--format", choices=formats, default="text", help="json: one event (a JSON object) a line"
    )

    retry = actions.add_parser(
        "retry", parents=[common], help="queue a failed or cancelled job again"
    )
    retry.add_argument("id", type=_job_id, metavar="ID")

    cancel = actions.add_parser(
        "cancel", parents=[common], help="cancel a queued job, or stop a running one"
    )
    cancel.add_argument("id", type=_job_id, metavar="ID")

    spend = actions.add_parser(
        "spend", parents=[common], help="what finished jobs cost, per UTC day, repository and model"
    )
    spend.add_argument("--repo", type=_repository, metavar="OWNER/NAME")
    spend.add_argument(
        "--since",
        type=_day,
        metavar="YYYY-MM-DD",
        help="the first UTC day to show (default: the last 7 days, today included)",
    )
    spend.add_argument("--format", choices=formats, default="text")


def jobs_command(args: argparse.Namespace) -> int:
    if args.queue_url:
        url, source = args.queue_url, "--queue-url"
    elif os.environ.get("NEO_QUEUE_URL"):
        url, source = default_queue_url(), "NEO_QUEUE_URL"
    else:
        url, source = default_queue_url(), "the default; set NEO_QUEUE_URL or pass --queue-url"
    try:
        # An operator's typo should not leave an empty database behind.
        queue = open_queue(url, source=source, create=False, listen=False)
    except ConfigError as error:
        return _fail(f"neo: error: {error}", EXIT_USAGE)
    try:
        return asyncio.run(_run(args, queue))
    except KeyboardInterrupt:  # how a `logs --follow` is left before its job ends
        return EXIT_INTERRUPTED


async def _run(args: argparse.Namespace, queue: JobQueue) -> int:
    try:
        if args.jobs_command == "list":
            return await _list(args, queue)
        if args.jobs_command == "show":
            return await _show(args, queue)
        if args.jobs_command == "logs":
            found = await print_logs(
                queue, args.id, follow=args.follow, as_json=args.format == "json"
            )
            return EXIT_OK if found else _unknown(args.id)
        if args.jobs_command == "retry":
            return await _retry(args.id, queue)
        if args.jobs_command == "cancel":
            return await _cancel(args.id, queue)
        if args.jobs_command == "spend":
            return await _spend(args, queue)
        raise AssertionError(args.jobs_command)  # argparse allows only known commands
    except QueueError as error:
        return _fail(f"neo: error: {error}", EXIT_FAILED)
    finally:
        await queue.close()


async def _list(args: argparse.Namespace, queue: JobQueue) -> int:
    state = JobState(args.state) if args.state else None
    jobs = await queue.list(state=state, repository=args.repo, limit=args.limit)
    if args.format == "json":
        print(json.dumps([job.to_json() for job in jobs]))
    elif jobs:
        print(_table(jobs))
    else:
        print("no jobs")
    return EXIT_OK


async def _show(args: argparse.Namespace, queue: JobQueue) -> int:
    job = await queue.get(args.id)
    if job is None:
        return _unknown(args.id)
    if args.format == "json":
        print(json.dumps(job.to_json()))
    else:
        print(_details(job))
    return EXIT_OK


async def _retry(job_id: int, queue: JobQueue) -> int:
    job = await queue.get(job_id)
    if job is None:
        return _unknown(job_id)
    if job.state in RETRYABLE and job.request.lane == "run" and await queue.retry(job_id):
        print(f"job {job_id} is queued again")
        return EXIT_OK
    job = await queue.get(job_id) or job
    if job.request.lane != "run":
        reason = "it is a cancel request, not a run"
    else:
        reason = f"it is {job.state}; only a failed or cancelled job can be retried"
    return _fail(f"neo: cannot retry job {job_id}: {reason}", EXIT_FAILED)


async def _cancel(job_id: int, queue: JobQueue) -> int:
    job = await queue.get(job_id)
    if job is None:
        return _unknown(job_id)
    if job.state in (JobState.QUEUED, JobState.RUNNING) and await queue.cancel(job_id):
        if job.state == JobState.QUEUED:
            print(f"job {job_id} is cancelled")
        else:
            print(f"job {job_id} is running: its worker was asked to stop")
        return EXIT_OK
    job = await queue.get(job_id) or job
    return _fail(f"neo: cannot cancel job {job_id}: it is already {job.state}", EXIT_FAILED)


async def _spend(args: argparse.Namespace, queue: JobQueue) -> int:
    since = args.since
    if since is None:
        today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        since = today - timedelta(days=6)
    lines = await queue.spend(since.timestamp(), repository=args.repo)
    if args.format == "json":
        print(json.dumps([line.to_json() for line in lines]))
    elif lines:
        print(spend_table(lines))
    else:
        print(f"no spend since {since:%Y-%m-%d}")
    return EXIT_OK


def spend_table(lines: list[SpendLine]) -> str:
    """The spend as columns, and the total of the lines under them."""
    header = ("DAY", "REPOSITORY", "MODEL", "JOBS", "TOKENS IN", "TOKENS OUT", "COST")
    rows = [header]
    for line in lines:
        rows.append(
            (
                line.day,
                _printable(line.repository),
                _printable(line.model),
                str(line.jobs),
                f"{line.input_tokens:,}",
                f"{line.output_tokens:,}",
                f"${line.cost_usd:,.2f}",
            )
        )
    rows.append(("total", "", "", "", "", "", f"${sum(line.cost_usd for line in lines):,.2f}"))
    numeric = range(3, len(header))
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    return "\n".join(
        "  ".join(
            cell.rjust(width) if column in numeric else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )


def _table(jobs: list[Job]) -> str:
    header = ("ID", "STATE", "TRIES", "THREAD", "KIND", "AUTHOR", "CREATED", "INSTRUCTION")
    rows = [header]
    for job in jobs:
        request = job.request
        state = job.state.value + ("*" if job.cancel_requested else "")
        rows.append(
            (
                str(job.id),
                state,
                str(job.attempts),
                _printable(f"{request.thread.repository}#{request.thread.number}"),
                request.kind.value,
                _printable(request.author),
                _timestamp(job.created_at),
                _printable(one_line(request.instruction, None), limit=60),
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(header) - 1)]
    lines = [
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]
    if any(job.cancel_requested for job in jobs):
        lines.append("* cancellation requested")
    return "\n".join(line.rstrip() for line in lines)


def _details(job: Job) -> str:
    request = job.request
    thread = request.thread
    kind = "pull request" if thread.is_pull_request else "issue"
    fields = [
        ("job", f"{job.id} ({request.kind.value})"),
        ("state", job.state.value + (", cancellation requested" if job.cancel_requested else "")),
        ("attempts", str(job.attempts)),
        *([("conclusion", job.result.conclusion.value)] if job.result is not None else []),
        ("thread", _printable(f"{thread.repository}#{thread.number} ({kind})")),
        ("event", _printable(request.event)),
        ("author", _printable(f"{request.author} ({request.author_association})")),
        ("trigger", str(request.trigger_id)),
        ("installation", str(request.installation_id)),
        ("delivery", _printable(request.delivery_id)),
        ("dedupe key", _printable(request.dedupe_key)),
        ("created", _timestamp(job.created_at)),
        ("updated", _timestamp(job.updated_at)),
    ]
    if job.worker is not None:
        lease = "" if job.lease_expires_at is None else _timestamp(job.lease_expires_at)
        fields.append(("worker", _printable(f"{job.worker} (lease until {lease})")))
    lines = [f"{name:<13}{value}" for name, value in fields]
    lines.append("instruction")
    lines.extend(f"  {_printable(line)}" for line in request.instruction.splitlines() or [""])
    if job.result is not None:
        lines.append("result")
        text = json.dumps(job.result.to_json(), indent=2, sort_keys=True)
        lines.extend(f"  {_printable(line)}" for line in text.splitlines())
    return "\n".join(lines)


def _printable(text: str, *, limit: int | None = None) -> str:
    """`text` with control characters escaped, cut to `limit` characters."""
    cleaned = "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text
    )
    if limit is not None and len(cleaned) > limit:
        cleaned = cleaned[: limit - 1] + "…"
    return cleaned


def _timestamp(unix: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(unix))


def _unknown(job_id: int) -> int:
    return _fail(f"neo: error: no job {job_id} in the queue", EXIT_USAGE)


def _fail(line: str, status: int) -> int:
    print(line, file=sys.stderr)
    return status


# Both queues keep ids in signed 64-bit columns: a larger number names no job,
# and SQLite's driver raises on it rather than find nothing.
_MAX_JOB_ID = 2**63 - 1


def _job_id(text: str) -> int:
    shown = repr(text if len(text) <= 40 else text[:37] + "...")
    try:
        value = int(text)
    except ValueError:  # also past the int-from-str digit limit
        raise argparse.ArgumentTypeError(f"a job id is a whole number, not {shown}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"a job id is at least 1, not {shown}")
    if value > _MAX_JOB_ID:
        raise argparse.ArgumentTypeError(f"a job id is at most {_MAX_JOB_ID}, not {shown}")
    return value


def _repository(text: str) -> str:
    owner, slash, name = text.partition("/")
    if not slash or not owner or not name or "/" in name:
        raise argparse.ArgumentTypeError(f"expected OWNER/NAME, not {text!r}")
    return text


def _day(text: str) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a day as YYYY-MM-DD, not {text!r}") from None
