"""A job's event log, written while it runs: records buffered, appended about every
`FLUSH_EVERY` seconds and once more at the end.

The job never waits for the database: `event` and `add` only buffer, and a
background task appends. A failed append is logged and its records dropped, so a
database that is away or slow costs the log, never the job. What piles up while
an append is slow is bounded (`MAX_PENDING`); what that drops is logged and said
in the log as one `truncated` record.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from types import TracebackType

from bot.queue import RunLog
from bot.runs.records import Limits, Record, Recorder, ending_records, state_record
from runner.network import Blocked
from runner.sandbox.setup_plan import SetupOutcome
from runner.text import one_line

__all__ = ["FLUSH_EVERY", "MAX_PENDING", "EventWriter"]

FLUSH_EVERY = 0.1
# Records waiting for an append, at most: a database away for a long run would
# otherwise hold every record in memory.
MAX_PENDING = 5_000
# How long the end waits for the last append: a database away must not hold
# the job's end for long.
FINAL_FLUSH_TIMEOUT = 10.0

Log = Callable[..., None]


class EventWriter:
    """Job `job_id`'s records, appended to `log` in the background while in the block.

    `report(event, **fields)` is the worker's log line; `clock` unix time.
    """

    def __init__(
        self,
        log: RunLog,
        job_id: int,
        *,
        clock: Callable[[], float],
        report: Log,
        every: float = FLUSH_EVERY,
    ) -> None:
        self._log = log
        self._job_id = job_id
        self._clock = clock
        self._report = report
        self._every = every
        self._pending: list[Record] = []
        self._dropped = 0
        self._dropped_from = 0  # where in `_pending` the dropping began
        self._recorder: Recorder | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failures = 0
        self.ended = False

    async def __aenter__(self) -> EventWriter:
        self._task = asyncio.create_task(self._run(), name=f"neo-run-events-{self._job_id}")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # The append under way finishes, then one more takes what is left.
        self._closing.set()
        self._ready.set()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), FINAL_FLUSH_TIMEOUT)
        except TimeoutError:
            self._report("run_events_unwritten", job=self._job_id, records=len(self._pending))
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- what the job says (never waits) ------------------------------------------

    def start_run(
        self,
        *,
        started_at: float,
        limits: Limits,
        secrets: Sequence[str],
        model: str | None = None,
    ) -> None:
        """The runner starts: its events become records from now on."""
        self._recorder = Recorder(
            started_at=started_at, limits=limits, secrets=secrets, model=model
        )

    def event(self, event: object) -> None:
        """One of the runner's events (ignored before `start_run`)."""
        if self._recorder is not None:
            self.add(*self._recorder.record(event, self._clock()))

    def run_ended(self, *, setup: SetupOutcome | None, blocked: Sequence[Blocked]) -> None:
        """What the runner's result tells of the run: its setup, the hosts refused."""
        if self._recorder is not None:
            self.add(*self._recorder.flush())
            self.add(
                *ending_records(
                    self._clock(), setup=setup, blocked=blocked, recorder=self._recorder
                )
            )

    def state(
        self,
        state: str,
        *,
        conclusion: str | None = None,
        error: str | None = None,
        at: float | None = None,
    ) -> None:
        """The job entered `state`; `finished` (with its conclusion) ends the log's story."""
        if self._recorder is not None:
            self.add(*self._recorder.flush())
        if state == "finished":
            self.ended = True
        self.add(
            state_record(
                self._clock() if at is None else at, state, conclusion=conclusion, error=error
            )
        )

    def add(self, *records: Record) -> None:
        for record in records:
            # A state record is kept whatever is dropped: it says how the job ended.
            if len(self._pending) >= MAX_PENDING and record[1] != "state":
                if not self._dropped:
                    self._dropped_from = len(self._pending)
                self._dropped += 1
            else:
                self._pending.append(record)
        if self._pending:
            self._ready.set()

    # -- the background ------------------------------------------------------------

    async def _run(self) -> None:
        closing = self._closing
        while not closing.is_set():
            await self._ready.wait()
            # Gather what comes within `every`: one append for a burst of events.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(closing.wait(), self._every)
            await self._flush()
        await self._flush()

    async def _flush(self) -> None:
        self._ready.clear()
        if self._recorder is not None:
            # Text still streaming is shown as far as it got.
            self._pending.extend(self._recorder.flush())
        batch, self._pending = self._pending, []
        if self._dropped:
            # In the place of what was dropped: after what came before it.
            where = min(self._dropped_from, len(batch))
            at = batch[where - 1][0] if where else self._clock()
            dropped = {"dropped": self._dropped, "reason": "the database was slow"}
            batch.insert(where, (at, "truncated", dropped))
            self._report("run_events_dropped", job=self._job_id, dropped=self._dropped)
            self._dropped = 0
        if not batch:
            return
        try:
            await self._log.append_events(self._job_id, batch)
        except Exception as error:  # the log is worth less than the job
            self._failures += 1
            if self._failures == 1 or self._failures % 100 == 0:
                self._report(
                    "run_events_failed",
                    job=self._job_id,
                    error=one_line(error),
                    records=len(batch),
                    failures=self._failures,
                )
