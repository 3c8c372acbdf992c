"""The webhook server: verify, parse, triage, enqueue, acknowledge.

Nothing on the request path calls GitHub or a model (docs/architecture.md, rule 4):
a delivery is answered 2xx only once its jobs are committed to the queue, and
everything slower happens in the workers. The pure parts live in
`bot.intake.webhooks` and `bot.intake.triggers`; this module is the thin shell around them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass

import orjson
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.config.settings import DEFAULT_REQUEST_SECONDS, Settings
from bot.github.app import GitHubApp, signed_in_app
from bot.intake.queue_metrics import queue_exposition
from bot.intake.triggers import Ignore, Rules, triage
from bot.intake.webhooks import MAX_BODY, BodyTooLarge, WebhookError, parse, read_limited, verify
from bot.queue import JobQueue, QueueError, QueueSnapshot, open_queue
from bot.runs.site import RunSite
from bot.runs.web import routes as run_routes

log = logging.getLogger("neo.server")

WEBHOOK_PATH = "/api/github/webhooks"

# Seconds /healthz and /metrics wait for the queue: a load balancer's probe
# gives up within a few seconds, and a database that slow is as good as down.
QUEUE_SECONDS = 2.0

# Seconds a delivery waits for the queue to commit it. GitHub waits 10 s for
# an answer; a database that is down would hold each delivery for its whole
# connect timeout (10 s), so GitHub would see a timeout, not the 503.
ENQUEUE_SECONDS = 5.0


class BodyTimeout(WebhookError):
    status = 408


class Metrics:
    """The Prometheus series of one server, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.deliveries = Counter(
            "neo_webhook_deliveries",
            "Webhook deliveries by event and decision.",
            ["event", "decision"],
            registry=self.registry,
        )
        self.ack_seconds = Histogram(
            "neo_webhook_ack_seconds",
            "Time from receiving a delivery to answering it.",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            registry=self.registry,
        )


@dataclass(frozen=True, slots=True)
class Intake:
    """What the webhook handler needs; built at start-up."""

    secret: bytes
    rules: Rules
    queue: JobQueue
    # The run pages' parts (bot/runs); None: the server has no run pages.
    runs: RunSite | None = None
    # Seconds a delivery's body may take to arrive (NEO_BODY_TIMEOUT). GitHub
    # itself gives up on a delivery not answered within 10 s, so a slower body
    # is not GitHub's: without a bound, a client that sends headers and then
    # nothing holds its connection (and a task) for ever.
    body_seconds: float = DEFAULT_REQUEST_SECONDS
    # Seconds /healthz and /metrics wait for the queue, and a delivery waits
    # for its commit (the module's constants, below, say why those values).
    queue_seconds: float = QUEUE_SECONDS
    enqueue_seconds: float = ENQUEUE_SECONDS


# Opens the run site for the App and queue the intake opened (neo serve's wiring).
OpenRuns = Callable[[GitHubApp, JobQueue], AbstractAsyncContextManager[RunSite]]


def create_app(
    open_intake: Callable[[], AsyncIterator[Intake]],
    *,
    metrics: Metrics | None = None,
) -> Starlette:
    """The ASGI app. `open_intake` is an async generator that yields the
    intake for the server's lifetime and cleans up after it."""
    metrics = metrics or Metrics()
    state: dict[str, Intake] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with asynccontextmanager(open_intake)() as intake:
            state["intake"] = intake
            app.state.runs = intake.runs
            yield
            state.clear()
            app.state.runs = None

    async def webhook(request: Request) -> Response:
        started = time.perf_counter()
        intake = state["intake"]
        event = request.headers.get("x-github-event", "")
        delivery_id = request.headers.get("x-github-delivery", "")
        try:
            decision, status, fields = await _handle(request, intake)
        except WebhookError as error:
            # Named by the error: bad_signature, bad_request, body_too_large, body_timeout.
            decision = re.sub(r"(?<!^)(?=[A-Z])", "_", type(error).__name__).lower()
            status, fields = error.status, {"error": str(error)}
        except ClientDisconnect:
            # The client left while its body was read: nothing to answer, and
            # no traceback for what any client may do. 499: nginx's "client
            # closed request", for the log and the metrics only.
            decision, status, fields = "client_disconnected", 499, {}

        elapsed = time.perf_counter() - started
        # The queue's own words, for the operator only: they may name its host.
        queue_error = fields.pop("queue_error", None)
        metrics.deliveries.labels(event or "-", decision).inc()
        metrics.ack_seconds.observe(elapsed)
        log.info(
            orjson.dumps(
                {
                    "delivery": delivery_id or None,
                    "event": event or None,
                    "action": fields.pop("action", None),
                    "repository": fields.pop("repository", None),
                    "decision": decision,
                    "status": status,
                    "latency_ms": round(elapsed * 1000, 2),
                    **({"reason": fields["reason"]} if "reason" in fields else {}),
                    **({"error": queue_error} if queue_error is not None else {}),
                }
            ).decode()
        )
        return Response(
            orjson.dumps({"decision": decision, **fields}),
            status_code=status,
            media_type="application/json",
            # The rest of a slow body is not waited for: the connection goes.
            headers={"connection": "close"} if status == BodyTimeout.status else None,
        )

    async def healthz(request: Request) -> Response:
        problem = await _queue_problem(state["intake"])
        if problem is not None:
            return JSONResponse({"ok": False, "error": problem}, status_code=503)
        return JSONResponse({"ok": True})

    async def prometheus(request: Request) -> Response:
        intake = state["intake"]
        snapshot: QueueSnapshot | None = None
        if await _queue_problem(intake) is None:
            try:
                async with asyncio.timeout(intake.queue_seconds):
                    snapshot = await intake.queue.snapshot()
            except (QueueError, TimeoutError) as error:
                _log_queue_failure(error)
        text = generate_latest(metrics.registry) + queue_exposition(snapshot)
        return Response(text, media_type=CONTENT_TYPE_LATEST)

    return Starlette(
        routes=[
            Route(WEBHOOK_PATH, webhook, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/metrics", prometheus, methods=["GET"]),
            *run_routes(),
        ],
        lifespan=lifespan,
    )


async def _queue_problem(intake: Intake) -> str | None:
    """Why the queue is not answering, in one line; None when it is.

    The line names no host, path or database error: /healthz is answered to
    anyone who can reach the webhook. The log has the queue's own line.
    """
    try:
        async with asyncio.timeout(intake.queue_seconds):
            await intake.queue.ping()
    except TimeoutError as error:
        _log_queue_failure(error)
        return f"the queue is unreachable: no answer within {intake.queue_seconds:g} s"
    except QueueError as error:
        _log_queue_failure(error)
        return "the queue is unreachable (the service log says why)"
    return None


def _log_queue_failure(error: BaseException) -> None:
    said = "no answer" if isinstance(error, TimeoutError) else str(error)
    log.warning(json.dumps({"event": "queue_unreachable", "error": said}))


async def _handle(request: Request, intake: Intake) -> tuple[str, int, dict[str, object]]:
    """The decision, HTTP status and answer fields for one delivery."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise BodyTooLarge(f"the body is larger than {MAX_BODY} bytes")
    try:
        async with asyncio.timeout(intake.body_seconds):
            body = await read_limited(request.stream(), MAX_BODY)
    except TimeoutError:
        raise BodyTimeout(
            f"the body took longer than {intake.body_seconds:g} s to arrive"
        ) from None
    verify(body, request.headers.get("x-hub-signature-256"), intake.secret)
    delivery = parse(request.headers, body)
    fields: dict[str, object] = {"action": delivery.action, "repository": _repository(delivery)}
    if delivery.event == "ping":
        return "ping", 200, fields
    outcome = triage(delivery, intake.rules)
    if isinstance(outcome, Ignore):
        return "ignored", 202, {**fields, "reason": outcome.reason}
    try:
        async with asyncio.timeout(intake.enqueue_seconds):
            queued = await intake.queue.enqueue(delivery.delivery_id, outcome)
    except (QueueError, TimeoutError) as error:
        # Not queued, so not acknowledged (rule 4): GitHub may deliver it again.
        said = (
            str(error)
            if isinstance(error, QueueError)
            else f"no answer within {intake.enqueue_seconds:g} s"
        )
        return (
            "queue_unavailable",
            503,
            {
                **fields,
                "error": "the queue is unavailable; deliver this again later",
                "queue_error": said,
            },
        )
    if queued.duplicate:
        return "duplicate", 202, fields
    return "queued", 202, {**fields, "jobs": list(queued.job_ids)}


def _repository(delivery: object) -> str | None:
    payload = getattr(delivery, "payload", None)
    if isinstance(payload, dict):
        repository = payload.get("repository")
        if isinstance(repository, dict):
            name = repository.get("full_name")
            return name if isinstance(name, str) else None
    return None


def serve_intake(
    settings: Settings, open_runs: OpenRuns | None = None
) -> Callable[[], AsyncIterator[Intake]]:
    """The intake of `neo serve`: the queue and the App's identity, for the
    server's lifetime, and the run site `open_runs` makes of them. Fails
    start-up with a ConfigError on bad credentials."""

    async def open_intake() -> AsyncIterator[Intake]:
        async with signed_in_app(settings) as (app, login):
            rules = Rules(
                app_bot_login=login,
                handle=settings.handle,
                trigger_label=settings.trigger_label,
                allowed_bots=settings.allowed_bots,
            )
            queue = open_queue(
                settings.queue,
                job_timeout=settings.job_timeout,
                listen=settings.workers > 0,
                max_run_events=settings.run_max_events,
            )
            try:
                log.info(json.dumps({"event": "started", "app": login, "queue": _scheme(settings)}))
                secret = settings.webhook_secret.get_secret_value().encode()
                async with open_runs(app, queue) if open_runs else nullcontext() as runs:
                    yield Intake(secret, rules, queue, runs, settings.body_timeout)
            finally:
                await queue.close()

    return open_intake


def _scheme(settings: Settings) -> str:
    # The queue URL may hold a password: log its scheme only.
    return settings.queue.split(":", 1)[0]
