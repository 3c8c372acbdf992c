"""`GET /runs/{job}/events`: a job's records as Server-Sent Events.

Each message's `id:` is the record's seq, so a browser that reconnects sends
the last one it had (`Last-Event-ID`) and the stream goes on after it: no
record is missed or sent twice. A comment line goes out when nothing has
for a while, so proxies keep the connection open and a watcher that left is
noticed. The stream ends (an `end` event, which the page's script answers by
closing its EventSource) once the job has ended and its last record is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol

import orjson

from bot.jobs import FINAL_STATES, Job
from bot.runs import render
from bot.runs.feeds import Feeds
from bot.runs.view import Limit, Record, agent_key, checklist_items, ended_state, limits, place

# Seconds between comment lines on a quiet stream.
KEEPALIVE = 15.0
# Records read from the queue at once while catching up.
BATCH = 500


class Events(Protocol):
    """What the stream reads of the queue's run logs (bot.queue's RunLog)."""

    async def events_after(
        self, job_id: int, after: int, *, limit: int = 1000
    ) -> Sequence[Record]: ...


class Jobs(Protocol):
    async def get(self, job_id: int) -> Job | None: ...


def resume_point(last_event_id: str | None, after: str | None) -> int:
    """Where a stream starts: after the browser's Last-Event-ID on a reconnect,
    else after the page's `after` (the last record the page was rendered with)."""
    for value in (last_event_id, after):
        if value is not None and value.strip().isdigit():
            return int(value.strip())
    return 0


async def stream(
    log: Events,
    feeds: Feeds,
    jobs: Jobs,
    job_id: int,
    after: int,
    closing: asyncio.Event,
    *,
    keepalive: float = KEEPALIVE,
) -> AsyncIterator[bytes]:
    """The SSE body: records after `after`, live, until the job has ended."""
    last = after
    job = await jobs.get(job_id)
    ended = job is None or job.state in FINAL_STATES
    yield b"retry: 2000\n\n"
    # The queue is read until the stream has caught up, and once more when the job
    # has ended; in between, the job's feed, which every watcher shares.
    behind = True
    while not closing.is_set():
        if behind:
            batch = await log.events_after(job_id, last, limit=BATCH)
            behind = len(batch) == BATCH
            if not batch and ended:
                break
        else:
            batch = await _wait(feeds, job_id, last, keepalive, closing)
            if closing.is_set():
                break
            if not batch:
                yield b": keepalive\n\n"
                job = await jobs.get(job_id)
                ended = behind = job is None or job.state in FINAL_STATES
                continue
        # One write for what came together: a watcher costs one send a flush.
        sent = []
        for record in batch:
            last = record.seq
            ended = ended or (record.kind == "state" and ended_state(record.data) is not None)
            sent.append(feeds.shared(record, message))
        if sent:
            yield b"".join(sent)
        behind = behind or ended
    if not closing.is_set():
        yield b"event: end\ndata: {}\n\n"


async def _wait(
    feeds: Feeds, job_id: int, after: int, timeout: float, closing: asyncio.Event
) -> Sequence[Record]:
    """The job's next records from its feed, given up at once when the server is closing."""
    waiting = asyncio.ensure_future(feeds.wait(job_id, after, timeout))
    stopping = asyncio.ensure_future(closing.wait())
    try:
        await asyncio.wait((waiting, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        if not waiting.done():
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
    return waiting.result() if not waiting.cancelled() else []


def message(record: Record) -> bytes:
    """One record as an SSE message: its seq as the id, what the page does with it as data."""
    payload = update(record)
    return b"id: %d\ndata: %s\n\n" % (record.seq, orjson.dumps(payload))


def update(record: Record) -> dict[str, object]:
    """What the page's script does with one record: HTML to place, header fields to set.

    The HTML is rendered here, escaped, by the templates the page itself is
    rendered with: the script places it and never builds markup from text.
    """
    data: Mapping[str, object] = record.data
    base: dict[str, object] = {"seq": record.seq, "kind": record.kind}
    if record.kind == "turn":
        return {**base, "header": turn_fields(data)}
    if record.kind == "checklist":
        return {**base, "header": {"checklist": render.checklist(checklist_items(data))}}
    shown = place(record)
    base.update(kind=shown.kind, key=shown.key, into=shown.into)
    if shown.kind == "tool_result":
        base.update(
            html=render.result(shown),
            status=render.result_status(shown),
            error=bool(shown.data.get("is_error")),
            # Where it goes alone when its call is not on the page (the job's bound dropped it).
            alone=render.item(shown),
            alone_into=agent_key(shown.agent) if shown.agent else None,
        )
        return base
    base["html"] = render.item(shown)
    if shown.kind == "state" and not shown.agent:
        ended = ended_state(data)
        fields: dict[str, object] = {"state": ended or str(data.get("state") or "")}
        if isinstance(data.get("model"), str):
            fields["model"] = data["model"]
        base.update(header=fields, final=ended is not None)
    return base


def turn_fields(data: Mapping[str, object]) -> dict[str, object]:
    """The header's fields a `turn` record sets, as the page shows them."""
    fields: dict[str, object] = {
        "turns": str(_int(data.get("turn"))),
        "tokens": render.token_counts(
            _int(data.get("input_tokens")), _int(data.get("output_tokens"))
        ),
        "limits": [_limit(limit) for limit in limits(data)],
    }
    cost = data.get("cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        fields["cost"] = render.money(float(cost))
    if isinstance(data.get("model"), str) and data["model"]:
        fields["model"] = data["model"]
    return fields


def _limit(limit: Limit) -> dict[str, str]:
    return {"name": render.limit_name(limit), "left": render.left(limit)}


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
