"""End to end: a signed @neo mention to its progress comment, the first model
request and, with --edit, the draft pull request and the report.

Starts `neo serve` as a subprocess with one in-process worker and the docker
sandbox, against the fakes of tests/fakes on loopback: the fake GitHub (REST),
a git smart-HTTP server holding a 5,000-file repository, and the fake
Messages API. Each run opens a new issue, pushes one new commit to the
repository (so the warm mirror has something to fetch, as a live repository
would), waits a random pause (mentions come at any point of the worker's
poll), sends a signed `issue_comment` mention and waits for the job to end;
the model's one reply ends the turn without a change, so the job is over
soon after its first model request. With `--edit` the model's first reply
writes a file and its second summarises, so the job commits, pushes the work
branch, opens the draft pull request and turns its comment into the report:
the whole path of a task job. One warm-up run goes first: it fills the
mirror cache in the data dir, so the measured runs clone from a warm mirror.

Prints, over the measured runs, median and p90 (nearest rank) of:

- webhook -> progress comment: from sending the signed POST until the fake
  GitHub has answered the comment's POST (target p50 <= 1 s);
- job start -> first model request: from the worker's `job_started` log line
  until the fake Messages API has the first request (target <= 3 s);
- with `--edit`, webhook -> draft pull request and webhook -> report: until
  the fake GitHub has answered the pull request's POST, and the last edit of
  the progress comment (the report; issue 27's target: p50 <= 3 s);
- where the time goes: the run cut into stages at events seen from outside,
  with what runs in each; `--events` adds every event, in order.

Where the times come from, all wall-clock on this one host:

- the bench: the POST sent, its 202 received;
- the queue (the SQLite file in the data dir, read-only): the job's
  `created_at` (enqueued) and `updated_at` (claimed: the heartbeat does not
  touch it), read when the first model request arrives, while the job runs;
- `neo serve`'s log, whose JSON lines carry `ts` (unix time): the worker's
  `job_started` and `spec_ready`, the runner's `checkout_done` (the working
  tree is on the work branch), `sandbox_ready` (container started, setup
  commands run) and `first_model_call` (the agent is about to send it);
- the fake GitHub and the git server: when each request was answered (they
  record requests but no time, so the bench notes the time as they record);
- the Docker engine's event stream: the sandbox container's create, start;
- the fake Messages API: a reply factory notes when the first request came.

Stages say what runs in them that cannot be seen from outside.

    uv run python -m bench.e2e [--runs 10] [--files 5000] [--image neo-sandbox:local]
        [--setup COMMAND ...] [--pause 1.0] [--edit] [--events]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import itertools
import json
import math
import os
import random
import re
import sqlite3
import statistics
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from docker import DockerClient

from bot.intake.server import WEBHOOK_PATH
from bot.jobs import FINAL_STATES, JobState, Thread
from runner.sandbox.docker import LABEL_JOB, LABEL_SANDBOX, docker_client
from tests.bot.serving import corpus, headers, neo_serve, serve_env
from tests.fakes import (
    FakeAnthropicAPI,
    FakeGitHub,
    FakeGitServer,
    GitHubRequest,
    GitRequest,
    Reply,
    add_commit,
    file_content,
    file_path,
    make_repo,
    text,
    tool_use,
)

REPO = "octo/hello"
INSTALLATION = 7
REQUESTER = "mona"
JOB_TIMEOUT = 180.0


# --- the fakes, with the time of each request -------------------------------------


class _TimedGitHub(FakeGitHub):
    """The fake GitHub, noting when it answered each request (after its handler ran).

    `_record` is the one place every request passes; GitHubRequest has no time.
    """

    def __init__(self) -> None:
        super().__init__(slug="neo")
        self._stamps: list[tuple[float, GitHubRequest]] = []
        self._stamps_lock = threading.Lock()

    def _record(self, request: GitHubRequest) -> None:
        at = time.time()
        super()._record(request)
        with self._stamps_lock:
            self._stamps.append((at, request))

    def take_stamps(self) -> list[tuple[float, GitHubRequest]]:
        with self._stamps_lock:
            taken, self._stamps = self._stamps, []
        return taken


class _TimedGit(FakeGitServer):
    """The git server, taking the installation token the fake GitHub issued last, and
    noting when it finished answering each request."""

    def __init__(self, root: Path, github: FakeGitHub) -> None:
        self._github = github
        self._stamps: list[tuple[float, GitRequest]] = []
        self._stamps_lock = threading.Lock()
        super().__init__(root)

    @property
    def token(self) -> str:
        tokens = self._github.tokens
        return tokens[-1].token if tokens else "no-token-yet"

    @token.setter
    def token(self, value: str) -> None:
        pass

    def record(self, request: GitRequest) -> None:
        at = time.time()
        super().record(request)
        with self._stamps_lock:
            self._stamps.append((at, request))

    def take_stamps(self) -> list[tuple[float, GitRequest]]:
        with self._stamps_lock:
            taken, self._stamps = self._stamps, []
        return taken


class _ContainerEvents:
    """The Docker engine's events of sandbox containers, with the engine's own times."""

    def __init__(self, client: DockerClient) -> None:
        self._client = client
        self._events: list[tuple[float, str, str]] = []  # (time, action, job id)
        self._lock = threading.Lock()
        self._stream: Any = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _ContainerEvents:
        self._stream = self._client.events(
            decode=True, filters={"type": "container", "label": f"{LABEL_SANDBOX}=1"}
        )
        self._thread = threading.Thread(target=self._read, name="docker-events", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stream.close()
        if self._thread is not None:
            self._thread.join(5)

    def _read(self) -> None:
        with contextlib.suppress(Exception):  # the stream ends when closed
            for event in self._stream:
                attributes = event.get("Actor", {}).get("Attributes", {})
                # "exec_start: bash -c ..." and the like: the action's first word.
                action = str(event.get("Action", "")).split(":")[0]
                with self._lock:
                    self._events.append(
                        (int(event["timeNano"]) / 1e9, action, attributes.get(LABEL_JOB, ""))
                    )

    def take(self, job: str) -> list[tuple[float, str]]:
        with self._lock:
            mine = [(at, action) for at, action, owner in self._events if owner == job]
            self._events = [e for e in self._events if e[2] != job]
        return mine


# --- the queue, read from outside -------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Row:
    id: int
    state: str
    created_at: float
    updated_at: float
    result: str | None


def _job_row(db: Path, thread_key: str) -> _Row | None:
    """The newest job of `thread_key` in the queue's SQLite file, read-only."""
    if not db.exists():
        return None
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as conn:
        row = conn.execute(
            "SELECT id, state, created_at, updated_at, result FROM jobs"
            " WHERE thread_key = ? ORDER BY id DESC LIMIT 1",
            (thread_key,),
        ).fetchone()
    return None if row is None else _Row(*row)


# --- one run ----------------------------------------------------------------------


@dataclass
class _Run:
    """What one run saw: events (wall-clock time, label) in order, and the headline times."""

    events: list[tuple[float, str]] = field(default_factory=list)

    def first(self, label: str) -> float:
        return next(at for at, name in self.events if name == label)

    def between(self, start: str, end: str) -> float:
        return self.first(end) - self.first(start)


_ROUTES = (
    ("POST", r"/app/installations/\d+/access_tokens", "installation token"),
    ("GET", r"/app", "the App (bot login)"),
    ("GET", r"/repos/[^/]+/[^/]+", "repository (default branch)"),
    ("GET", r"/repos/[^/]+/[^/]+/contents/.+", "config file"),
    ("GET", r"/repos/[^/]+/[^/]+/collaborators/[^/]+/permission", "permission"),
    ("POST", r"/repos/[^/]+/[^/]+/issues/comments/\d+/reactions", "reaction"),
    ("POST", r"/repos/[^/]+/[^/]+/issues/\d+/reactions", "reaction"),
    ("GET", r"/repos/[^/]+/[^/]+/issues/\d+/comments", "list comments"),
    ("POST", r"/repos/[^/]+/[^/]+/issues/\d+/comments", "progress comment"),
    ("PATCH", r"/repos/[^/]+/[^/]+/issues/comments/\d+", "comment edit"),
    ("GET", r"/repos/[^/]+/[^/]+/issues/\d+", "issue"),
    ("GET", r"/repos/[^/]+/[^/]+/pulls", "list pull requests"),
    ("POST", r"/repos/[^/]+/[^/]+/pulls", "pull request opened"),
)


def _github_label(request: GitHubRequest) -> str:
    for method, pattern, label in _ROUTES:
        if request.method == method and re.fullmatch(pattern, request.route):
            return f"github: {label}" + ("" if request.status < 300 else f" ({request.status})")
    return f"github: {request.method} {request.route} ({request.status})"


def _git_label(request: GitRequest) -> str:
    if request.method == "GET":
        return "git: refs advertised"
    # Protocol v2 sends ls-refs and fetch alike as a POST; the log cannot tell them apart.
    return "git: upload-pack" if request.service == "git-upload-pack" else "git: receive-pack"


# The log lines of `neo serve` a run is cut at: the worker's, and the runner's.
_LOGGED = (
    *("job_started", "spec_ready", "checkout_done", "sandbox_ready", "first_model_call"),
    *("sandbox_closed", "published"),
)


def _log_events(log: Path, job_id: int) -> list[tuple[float, str]]:
    """The job's timed log lines in `neo serve`'s log: (ts, "log: <event>")."""
    events = []
    for line in log.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event") in _LOGGED and entry.get("job") in (job_id, f"job-{job_id}"):
            events.append((float(entry["ts"]), f"log: {entry['event']}"))
    return events


def _numbered(events: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """Events in time order; a label seen again gets " #2", " #3", ..."""
    seen: Counter[str] = Counter()
    out = []
    for at, label in sorted(events):
        seen[label] += 1
        out.append((at, label if seen[label] == 1 else f"{label} #{seen[label]}"))
    return out


def _mention(number: int, comment: int) -> dict[str, Any]:
    """A real issue_comment.created payload, mentioning @neo on `number` of REPO."""
    payload = next(
        copy.deepcopy(p)
        for name, p in corpus()
        if name == "issue_comment" and p.get("action") == "created" and "installation" in p
    )
    owner, name = REPO.split("/")
    payload["repository"].update(full_name=REPO, name=name)
    payload["repository"]["owner"]["login"] = owner
    payload["installation"]["id"] = INSTALLATION
    payload["issue"].update(number=number, locked=False)
    payload["issue"].pop("pull_request", None)
    payload["comment"].update(id=comment, body="@neo fix the flaky date test")
    payload["comment"]["user"].update(login=REQUESTER, type="User")
    payload["comment"]["author_association"] = "COLLABORATOR"
    payload["sender"].update(login=REQUESTER, type="User")
    return payload


@dataclass
class _Rig:
    """What the runs share."""

    url: str
    data: Path
    github: _TimedGitHub
    git: _TimedGit
    anthropic: FakeAnthropicAPI
    containers: _ContainerEvents
    origin: Path
    client: httpx.Client
    log: Path


# With --edit: the model's first reply writes this file, its second ends the turn.
_EDITED = "src/date_fix.py"
_SUMMARY = "Fix the flaky date test at midnight\n\nThe test now pins the clock."


def _one_run(rig: _Rig, sequence: int, pause: float, *, edit: bool = False) -> _Run:
    github, git = rig.github, rig.git
    number = github.add_issue(
        REPO, "The date test is flaky", "It fails at midnight.", user=REQUESTER
    )
    comment = github.add_comment(REPO, number, "@neo fix the flaky date test", user=REQUESTER)
    add_commit(rig.origin, {file_path(sequence): file_content(sequence, version=sequence + 1)})
    thread_key = Thread(REPO, number).key
    github.take_stamps()
    git.take_stamps()
    seen: dict[str, Any] = {}

    def first_reply(body: Mapping[str, Any]) -> Reply:
        seen["first model request"] = time.time()
        # The job is waiting for this answer, so it is running: its claim time is there.
        seen["row"] = _job_row(rig.data / "neo.db", thread_key)
        return Reply([text("The test looks fine to me; nothing to change.")])

    def first_edit(body: Mapping[str, Any]) -> Reply:
        first_reply(body)
        write = {"path": _EDITED, "content": f"FIXED = {sequence}\n"}
        return Reply([tool_use(f"call-{sequence}", "write_file", write)], "tool_use")

    def last_reply(body: Mapping[str, Any]) -> Reply:
        seen["last model request"] = time.time()
        return Reply([text(_SUMMARY)])

    if edit:
        rig.anthropic.script(first_edit, last_reply)
    else:
        rig.anthropic.script(first_reply)
    body = json.dumps(_mention(number, comment)).encode()
    time.sleep(pause)
    posted = time.time()
    answer = rig.client.post(
        f"{rig.url}{WEBHOOK_PATH}", content=body, headers=headers("issue_comment", body)
    )
    acked = time.time()
    if answer.status_code != 202 or answer.json().get("decision") != "queued":
        raise SystemExit(f"bench: the mention was not queued: {answer.status_code} {answer.text}")
    row = _wait_finished(rig.data / "neo.db", thread_key)
    if row.state == JobState.FAILED:
        raise SystemExit(f"bench: job {row.id} failed: {row.result}")
    if "row" not in seen or seen["row"] is None:
        raise SystemExit(f"bench: job {row.id} ended without asking the model: {row.result}")
    running: _Row = seen["row"]
    events: list[tuple[float, str]] = [
        (posted, "webhook sent"),
        (acked, "ack (202) received"),
        (running.created_at, "queue: enqueued"),
        (running.updated_at, "queue: claimed"),
        (seen["first model request"], "model: first request"),
    ]
    if "last model request" in seen:
        events.append((seen["last model request"], "model: last request"))
    events += _log_events(rig.log, row.id)
    events += [(at, _github_label(request)) for at, request in github.take_stamps()]
    events += [(at, _git_label(request)) for at, request in git.take_stamps()]
    events += [
        (at, f"docker: container {action}") for at, action in rig.containers.take(f"job-{row.id}")
    ]
    edits = [at for at, label in events if label == "github: comment edit"]
    if edits:
        # The last edit of the progress comment is the report.
        events.append((max(edits), "github: report"))
    run = _Run(_numbered(events))
    if not any(label == "github: progress comment" for _, label in run.events):
        raise SystemExit(f"bench: job {row.id} posted no progress comment: {row.result}")
    if edit and not any(label == "github: pull request opened" for _, label in run.events):
        raise SystemExit(f"bench: job {row.id} opened no pull request: {row.result}")
    return run


def _wait_finished(db: Path, thread_key: str) -> _Row:
    deadline = time.monotonic() + JOB_TIMEOUT
    while time.monotonic() < deadline:
        row = _job_row(db, thread_key)
        if row is not None and row.state in FINAL_STATES:
            return row
        time.sleep(0.05)
    raise SystemExit(f"bench: the job of {thread_key} did not end within {JOB_TIMEOUT:.0f} s")


# --- figures ----------------------------------------------------------------------


def _p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[math.ceil(0.9 * len(ordered)) - 1]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def _headline(name: str, samples: list[float], target: str) -> str:
    median, p90 = statistics.median(samples), _p90(samples)
    return f"  {name:<38} median {_ms(median)}  p90 {_ms(p90)}   {target}"


# The stages of a run, each ending at the first event with its label (the last
# one for "git: "), and what runs in it that cannot be seen from outside.
_STAGES: tuple[tuple[str, str], ...] = (
    ("ack (202) received", "verify, triage, commit to the queue, answer"),
    ("queue: claimed", "the intake wakes the worker, which claims the job"),
    ("log: job_started", "the job's task starts"),
    ("github: progress comment", "token; repository, .github/neo.yml, permission together"),
    ("log: spec_ready", "the thread for the prompt: issue, comments; job token; spec"),
    ("git: ", "provider, mirror lock, one fetch into the mirror, missing blobs"),
    ("log: checkout_done", "spare tree moved in (or a local clone), checkout, work branch"),
    ("docker: container start", "AGENTS.md, setup files, tree handed over, container create"),
    ("log: sandbox_ready", "channel bootstrap, setup commands"),
    ("log: first_model_call", "session, system prompt, tools"),
    ("model: first request", "the SDK's request over loopback"),
)
# Stages from the job's start on.
_JOB_STAGES = _STAGES[3:]
# With --edit, from the first model request on.
_EDIT_STAGES: tuple[tuple[str, str], ...] = (
    ("model: last request", "the write_file call in the sandbox, the second request"),
    ("log: sandbox_closed", "the turn ends; container removed, the egress proxy stopped"),
    ("log: published", "stage, commit, diffstat from the fork point, the push"),
    ("github: pull request opened", "the session closed; the open pull request looked up"),
    ("github: report", "the report rendered and posted"),
)


def _stage_end(run: _Run, label: str) -> float | None:
    end = run.first("model: first request")
    if label.endswith(": "):  # a family: its last event before the model's request
        times = [at for at, name in run.events if name.startswith(label) and at <= end]
        return max(times) if times else None
    return next((at for at, name in run.events if name == label), None)


def _stages(runs: list[_Run], *, edit: bool = False) -> list[str]:
    """One line per stage: median and p90 over the runs, and what it holds."""
    stages = _STAGES + (_EDIT_STAGES if edit else ())
    lines = [f"  {'stage, ending at':<36} {'median':>11}  {'p90':>11}   what runs in it"]
    durations: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        before = run.first("webhook sent")
        for label, _ in stages:
            end = _stage_end(run, label)
            # Not seen, or not in this order: its time goes to the next stage.
            if end is not None and end >= before:
                durations[label].append(end - before)
                before = end
    for label, what in stages:
        if label == _JOB_STAGES[0][0]:
            lines.append(f"  {'-- job start (job_started) --':<36}")
        samples = durations[label]
        name = "git: last request" if label == "git: " else label
        if not samples:
            lines.append(f"  {name:<36} {'not seen':>11}")
            continue
        seen = "" if len(samples) == len(runs) else f" (in {len(samples)} of {len(runs)} runs)"
        lines.append(
            f"  {name:<36} {_ms(statistics.median(samples))}  {_ms(_p90(samples))}   {what}{seen}"
        )
    return lines


def _events(runs: list[_Run], *, edit: bool = False) -> list[str]:
    """One line per event until the first model request (with --edit, until the
    report): time since the run's previous event, and since the webhook was sent."""
    deltas: dict[str, list[float]] = defaultdict(list)
    offsets: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        start = run.first("webhook sent")
        end = run.first("github: report" if edit else "model: first request")
        shown = [(at, label) for at, label in run.events if at <= end]
        for (before, _), (at, label) in itertools.pairwise(shown):
            deltas[label].append(at - before)
            offsets[label].append(at - start)
    order = sorted(offsets, key=lambda label: statistics.median(offsets[label]))
    lines = [f"  {'event':<36} {'since previous':>14}  {'p90':>11}  {'since webhook':>14}  runs"]
    for label in order:
        lines.append(
            f"  {label:<36}    {_ms(statistics.median(deltas[label]))}"
            f"  {_ms(_p90(deltas[label]))}     {_ms(statistics.median(offsets[label]))}"
            f"  {len(deltas[label]):>4}"
        )
    return lines


def report(args: argparse.Namespace, warmup: _Run, runs: list[_Run], load: str) -> None:
    comment = [run.between("webhook sent", "github: progress comment") for run in runs]
    model = [run.between("log: job_started", "model: first request") for run in runs]
    ack = [run.between("webhook sent", "ack (202) received") for run in runs]
    print(
        f"\nneo serve, 1 worker, docker sandbox {args.image}, {args.files:,}-file repository,"
        f" {len(runs)} runs after 1 warm-up; {os.cpu_count()} cores, load average {load}"
    )
    print(_headline("webhook -> ack (202)", ack, ""))
    print(_headline("webhook -> progress comment", comment, "(target p50 <= 1000 ms)"))
    print(_headline("job start -> first model request", model, "(target <= 3000 ms)"))
    if args.edit:
        pull = [run.between("webhook sent", "github: pull request opened") for run in runs]
        reported = [run.between("webhook sent", "github: report") for run in runs]
        print(_headline("webhook -> draft pull request", pull, ""))
        print(_headline("webhook -> report", reported, "(target p50 <= 3000 ms)"))
    print(
        "  warm-up run (cold mirror):             webhook -> comment"
        f" {_ms(warmup.between('webhook sent', 'github: progress comment')).strip()},"
        " job start -> first model request"
        f" {_ms(warmup.between('log: job_started', 'model: first request')).strip()}"
    )
    print("\nwhere the time goes (each stage from the end of the one before)")
    for line in _stages(runs, edit=args.edit):
        print(line)
    if args.events:
        print("\nevery event seen, in order (requests: when answered; log: its ts)")
        for line in _events(runs, edit=args.edit):
            print(line)


def _load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


# --- the run ----------------------------------------------------------------------


@contextlib.contextmanager
def _rig(args: argparse.Namespace, scratch: Path) -> Iterator[_Rig]:
    origin = scratch / "served" / f"{REPO}.git"
    make_repo(origin, files=args.files, commits=3)
    with contextlib.ExitStack() as stack:
        client = docker_client()
        stack.callback(client.close)
        github = _TimedGitHub()
        stack.enter_context(github)
        github.install(INSTALLATION, REPO.split("/")[0], [REPO.split("/")[1]])
        github.set_permission(REPO, REQUESTER, "write")
        if args.setup:
            github.put_file(REPO, ".github/neo.yml", json.dumps({"setup": args.setup}) + "\n")
        git = _TimedGit(scratch / "served", github)
        stack.enter_context(git)
        anthropic = stack.enter_context(FakeAnthropicAPI())
        containers = stack.enter_context(_ContainerEvents(client))
        env = {
            **serve_env(github, scratch / "data"),
            **anthropic.env,
            "NEO_WORKERS": "1",
            "NEO_SANDBOX": "docker",
            "NEO_SANDBOX_IMAGE": args.image,
            "NEO_GITHUB_GIT_URL": git.base_url,
        }
        server = stack.enter_context(neo_serve(env, scratch / "serve.log"))
        http = stack.enter_context(httpx.Client(timeout=30))
        yield _Rig(
            server.url,
            scratch / "data",
            github,
            git,
            anthropic,
            containers,
            origin,
            http,
            scratch / "serve.log",
        )


def run(args: argparse.Namespace) -> None:
    pauses = random.Random(args.seed)
    with (
        # A spare tree still being written as neo serve stops can outlive
        # the first removal attempt; the figures matter more than the leftovers.
        tempfile.TemporaryDirectory(prefix="neo-bench-e2e-", ignore_cleanup_errors=True) as temp,
        _rig(args, Path(temp)) as rig,
    ):
        load = _load()
        warmup = _one_run(rig, 0, pauses.uniform(0, args.pause), edit=args.edit)
        runs = []
        for sequence in range(1, args.runs + 1):
            runs.append(_one_run(rig, sequence, pauses.uniform(0, args.pause), edit=args.edit))
            comment = runs[-1].between("webhook sent", "github: progress comment")
            model = runs[-1].between("log: job_started", "model: first request")
            line = (
                f"run {sequence}: webhook -> comment {_ms(comment)},"
                f" job start -> first model request {_ms(model)}"
            )
            if args.edit:
                reported = runs[-1].between("webhook sent", "github: report")
                line += f", webhook -> report {_ms(reported)}"
            print(line, flush=True)
    report(args, warmup, runs, f"{load} before, {_load()} after")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="measured runs, after one warm-up")
    parser.add_argument("--files", type=int, default=5000, help="files in the repository")
    parser.add_argument("--image", default="neo-sandbox:local", help="the sandbox image")
    parser.add_argument(
        "--setup",
        action="append",
        default=[],
        metavar="COMMAND",
        help="a setup command in the repository's .github/neo.yml (repeatable)",
    )
    parser.add_argument(
        "--pause",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="before each mention, a random pause of up to this long (default: 1.0)",
    )
    parser.add_argument("--seed", type=int, default=1, help="of the random pauses")
    parser.add_argument(
        "--edit",
        action="store_true",
        help="the model writes a file: the job pushes, opens a draft pull request, reports",
    )
    parser.add_argument(
        "--events", action="store_true", help="also print every event seen, in order"
    )
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    run(args)


if __name__ == "__main__":
    main()
