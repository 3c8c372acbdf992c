"""One headless run of the agent on a working tree: what `neo run` does.

Builds the provider, sandbox, tools and system prompt, restores or creates
the session, runs one `send`, saves the session after every model call, and
reduces the outcome to a `RunResult`. Rendering belongs to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from runner.agent import Agent, Compacted, Event, TurnFinished, TurnStarted
from runner.budget import WRAP_UP_SECONDS, RunBudget, ran_out, wrap_up_prompt
from runner.compact import WindowCompactor
from runner.context import build_system_prompt, find_git_root, project_context
from runner.errors import ConfigError, NeoError
from runner.llm.pricing import cost_usd
from runner.llm.provider import Provider
from runner.llm.registry import DEFAULT_PROVIDER, make_provider
from runner.llm.types import JSON, Effort, Usage
from runner.sandbox.base import Sandbox, SandboxError
from runner.sandbox.factory import open_sandbox
from runner.session import (
    CompactionRecord,
    Session,
    SessionError,
    SessionMeta,
    SessionStore,
    utc_timestamp,
)
from runner.tools import Checklist, default_tools

ProviderFactory = Callable[[str, "str | None"], Provider]


@dataclass(frozen=True, slots=True)
class RunRequest:
    prompt: str
    # None: the resumed session's directory, else the current one.
    repo: Path | None = None
    sandbox: str = "local"
    image: str | None = None
    # None: the resumed session's choice, else the default.
    provider: str | None = None
    model: str | None = None
    max_turns: int = 100
    timeout: float | None = None
    resume: str | None = None
    # How hard the model thinks; None: not at all.
    effort: Effort | None = None
    # US dollars the run's model calls may cost; None: no limit.
    max_cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class RunResult:
    """The contract's result object, as a value."""

    is_error: bool
    result: str
    error_type: str | None
    error_message: str | None
    stop_reason: str | None
    num_turns: int
    usage: Usage
    cost_usd: float | None
    duration_ms: int
    session_id: str | None

    def to_json(self) -> dict[str, JSON]:
        error: JSON = None
        if self.error_type is not None:
            error = {"type": self.error_type, "message": self.error_message or ""}
        return {
            "type": "result",
            "is_error": self.is_error,
            "result": self.result,
            "error": error,
            "stop_reason": self.stop_reason,
            "num_turns": self.num_turns,
            "usage": dict(self.usage.as_dict()),
            "cost_usd": self.cost_usd,
            "duration_ms": self.duration_ms,
            "session_id": self.session_id,
        }


def failed(error: NeoError, started: float) -> RunResult:
    """The result of a run that could not start."""
    return RunResult(
        is_error=True,
        result="",
        error_type=error.kind,
        error_message=str(error),
        stop_reason=None,
        num_turns=0,
        usage=Usage(),
        cost_usd=None,
        duration_ms=_elapsed_ms(started),
        session_id=None,
    )


async def run_headless(
    request: RunRequest,
    *,
    home: Path,
    on_event: Callable[[Event], None] | None = None,
    stop: asyncio.Event | None = None,
    make: ProviderFactory = make_provider,
) -> RunResult:
    """Run the agent once. Raises ConfigError before anything runs when the
    request cannot work; every later failure is reported in the result.

    Setting `stop` interrupts the run; the session is saved either way.
    """
    started = time.monotonic()
    store = SessionStore(home)
    previous = store.load(request.resume) if request.resume else None
    repo = _working_tree(request, previous)
    provider_name = request.provider or (previous.meta.provider if previous else DEFAULT_PROVIDER)
    model = request.model or (previous.meta.model if previous else None)
    provider = make(provider_name, model)
    budget = RunBudget(
        model=provider.model,
        max_turns=request.max_turns,
        time_limit=request.timeout,
        max_cost_usd=request.max_cost_usd,
    )
    now = utc_timestamp()
    meta = (
        replace(previous.meta, provider=provider_name, model=provider.model, cwd=str(repo))
        if previous
        else SessionMeta(store.new_id(), provider_name, provider.model, str(repo), now, now)
    )
    sandbox = open_sandbox(
        request.sandbox, repo, job_id=meta.id, image=request.image, image_setting="--image"
    )
    try:
        async with sandbox as box:
            return await _run_agent(
                request, box, provider, store, meta, previous, on_event, stop, started, budget
            )
    except SandboxError as error:
        return failed(error, started)
    finally:
        await _close(provider)


async def _run_agent(
    request: RunRequest,
    sandbox: Sandbox,
    provider: Provider,
    store: SessionStore,
    meta: SessionMeta,
    previous: Session | None,
    on_event: Callable[[Event], None] | None,
    stop: asyncio.Event | None,
    started: float,
    budget: RunBudget,
) -> RunResult:
    repo = Path(meta.cwd)
    system = build_system_prompt(
        workdir=sandbox.root,
        project=project_context(repo),
        is_git_repo=find_git_root(repo) is not None,
        network=request.sandbox != "docker",
        max_turns=request.max_turns,
        time_limit=request.timeout,
    )
    agent = Agent(
        provider,
        tools=default_tools(sandbox, checklist=Checklist()),
        system=system,
        max_turns=request.max_turns,
        messages=previous.messages if previous else (),
        usage=previous.meta.usage if previous else None,
        compactor=WindowCompactor(provider),
        effort=request.effort,
        budget=budget,
    )
    turns = 0
    finished: TurnFinished | None = None
    compactions = list(meta.compactions)

    def save() -> None:
        session_meta = replace(
            meta, updated_at=utc_timestamp(), usage=agent.usage, compactions=tuple(compactions)
        )
        store.save(Session(session_meta, tuple(agent.transcript())))

    def observe(event: Event) -> None:
        nonlocal turns, finished
        if isinstance(event, TurnStarted):
            turns = event.turn
            # Each model call starts from a complete transcript: save it first.
            save()
        elif isinstance(event, TurnFinished):
            finished = event
        elif isinstance(event, Compacted):
            record = CompactionRecord(
                utc_timestamp(), event.stage, event.tokens_before, event.tokens_after
            )
            compactions.append(record)
        if on_event is not None:
            on_event(event)

    agent.subscribe(observe)
    error: NeoError | None = None
    try:
        error = await _send(agent, request.prompt, request.timeout, stop)
        if error is not None and ran_out(error) and await _tree_changed(repo):
            # The model's last word, without tools: what it did and what is left.
            finished = await _wrap_up(agent, error, finished) or finished
    finally:
        try:
            save()
        except SessionError as failed_save:
            # A full disk fails the run (exit 1), as the save before a turn does.
            error = error or failed_save

    usage = finished.usage if finished else Usage()
    return RunResult(
        is_error=error is not None,
        result=finished.text if finished else "",
        error_type=error.kind if error else None,
        error_message=str(error) if error else None,
        stop_reason=finished.stop_reason if finished else None,
        num_turns=turns,
        usage=usage,
        cost_usd=cost_usd(provider.model, usage),
        duration_ms=_elapsed_ms(started),
        session_id=meta.id,
    )


async def _tree_changed(repo: Path) -> bool:
    """Whether the run left changes in its git working tree (outside one: no way to tell)."""
    if find_git_root(repo) is None:
        return False
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            "-C",
            str(repo),
            "status",
            "--porcelain",
            "--untracked-files=normal",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return False
    try:
        out, _ = await asyncio.wait_for(process.communicate(), _STATUS_TIMEOUT)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        return False
    return process.returncode == 0 and bool(out.strip())


_STATUS_TIMEOUT = 30.0


async def _wrap_up(
    agent: Agent, error: NeoError, finished: TurnFinished | None
) -> TurnFinished | None:
    """The run's summary after a budget stopped it; None when the model gave none."""
    try:
        async with asyncio.timeout(WRAP_UP_SECONDS):
            last = await agent.wrap_up(wrap_up_prompt(error))
    except (NeoError, TimeoutError):
        return None
    usage = (finished.usage if finished else Usage()) + last.usage
    return TurnFinished(last.stop_reason, last.text, usage, error.kind, str(error))


class RunInterrupted(NeoError):
    kind = "interrupted"


class RunTimeout(NeoError):
    kind = "timeout"


async def _send(
    agent: Agent,
    prompt: str,
    timeout: float | None,
    stop: asyncio.Event | None,
) -> NeoError | None:
    """Run `agent.send` until it ends, `timeout` passes or `stop` is set."""
    send = asyncio.create_task(agent.send(prompt))
    stopper = asyncio.create_task(stop.wait()) if stop is not None else None
    waiters: set[asyncio.Task[Any]] = {send} if stopper is None else {send, stopper}
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if stopper is not None:
            stopper.cancel()
        if not send.done():
            # Cancelling lets the agent answer its open tool calls first.
            send.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await send
    if send.cancelled():
        if stop is not None and stop.is_set():
            return RunInterrupted("interrupted")
        return RunTimeout(f"the run did not finish within {timeout:g}s (--timeout)")
    error = send.exception()
    if error is None or isinstance(error, NeoError):
        return error
    raise error


async def _close(provider: Provider) -> None:
    close = getattr(provider, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()


def _working_tree(request: RunRequest, previous: Session | None) -> Path:
    if request.repo is not None:
        if not request.repo.is_dir():
            raise ConfigError(f"--repo {request.repo} is not a directory")
        return request.repo.resolve()
    if previous is not None:
        repo = Path(previous.meta.cwd)
        if not repo.is_dir():
            raise ConfigError(f"the session's directory {repo} is gone (pass --repo)")
        return repo
    return Path.cwd()


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
