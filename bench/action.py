"""The GitHub Action: from the `neo action` step starting to its progress comment.

Each run does what a workflow run does on a fresh GitHub-hosted runner, on
this host, against the fakes of tests/fakes on loopback (the fake GitHub as
the workflow's API, whose installation token is the GITHUB_TOKEN; a git
smart-HTTP server; the fake Messages API):

1. the action's install step, `uv sync --locked --no-dev` into a new
   environment in a fresh RUNNER_TEMP, offline, with uv's cache warm (on
   GitHub the cache is first restored from the Actions cache, and setup-uv
   fetches uv itself: neither can be measured here);
2. a new issue and an `@neo` comment, written as the `issue_comment` event
   file (a real octokit payload, adjusted), then the `neo` of that new
   environment started as `neo action` with the variables the runner and
   action.yml set. The model's one reply ends the job with no change.

Every run has a new environment, as every workflow run on GitHub has, so
Python compiles Neo's imports afresh each time unless the install step
compiled them (`--compile-bytecode`; both are measured). The same
environment used again (`--reuse`, a self-hosted runner keeping it) shows
the warm figure.

Prints the median and p90 (nearest rank) of:

- install step (uv sync, warm cache);
- step start -> first GitHub request: interpreter, imports, reading the event;
- step start -> progress comment: until the fake GitHub has answered the
  comment's POST (target <= 10 s);
- step start -> step end: the whole job (one model call, no change).

    uv run python -m bench.action [--runs 5] [--files 500] [--reuse]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.action.inputs import INPUTS, input_variable
from bot.github.app import GitHubApp
from tests.bot.serving import corpus
from tests.fakes import (
    FakeAnthropicAPI,
    FakeGitHub,
    FakeGitServer,
    GitHubRequest,
    Reply,
    make_repo,
    text,
)
from tests.fakes.github_api import error_json

ROOT = Path(__file__).resolve().parents[1]
REPO = "octo/hello"
INSTALLATION = 7
REQUESTER = "mona"
KEY = "sk-ant-bench"
STEP_TIMEOUT = 300.0
_COMMENT = re.compile(r"/repos/[^/]+/[^/]+/issues/\d+/comments")


class _TimedGitHub(FakeGitHub):
    """The fake GitHub noting when it answered each request (GitHubRequest has no time)."""

    def __init__(self) -> None:
        super().__init__(slug="github-actions")
        self.stamps: list[tuple[float, GitHubRequest]] = []
        self._stamps_lock = threading.Lock()

    def _record(self, request: GitHubRequest) -> None:
        at = time.time()
        super()._record(request)
        with self._stamps_lock:
            self.stamps.append((at, request))

    def take(self) -> list[tuple[float, GitHubRequest]]:
        with self._stamps_lock:
            taken, self.stamps = self.stamps, []
        return taken


@dataclass
class _Rig:
    github: _TimedGitHub
    git: FakeGitServer
    anthropic: FakeAnthropicAPI
    token: str
    work: Path


@dataclass(frozen=True)
class _Run:
    install: float
    first_request: float
    comment: float
    end: float


@contextmanager
def _rig(files: int) -> Iterator[_Rig]:
    with tempfile.TemporaryDirectory(prefix="neo-bench-action-") as tmp:
        work = Path(tmp)
        make_repo(work / "served" / "octo" / "hello.git", files=files)
        github = _TimedGitHub()
        with github, FakeAnthropicAPI(api_key=KEY) as anthropic:
            github.install(INSTALLATION, "octo", ["hello"])
            github.set_permission(REPO, REQUESTER, "write")
            github.add_route(
                "GET",
                "/user",
                lambda call: (403, error_json(403, "Resource not accessible by integration")),
            )
            token = asyncio.run(_mint(github))
            with FakeGitServer(work / "served", token=token) as git:
                yield _Rig(github, git, anthropic, token, work)


async def _mint(github: FakeGitHub) -> str:
    async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as app:
        return (await app.installation_token(INSTALLATION, REPO)).token


def _payload(number: int, comment: int) -> dict[str, Any]:
    payload = next(
        copy.deepcopy(p)
        for name, p in corpus()
        if name == "issue_comment" and p.get("action") == "created"
    )
    owner, name = REPO.split("/")
    payload["repository"].update(full_name=REPO, name=name)
    payload["repository"]["owner"]["login"] = owner
    payload["issue"].update(number=number, locked=False)
    payload["issue"].pop("pull_request", None)
    payload["comment"].update(id=comment, body="@neo say hello", author_association="MEMBER")
    payload["comment"]["user"].update(login=REQUESTER, type="User")
    payload["sender"].update(login=REQUESTER, type="User")
    return payload


def _install(venv: Path, compile_bytecode: bool) -> float:
    argv = ["uv", "sync", "--locked", "--no-dev", "--offline", "--no-progress"]
    argv += ["--project", str(ROOT)]
    if compile_bytecode:
        argv.append("--compile-bytecode")
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(venv)}
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bench: uv sync failed (is uv's cache warm?): {done.stderr[-500:]}")
    return elapsed


def _step_env(rig: _Rig, home: Path, sequence: int, event: Path) -> dict[str, str]:
    # As on a runner: no bytecode switch, no Neo or SDK settings from this shell.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NEO_", "ANTHROPIC_", "GITHUB_", "INPUT_", "VIRTUAL_ENV"))
        and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": "issue_comment",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_RUN_ID": str(1_000_000 + sequence),
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_ACTOR": REQUESTER,
            "GITHUB_API_URL": rig.github.base_url,
            "GITHUB_SERVER_URL": rig.git.base_url,
            "GITHUB_WORKFLOW_REF": f"{REPO}/.github/workflows/neo.yml@refs/heads/main",
            "GITHUB_JOB": "neo",
            "GITHUB_OUTPUT": str(home / "output"),
            "GITHUB_STEP_SUMMARY": str(home / "summary.md"),
            "RUNNER_TEMP": str(home / "temp"),
            "ANTHROPIC_BASE_URL": rig.anthropic.base_url,
        }
    )
    env.update({input_variable(name): "" for name in INPUTS})
    env.update(
        {
            input_variable("trigger_phrase"): "@neo",
            input_variable("label_trigger"): "neo",
            input_variable("sandbox"): "local",
            input_variable("config_path"): ".github/neo.yml",
            input_variable("github_token"): rig.token,
            input_variable("anthropic_api_key"): KEY,
        }
    )
    return env


def _one_run(rig: _Rig, sequence: int, venv: Path, install: float) -> _Run:
    home = rig.work / f"run-{sequence}"
    (home / "temp").mkdir(parents=True)
    number = rig.github.add_issue(REPO, "Say hello", "Please.", user=REQUESTER)
    comment = rig.github.add_comment(REPO, number, "@neo say hello", user=REQUESTER)
    event = home / "event.json"
    event.write_text(json.dumps(_payload(number, comment)))
    rig.anthropic.script(Reply([text("Hello! Nothing in the repository needs to change.")]))
    env = _step_env(rig, home, sequence, event)
    rig.github.take()
    started = time.time()
    done = subprocess.run(
        [str(venv / "bin" / "neo"), "action"],
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )
    ended = time.time()
    if done.returncode != 0:
        raise SystemExit(f"bench: neo action exited {done.returncode}: {done.stderr.strip()}")
    stamps = rig.github.take()
    posts = [
        at
        for at, r in stamps
        if r.method == "POST" and _COMMENT.fullmatch(r.route) and r.status == 201
    ]
    if not stamps or not posts:
        raise SystemExit(f"bench: no progress comment was posted: {done.stdout.strip()}")
    return _Run(install, stamps[0][0] - started, posts[0] - started, ended - started)


def _p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[math.ceil(0.9 * len(ordered)) - 1]


def _line(name: str, samples: list[float], target: str = "") -> str:
    median, p90 = statistics.median(samples), _p90(samples)
    return f"  {name:<40} median {median * 1000:8.0f} ms  p90 {p90 * 1000:8.0f} ms  {target}"


def _print(title: str, runs: list[_Run], with_install: bool) -> None:
    print(f"\n{title} ({len(runs)} runs)")
    if with_install:
        print(_line("install step (uv sync, warm cache)", [r.install for r in runs]))
    print(_line("step start -> first GitHub request", [r.first_request for r in runs]))
    print(
        _line("step start -> progress comment", [r.comment for r in runs], "(target <= 10000 ms)")
    )
    print(_line("step start -> step end", [r.end for r in runs]))
    if with_install:
        total = [r.install + r.comment for r in runs]
        print(_line("install + step start -> progress comment", total))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--reuse", action="store_true", help="also time a reused environment")
    args = parser.parse_args()
    with _rig(args.files) as rig:
        sequence = 0
        for compile_bytecode in (False, True):
            runs = []
            for _ in range(args.runs):
                sequence += 1
                venv = rig.work / f"venv-{sequence}"
                install = _install(venv, compile_bytecode)
                runs.append(_one_run(rig, sequence, venv, install))
                if not args.reuse:
                    shutil.rmtree(venv)
            how = "compiled at install (--compile-bytecode)" if compile_bytecode else "as installed"
            _print(f"fresh environment each run, bytecode {how}", runs, with_install=True)
            if args.reuse:
                again = []
                for _ in range(args.runs):
                    sequence += 1
                    again.append(_one_run(rig, sequence, venv, 0.0))
                _print("the last environment used again (bytecode cached)", again, False)
                shutil.rmtree(venv)
    print(
        f"\n{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; {args.files:,}-file"
        " repository; the model answers at once. Not measured: setup-uv fetching uv and"
        " restoring uv's cache from the Actions cache, and the runner starting the job."
    )


if __name__ == "__main__":
    main()
