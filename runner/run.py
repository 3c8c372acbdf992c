"""The core of one agent run, shared by a job (`runner.job`) and `neo run` (`runner.headless`).

The agent is built by `runner.assembly`; this module records its session,
bounds the run by a time limit and a stop event, and asks for the model's
last word when a budget stopped it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from runner.agent import Agent, Compacted, Event, TurnFinished, TurnStarted
from runner.budget import WRAP_UP_SECONDS, wrap_up_prompt
from runner.errors import NeoError
from runner.llm.types import Image, Text, Usage
from runner.session import (
    CompactionRecord,
    Session,
    SessionMeta,
    SessionStore,
    utc_timestamp,
)
from runner.spend import Ledger

__all__ = [
    "AgentRun",
    "RunInterrupted",
    "RunTimeout",
    "bounded",
    "elapsed_ms",
    "session_meta",
]


_T = TypeVar("_T")


class RunInterrupted(NeoError):
    kind = "interrupted"


class RunTimeout(NeoError):
    kind = "timeout"


async def bounded(
    work: Awaitable[_T],
    *,
    time_limit: float | None,
    stop: asyncio.Event | None,
    stopped: str,
    timed_out: str,
) -> _T | NeoError:
    """Await `work` until it ends, `time_limit` passes or `stop` is set.

    Its result, or the error that says why it was cut: RunInterrupted with
    `stopped`, or RunTimeout with `timed_out` (where `{limit}` stands for the
    time limit). Whatever `work` raises is raised.
    """
    task = asyncio.ensure_future(work)
    stopper = asyncio.ensure_future(stop.wait()) if stop is not None else None
    waiters: set[asyncio.Future[Any]] = {task} if stopper is None else {task, stopper}
    try:
        await asyncio.wait(waiters, timeout=time_limit, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if stopper is not None:
            stopper.cancel()
        if not task.done():
            # Cancelling lets the agent answer its open tool calls and the
            # sandbox remove its container.
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if task.cancelled():
        if stop is not None and stop.is_set():
            return RunInterrupted(stopped)
        return RunTimeout(timed_out.format(limit=time_limit))
    return task.result()


def session_meta(
    previous: Session | None, *, new_id: str, provider: str, model: str, cwd: str
) -> SessionMeta:
    """The session a run records into: `previous`'s carried on, or a new one named `new_id`."""
    if previous is not None:
        return replace(previous.meta, provider=provider, model=model, cwd=cwd)
    now = utc_timestamp()
    return SessionMeta(new_id, provider, model, cwd, now, now)


class AgentRun:
    """An agent's run, recorded: its session saved before each model call, and what it said.

    With `hold_after_compaction`, once the agent has compacted the
    conversation the file keeps its last save and only `session` follows the
    agent (a job's open mark could no longer cut the job's turns away).
    """

    def __init__(
        self,
        agent: Agent,
        store: SessionStore,
        meta: SessionMeta,
        *,
        on_event: Callable[[Event], None] | None = None,
        hold_after_compaction: bool = False,
        ledger: Ledger | None = None,
    ) -> None:
        self.agent = agent
        self.turns = 0
        self.finished: TurnFinished | None = None
        self.compacted = False
        # As last saved (or held); None until the first save.
        self.session: Session | None = None
        self._store = store
        self._meta = meta
        self._compactions = list(meta.compactions)
        self._on_event = on_event
        self._hold = hold_after_compaction
        self._ledger = ledger
        agent.subscribe(self._observe)

    @property
    def session_id(self) -> str:
        return self._meta.id

    @property
    def usage(self) -> Usage:
        """What the run's model calls used, as its last turn reported."""
        return self.finished.usage if self.finished else Usage()

    def save(self) -> None:
        """Record the session as the agent has it now; SessionError when it cannot be written."""
        meta = replace(
            self._meta,
            updated_at=utc_timestamp(),
            usage=self.agent.usage,
            compactions=tuple(self._compactions),
        )
        self.session = Session(meta, tuple(self.agent.transcript()))
        if not (self._hold and self.compacted):
            self._store.save(self.session)

    async def send(self, prompt: str, attachments: Sequence[Text | Image] = ()) -> NeoError | None:
        """Run the agent on `prompt` (then `attachments`); the NeoError it stopped
        with, if any (others propagate)."""
        try:
            await self.agent.send(prompt, attachments)
        except NeoError as error:
            return error
        return None

    async def wrap_up(self, error: NeoError) -> NeoError | TimeoutError | None:
        """Ask the model, without tools, for the summary of work `error` (a budget) cut short.

        Bounded on its own, since the time may be what ran out, and paid with
        what the ledger kept back for it. On an answer, `finished` becomes it;
        otherwise the failure is returned (MaxCost: not even the money kept
        back could pay for it) and `finished` stays as the agent's last turn
        left it.
        """
        if self._ledger is not None:
            self._ledger.wrap_up()
        try:
            async with asyncio.timeout(WRAP_UP_SECONDS):
                last = await self.agent.wrap_up(wrap_up_prompt(error))
        except (NeoError, TimeoutError) as failure:
            return failure
        usage = self.usage + last.usage
        self.finished = TurnFinished(last.stop_reason, last.text, usage, error.kind, str(error))
        return None

    def _observe(self, event: Event) -> None:
        if isinstance(event, TurnStarted):
            self.turns = event.turn
            self.save()  # each model call starts from a complete transcript
        elif isinstance(event, TurnFinished):
            self.finished = event
        elif isinstance(event, Compacted):
            self.compacted = True
            self._compactions.append(
                CompactionRecord(
                    utc_timestamp(), event.stage, event.tokens_before, event.tokens_after
                )
            )
        if self._on_event is not None:
            self._on_event(event)


def elapsed_ms(started: float) -> int:
    """Milliseconds since `started`, a `time.monotonic()` reading."""
    return int((time.monotonic() - started) * 1000)
