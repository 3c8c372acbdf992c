"""The run pages' routes: a run, its event stream, its Stop and Steer, the list of runs.

Thin: who the viewer is and what they may do come from the `Door` (sign-in
and access), Stop and Steer are bot/runs/actions.py's, records the queue's; what
a page shows is bot.runs.view's, how it looks bot.runs.render's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from bot.jobs import FINAL_STATES, Job, JobState
from bot.queue import MAX_STEER_CHARS, JobQueue
from bot.runs import render
from bot.runs.actions import steer_run, stop_run
from bot.runs.feeds import Feeds
from bot.runs.stream import resume_point, stream
from bot.runs.view import header, transcript

STATIC = Path(__file__).with_name("static")
STATIC_URL = "/runs/static"
# The longest steer message the queue keeps.
STEER_MAX = MAX_STEER_CHARS
# The largest action form read: a steer message and a token, with room to spare.
FORM_MAX = 32 * 1024
# Records a page renders on the server; a longer run's page starts with its
# last ones and says so (the job's bound keeps at most 20,000 anyway).
PAGE_RECORDS = 20_000
# Runs `GET /runs` lists, newest first.
LIST_LIMIT = 100

# No inline script or style: the page's script and style are files of this app.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
        " connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}

# What a Stop or Steer did, as the page says it after redirecting back: fixed
# words, so nothing in the query string reaches the page.
_NOTICES = {
    "stopped": "Stop requested: the run winds down and its report names you.",
    "steered": "Sent: the agent reads it after the tool calls in flight.",
    "ended": "This run has ended: nothing was sent.",
}


@dataclass(frozen=True, slots=True)
class Access:
    read: bool
    write: bool


class Door(Protocol):
    """Sign-in and access (bot/runs/access.py and auth.py)."""

    async def viewer(self, request: Request) -> str | None:
        """The signed-in viewer's login, None when anonymous."""
        ...

    async def access(self, request: Request, viewer: str | None, repository: str) -> Access: ...

    def sign_in(self, request: Request) -> Response:
        """Where an anonymous visitor who may not read goes: GitHub's sign-in."""
        ...

    def csrf_token(self, request: Request) -> str: ...

    def csrf_ok(self, request: Request, form: Mapping[str, str]) -> bool: ...


@dataclass(frozen=True, slots=True)
class Site:
    """What the routes need; made when the server starts (neo serve: bot/runs/serving.py)."""

    queue: JobQueue
    door: Door
    # GitHub's web host, for the thread's link: https://github.com or a GHES host.
    web_url: str
    # Set when the server shuts down: live streams end instead of holding it up.
    closing: asyncio.Event
    # The watched jobs' shared readers.
    feeds: Feeds


def run_routes(site_of: Callable[[Request], Site]) -> list[BaseRoute]:
    """The pages' routes; `site_of` finds the site a request is served by (it opens
    with the server, after the routes are made)."""

    async def run_page(request: Request) -> Response:
        site = site_of(request)
        job, seen = await _readable(site, request)
        if isinstance(job, Response):
            return job
        queue = site.queue
        records = list(await queue.events_after(job.id, 0, limit=PAGE_RECORDS))
        h = header(job, records)
        access = await site.door.access(request, seen, job.request.thread.repository)
        notice = _NOTICES.get(request.query_params.get("done", ""))
        kind = "pull" if h.is_pull_request else "issues"
        return _html(
            render.page(
                "run.html",
                h=h,
                shown=transcript(records),
                now=time.time(),
                viewer=seen,
                static=STATIC_URL,
                thread_url=f"{site.web_url}/{h.repository}/{kind}/{h.number}",
                events_url=f"/runs/{job.id}/events",
                stop_url=f"/runs/{job.id}/stop",
                steer_url=f"/runs/{job.id}/steer",
                can_write=access.write and seen is not None,
                csrf=site.door.csrf_token(request) if access.write else "",
                steer_max=STEER_MAX,
                notice=notice,
            )
        )

    async def events(request: Request) -> Response:
        site = site_of(request)
        job, _ = await _readable(site, request)
        if isinstance(job, Response):
            return job
        after = resume_point(
            request.headers.get("last-event-id"), request.query_params.get("after")
        )
        body = stream(site.queue, site.feeds, site.queue, job.id, after, site.closing)
        return StreamingResponse(
            body,
            media_type="text/event-stream",
            # No buffering by a proxy in between (nginx reads X-Accel-Buffering).
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def stop(request: Request) -> Response:
        site = site_of(request)
        job, viewer, _ = await _writable(site, request)
        if isinstance(job, Response):
            return job
        stopped = await stop_run(site.queue, job.id, viewer)
        return _back(job.id, "stopped" if stopped else "ended")

    async def steer(request: Request) -> Response:
        site = site_of(request)
        job, viewer, form = await _writable(site, request)
        if isinstance(job, Response):
            return job
        text = form.get("text", "").strip()
        if not text:
            return _message(400, "Nothing to send", "The message was empty.", f"/runs/{job.id}")
        if len(text) > STEER_MAX:
            return _message(
                400,
                "Message too long",
                f"A steer message holds at most {STEER_MAX:,} characters.",
                f"/runs/{job.id}",
            )
        steered = await steer_run(site.queue, job.id, viewer, text)
        return _back(job.id, "ended" if steered is None else "steered")

    async def runs(request: Request) -> Response:
        site = site_of(request)
        viewer = await site.door.viewer(request)
        repo = request.query_params.get("repo", "").strip()
        state_name = request.query_params.get("state", "")
        state = JobState(state_name) if state_name in JobState._value2member_map_ else None
        jobs = await site.queue.list(state=state, repository=repo or None, limit=LIST_LIMIT)
        readable: dict[str, bool] = {}
        rows = []
        for job in jobs:
            if job.request.kind.lane != "run":
                continue
            name = job.request.thread.repository.lower()
            if name not in readable:
                access = await site.door.access(request, viewer, job.request.thread.repository)
                readable[name] = access.read
            if readable[name]:
                rows.append(job)
        return _html(
            render.page(
                "runs.html",
                rows=rows,
                repo=repo,
                state=state.value if state else "",
                states=[s.value for s in JobState],
                viewer=viewer,
                static=STATIC_URL,
            )
        )

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC_FILES:
            return Response("not found", status_code=404, media_type="text/plain")
        return FileResponse(
            STATIC / name,
            media_type=_STATIC_FILES[name],
            headers={"cache-control": "public, max-age=300", "x-content-type-options": "nosniff"},
        )

    return [
        Route("/runs", runs, methods=["GET"]),
        Route(STATIC_URL + "/{name}", static, methods=["GET"]),
        Route("/runs/{job:int}", run_page, methods=["GET"]),
        Route("/runs/{job:int}/events", events, methods=["GET"]),
        Route("/runs/{job:int}/stop", stop, methods=["POST"]),
        Route("/runs/{job:int}/steer", steer, methods=["POST"]),
    ]


_STATIC_FILES = {"run.js": "text/javascript", "run.css": "text/css"}


async def _readable(site: Site, request: Request) -> tuple[Job | Response, str | None]:
    """The job of the request's path if the viewer may read it, else the answer to give."""
    viewer = await site.door.viewer(request)
    job = await site.queue.get(request.path_params["job"])
    if job is None or job.request.kind.lane != "run":
        return _message(404, "No such run", "There is no run with this number."), viewer
    access = await site.door.access(request, viewer, job.request.thread.repository)
    if access.read:
        return job, viewer
    if viewer is None:
        return site.door.sign_in(request), viewer
    return _message(
        403, "Not yours to see", "Your GitHub account cannot read this repository."
    ), viewer


async def _writable(site: Site, request: Request) -> tuple[Job | Response, str, dict[str, str]]:
    """The job, viewer and form of an action, if the viewer may write and the form is theirs."""
    form = await _form(request)
    if form is None:
        return _message(413, "Too large", "The form was larger than a message can be."), "", {}
    job, viewer = await _readable(site, request)
    if isinstance(job, Response):
        return job, "", form
    access = await site.door.access(request, viewer, job.request.thread.repository)
    if viewer is None or not access.write:
        return (
            _message(
                403,
                "Not allowed",
                "Only people who can write to the repository may stop or steer its runs.",
            ),
            "",
            form,
        )
    if not site.door.csrf_ok(request, form):
        return (
            _message(
                403, "Refused", "This form did not come from this page: reload it and try again."
            ),
            "",
            form,
        )
    if job.state in FINAL_STATES:
        return _back(job.id, "ended"), viewer, form
    return job, viewer, form


async def _form(request: Request) -> dict[str, str] | None:
    """An urlencoded form's fields (the first value of each); None past FORM_MAX bytes."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_MAX:
            return None
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}


def _back(job_id: int, done: str) -> Response:
    return RedirectResponse(f"/runs/{job_id}?done={done}", status_code=303)


def _message(status: int, title: str, text: str, back: str | None = None) -> Response:
    page = render.page(
        "message.html", title=title, text=text, back=back, viewer=None, static=STATIC_URL
    )
    return _html(page, status)


def _html(text: str, status: int = 200) -> Response:
    return Response(text, status_code=status, media_type="text/html", headers=SECURITY_HEADERS)
