"""`neo action`: one workflow run's event through the App's own worker.

What `action.yml` runs once `bot.action.main` has checked the inputs: plan the job,
queue it in a temporary SQLite queue, run the real `Worker` on it with the workflow's
token, then set the step's outputs and summary. Job ids, settings and exit statuses:
docs/architecture.md, "The Action".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import tempfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bot.action.inputs import ActionContext, ActionInputs, InputError
from bot.action.outputs import ActionConclusion, ActionOutcome, finish_step
from bot.action.plan import Run, Skip, plan
from bot.config.docs import DEFAULT_DOCS_URL, action_docs_url
from bot.config.prices import prices_from_environment
from bot.config.settings import Settings
from bot.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from bot.github.token_auth import TokenAuth, TokenRefused
from bot.jobs import FINAL_STATES, Conclusion, Job, JobOutcome, JobRequest
from bot.queue import SqliteQueue
from bot.worker.config import ConfigSource
from bot.worker.loop import Worker, WorkerDeps, WorkerOptions
from runner.errors import ConfigError, NeoError
from runner.llm.price_book import Price
from runner.mcp import Operator
from runner.network import BadEntry, NetworkPolicy, parse_list
from runner.sandbox.requests import Bounds
from runner.text import one_line

__all__ = ["act", "run_action"]

log = logging.getLogger("neo.action")


# How often the worker looks at the queue and renews the job's lease: a
# cancelled run must reach the job within GitHub's 7.5 s before SIGTERM.
_POLL: Final = 0.2
_HEARTBEAT: Final = 1.0
# After a second signal, how long the job may take to wind down.
_GRACE: Final = 5.0
# Job ids: the run id, times this, plus a number for the workflow's job.
_JOBS_PER_RUN: Final = 1000
# The service's default sandbox image; NEO_SANDBOX_IMAGE names another.
DEFAULT_SANDBOX_IMAGE: Final[str] = Settings.model_fields["sandbox_image"].default
# The step's conclusion for each of a job's: the same word, but for a refused
# author (nothing ran: skipped) and a stop request (no step runs one).
_CONCLUSIONS: Final[Mapping[Conclusion, ActionConclusion]] = {
    Conclusion.SUCCESS: "success",
    Conclusion.NO_CHANGES: "no_changes",
    Conclusion.INCOMPLETE: "incomplete",
    Conclusion.FAILED: "failed",
    Conclusion.CANCELLED: "cancelled",
    Conclusion.UNAUTHORISED: "skipped",
    Conclusion.STOPPED: "failed",
}


def act(context: ActionContext, inputs: ActionInputs, payload: Mapping[str, Any]) -> int:
    """The job `payload` asks for, run to its end; `neo action`'s exit status."""
    # The providers read their keys from their SDK's variables, as `neo run` does.
    os.environ.update(inputs.api_keys)
    interrupted = asyncio.Event()
    try:
        outcome = asyncio.run(_main(context, inputs, payload, interrupted))
    except (InputError, TokenRefused) as error:
        finish_step(context, ActionOutcome(conclusion="failed", reason=str(error)))
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (NeoError, ConfigError) as error:
        outcome = ActionOutcome(conclusion="failed", reason=one_line(error, None))
    except Exception as error:  # a bug of ours: one line here, the traceback in the debug log
        log.exception("neo action failed")
        reason = f"internal error ({type(error).__name__}); rerun with debug logging for details"
        outcome = ActionOutcome(conclusion="failed", reason=reason)
    finish_step(context, outcome)
    if outcome.conclusion == "failed":
        print(f"neo: error: {outcome.reason or 'the job failed'}", file=sys.stderr)
        return EXIT_FAILED
    if outcome.conclusion == "incomplete":
        # The work so far is in a draft pull request, but the task is not done.
        print(f"neo: incomplete: {outcome.reason}: {outcome.pr_url}", file=sys.stderr)
        return EXIT_FAILED
    if outcome.conclusion == "cancelled":
        print("neo: cancelled", file=sys.stderr)
        return EXIT_INTERRUPTED if interrupted.is_set() else EXIT_FAILED
    if outcome.conclusion == "skipped":
        print(f"neo: nothing to do: {outcome.reason}")
    else:
        link = outcome.pr_url or outcome.review_url
        print(f"neo: {outcome.conclusion}" + (f": {link}" if link else ""))
    return EXIT_OK


async def _main(
    context: ActionContext,
    inputs: ActionInputs,
    payload: Mapping[str, Any],
    interrupted: asyncio.Event,
) -> ActionOutcome:
    loop = asyncio.get_running_loop()
    signals: list[signal.Signals] = []

    def on_signal() -> None:
        # The first signal cancels the job (its report says so); a second stops at once.
        if interrupted.is_set():
            hurry.set()
        interrupted.set()

    hurry = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, on_signal)
            signals.append(signum)
    try:
        return await run_action(context, inputs, payload, interrupted=interrupted, hurry=hurry)
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)


async def run_action(
    context: ActionContext,
    inputs: ActionInputs,
    payload: Mapping[str, Any],
    *,
    interrupted: asyncio.Event | None = None,
    hurry: asyncio.Event | None = None,
) -> ActionOutcome:
    """Decide, run the job if there is one, and say how it ended.

    `interrupted` set cancels the running job; `hurry` set stops the worker
    without waiting for the job's report.
    """
    interrupted = interrupted or asyncio.Event()
    hurry = hurry or asyncio.Event()
    async with TokenAuth(inputs.github_token, api_url=context.api_url) as auth:
        login = await auth.bot_login()
        decision = plan(context, inputs, payload, bot_login=login)
        if isinstance(decision, Skip):
            return ActionOutcome(conclusion="skipped", reason=decision.reason)
        with tempfile.TemporaryDirectory(prefix="neo-action-", dir=context.runner_temp) as tmp:
            return await _run(context, inputs, decision, auth, Path(tmp), interrupted, hurry)


async def _run(
    context: ActionContext,
    inputs: ActionInputs,
    decision: Run,
    auth: TokenAuth,
    data_dir: Path,
    interrupted: asyncio.Event,
    hurry: asyncio.Event,
) -> ActionOutcome:
    request = decision.request
    settings = _settings(context, inputs, data_dir)
    asked = f" by {request.author}" if request.author else ""
    print(f"neo: {request.event} on {_where(request)}{asked}: starting", flush=True)
    async with SqliteQueue(data_dir / "queue.db", first_job_id=job_number(context)) as queue:
        job_id = (await queue.enqueue(request.delivery_id, [request])).job_ids[0]
        worker = Worker(
            WorkerDeps(queue=queue, app=auth, settings=settings),
            WorkerOptions(
                name=f"actions-{context.run_id}-{context.run_attempt}",
                concurrency=1,
                heartbeat_every=_HEARTBEAT,
                poll_every=_POLL,
                grace=_GRACE,
            ),
            ConfigSource(
                path=inputs.config_path,
                overrides=inputs.overrides,
                overrides_source="the workflow's inputs",
            ),
        )
        stop = asyncio.Event()
        running = asyncio.create_task(worker.run(stop), name="neo-action-worker")
        cancelled = False
        try:
            while not running.done() and not hurry.is_set():
                if interrupted.is_set() and not cancelled:
                    cancelled = True
                    await queue.cancel(job_id)
                job = await queue.get(job_id)
                if job is not None and job.state in FINAL_STATES:
                    break
                await _first_of(interrupted, hurry, _POLL)
        finally:
            stop.set()
            await running
        job = await queue.get(job_id)
    assert job is not None
    return _outcome(job)


def _outcome(job: Job) -> ActionOutcome:
    if job.state not in FINAL_STATES:  # a second signal: the worker let go of it
        return ActionOutcome(conclusion="cancelled", reason="the run was cancelled mid-job")
    outcome = job.result or JobOutcome(conclusion=Conclusion.FAILED)
    if outcome.conclusion is Conclusion.UNAUTHORISED:
        request = job.request
        replied = "" if request.thread.number == 0 else f"; {_where(request)} got a short reply"
        return ActionOutcome(
            conclusion="skipped",
            reason=(
                f"{request.author} may not run Neo on {request.thread.repository} "
                f"(allowed_users decides who may){replied}"
            ),
        )
    conclusion = _CONCLUSIONS[outcome.conclusion]
    stopped = conclusion in ("failed", "cancelled", "incomplete")
    return ActionOutcome(
        conclusion=conclusion,
        branch=outcome.branch,
        pr_url=outcome.pr_url,
        review_url=outcome.review_url,
        session_id=outcome.session_id,
        cost_usd=outcome.cost_usd,
        reason=outcome.error if stopped else None,
        report=outcome.report,
    )


def _where(request: JobRequest) -> str:
    thread = request.thread
    if thread.number == 0:
        return f"{thread.repository} (branch {request.branch})"
    return f"{thread.repository}#{thread.number}"


def job_number(context: ActionContext) -> int:
    """The job's id: the run's, and which of the workflow's jobs this is.

    Stable across re-runs of the run, so a re-run finds the comment it made.
    """
    return context.run_id * _JOBS_PER_RUN + zlib.crc32(context.job.encode()) % _JOBS_PER_RUN


@dataclass(frozen=True, slots=True)
class _ActionSettings:
    """What the worker reads of the service's settings, for this run (`WorkerSettings`)."""

    data_dir: Path
    sandbox: str
    sandbox_image: str
    allowed_bots: frozenset[str]
    # Where jobs clone and push: GITHUB_SERVER_URL, the web host (GHES included).
    git_url: str
    # NEO_NETWORK, as the service reads it.
    network_ceiling: NetworkPolicy | None = None
    # NEO_MCP_COMMANDS, NEO_MCP_URLS and the NEO_MCP_<NAME> secrets, as the service reads them.
    mcp_operator: Operator = field(default_factory=Operator)
    # Where Neo's documentation lives, for the links in what it posts.
    docs_url: str = DEFAULT_DOCS_URL
    # NEO_PRICES in the workflow's environment.
    operator_prices: Mapping[str, Price] = field(default_factory=dict)
    # An Action's run has no run page: its log is the workflow run's.
    public_url: str = ""

    def prepared_bounds(self) -> Bounds:
        # A runner of the Action's is thrown away after the run, with what it kept.
        return Bounds()


def _settings(context: ActionContext, inputs: ActionInputs, data_dir: Path) -> _ActionSettings:
    return _ActionSettings(
        data_dir=data_dir,
        sandbox=inputs.sandbox,
        sandbox_image=os.environ.get("NEO_SANDBOX_IMAGE", "").strip() or DEFAULT_SANDBOX_IMAGE,
        allowed_bots=inputs.allowed_bots,
        git_url=context.server_url,
        network_ceiling=_ceiling(os.environ.get("NEO_NETWORK")),
        mcp_operator=Operator.from_environ(),
        docs_url=action_docs_url(os.environ, context.server_url),
        operator_prices=prices_from_environment(os.environ),
    )


def _ceiling(text: str | None) -> NetworkPolicy | None:
    if text is None:
        return None
    try:
        return parse_list(text)
    except BadEntry as error:
        raise ConfigError(f"NEO_NETWORK: {error}") from None


async def _first_of(first: asyncio.Event, second: asyncio.Event, timeout: float) -> None:
    waits = [asyncio.ensure_future(first.wait()), asyncio.ensure_future(second.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
