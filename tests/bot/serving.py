"""A real `neo serve` process for tests, and signed deliveries to post to it."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from tests.fakes import FakeGitHub, FakeGitServer
from tests.fakes.git_server import basic_auth

NEO = Path(sys.executable).with_name("neo")
SECRET = "webhook-secret-for-tests"
CORPUS = Path(__file__).parents[1] / "fixtures" / "octokit-webhooks-examples.json"


@functools.cache
def corpus() -> tuple[tuple[str, dict[str, Any]], ...]:
    """Every (event, payload) of the vendored octokit examples.

    Read once per process (4 MB of JSON: a tenth of a second of CPU per read,
    and helpers look payloads up per test); the payloads are shared, so a
    caller copies one before changing it.
    """
    events = json.loads(CORPUS.read_text())
    return tuple((event["name"], payload) for event in events for payload in event["examples"])


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def headers(event: str, body: bytes, delivery: str | None = None) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "x-github-event": event,
        "x-github-delivery": delivery or str(uuid.uuid4()),
        "x-hub-signature-256": sign(body),
    }


def serve_env(github: FakeGitHub, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEO_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        {
            "NEO_GITHUB_APP_ID": str(github.app_id),
            "NEO_GITHUB_PRIVATE_KEY": github.private_key_pem,
            "NEO_WEBHOOK_SECRET": SECRET,
            "NEO_GITHUB_API_URL": github.base_url,
            "NEO_DATA_DIR": str(data_dir),
            "NEO_WORKERS": "0",
            "NEO_SANDBOX": "local",
            "NEO_ALLOW_LOCAL_SANDBOX": "1",
        }
    )
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]
    env: Mapping[str, str]
    log: Path

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)


@contextmanager
def neo_serve(env: Mapping[str, str], log: Path, port: int | None = None) -> Iterator[Server]:
    """`neo serve` on a free port, up and answering /healthz; stopped afterwards."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("a") as out:
        process = subprocess.Popen(
            [str(NEO), "serve", "--port", str(port)],
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    server = Server(url, process, env, log)
    try:
        # One client for every probe: each new one loads the CA bundle (tens of
        # milliseconds of CPU), ten times a second while the server starts.
        with httpx.Client(timeout=1) as probe:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    raise AssertionError(
                        f"neo serve exited {process.returncode}: {log.read_text()}"
                    )
                try:
                    if probe.get(f"{url}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError(f"neo serve did not come up: {log.read_text()}")
                time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)


@contextmanager
def neo_serve_alone(root: Path) -> Iterator[Server]:
    """`neo serve` with its data and log under `root`, on a fake GitHub of its own whose
    App is "neo" (its bot user neo[bot]): a module's server for deliveries that
    need nothing else of GitHub."""
    with (
        FakeGitHub(slug="neo") as github,
        neo_serve(serve_env(github, root / "data"), root / "serve.log") as running,
    ):
        yield running


class AppGitServer(FakeGitServer):
    """The fake git server, taking the installation tokens the fake GitHub issued.

    Any unexpired one whose repositories include the one asked for (all of
    the installation's, when it names none); a push needs contents: write.
    """

    def __init__(self, root: Path, github: FakeGitHub) -> None:
        self._github = github
        super().__init__(root)

    def accepts(self, authorization: str | None, path: str, *, push: bool) -> bool:
        now = datetime.now(UTC)
        for issued in self._github.tokens:
            if authorization != basic_auth(issued.token) or issued.expires_at <= now:
                continue
            if issued.repositories and not any(
                path.lower().startswith(f"/{name.lower()}.git/") for name in issued.repositories
            ):
                continue
            return not push or issued.permissions.get("contents") == "write"
        return False

    def may_push_workflows(self, authorization: str | None, path: str) -> bool:
        """GitHub's rule: only a token with `workflows: write` touches workflow files."""
        return any(
            authorization == basic_auth(issued.token)
            and issued.permissions.get("workflows") == "write"
            for issued in self._github.tokens
        )


@dataclass
class WorkerProcess:
    process: subprocess.Popen[str]
    log: Path
    # Where this process's output starts in `log`.
    offset: int = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_started(self, timeout: float = 60) -> None:
        """Return once its workers have started (its log says so)."""
        deadline = time.monotonic() + timeout
        while b'"workers_started"' not in self.log.read_bytes()[self.offset :]:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"neo worker exited {self.process.returncode}: {self.log.read_text()}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"neo worker did not start: {self.log.read_text()}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: no handler runs, nothing is cleaned up, as in a crash."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)


@contextmanager
def neo_worker(
    env: Mapping[str, str], log: Path, *args: str, wait: bool = True
) -> Iterator[WorkerProcess]:
    """`neo worker ARGS`, started (unless not `wait`: call `wait_started`); stopped afterwards."""
    log.touch()
    offset = log.stat().st_size
    with log.open("a") as out:
        process = subprocess.Popen(
            [str(NEO), "worker", *args],
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    worker = WorkerProcess(process, log, offset)
    try:
        if wait:
            worker.wait_started()
        yield worker
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)


def make_it_act(event: str, p: dict[str, Any]) -> dict[str, Any]:
    """Patch a real payload the least that makes Neo act on it."""
    action = p["action"]
    if event in ("issue_comment", "pull_request_review_comment"):
        p["comment"]["body"] = "@neo " + (p["comment"]["body"] or "")
    elif event == "pull_request_review":
        p["review"]["body"] = "@neo " + (p["review"]["body"] or "")
    elif event == "pull_request" and action == "labeled":
        p["label"]["name"] = "neo-review"
    elif event == "pull_request" and action == "review_requested":
        p["requested_reviewer"] = {**p.get("requested_reviewer", {}), "login": "neo[bot]"}
    elif action == "opened":
        p["issue"]["body"] = "@neo " + (p["issue"]["body"] or "")
    elif action == "edited":
        p["changes"] = {"body": {"from": p["issue"]["body"]}}
        p["issue"]["body"] = (p["issue"]["body"] or "") + "\n\n@neo take it"
    elif action == "labeled":
        p["label"]["name"] = "neo"
    elif action == "assigned":
        p["assignee"]["login"] = "neo[bot]"
    elif event in CI_EVENTS:
        make_it_red(event, p)
        # Another commit than the raw corpus's, which has one red check of its own.
        run = ci_object(event, p)
        run["head_sha"] = hashlib.sha1(f"acting:{run['head_sha']}".encode()).hexdigest()
    return p


# The CI completions that ask for a repair when they fail on a pull request's branch.
CI_EVENTS = ("check_run", "check_suite", "workflow_run")


def ci_object(event: str, p: dict[str, Any]) -> dict[str, Any]:
    """The check run, check suite or workflow run of a CI completion."""
    found: dict[str, Any] = p[event]
    return found


def ci_head_branch(event: str, p: dict[str, Any]) -> str:
    run = ci_object(event, p)
    branch: str = run["check_suite"]["head_branch"] if event == "check_run" else run["head_branch"]
    return branch


def make_it_red(event: str, p: dict[str, Any], conclusion: str = "failure") -> dict[str, Any]:
    """A CI completion that failed on a pull request of the same repository and branch."""
    run = ci_object(event, p)
    run["conclusion"] = conclusion
    branch = ci_head_branch(event, p)
    repo = p["repository"]
    if not run["pull_requests"]:
        run["pull_requests"] = [
            {
                "url": f"{repo['url']}/pulls/2",
                "id": 279147437,
                "number": 2,
                "head": {"ref": branch, "sha": run["head_sha"], "repo": {}},
                "base": {"ref": "main", "sha": "0" * 40, "repo": {}},
            }
        ]
    for pull in run["pull_requests"]:
        pull["head"]["ref"] = branch
        pull["head"]["repo"] = {"id": repo["id"], "url": repo["url"], "name": repo["name"]}
    return p
