"""CI repair: a red check's webhook to the first model request, and tail-capping big logs.

(a) `neo serve` as a subprocess (one in-process worker; the Docker sandbox unless
    `--sandbox local`) against the fakes of tests/fakes on loopback: the fake
    GitHub, a git smart-HTTP server with a `--files`-file repository and the
    fake Messages API. Each run makes a Neo branch with one commit of Neo's and
    its pull request, a failed check run on its head (output, an annotation
    and a 1 MB Actions log behind a redirect), then sends a signed
    `check_run.completed` webhook and waits for the job to end; the model's one
    reply changes nothing. One warm-up run fills the mirror cache first, so the
    measured runs clone from a warm mirror. Prints p50 and p95 (nearest rank)
    of webhook sent -> first model request (target p50 <= 3 s).

(b) A 50 MB job log, plain and as a ZIP, served by `python -m http.server` in
    another process (as GitHub's pre-signed log URLs are another host), is
    downloaded and tail-capped by `bot.github.downloads`. Prints MB/s, the
    tracemalloc peak and the growth of the process's peak RSS (target < 64 MB).

    uv run python -m bench.ci_repair [--runs 10] [--files 2000] [--sandbox docker|local]
        [--log-mb 50] [--skip-serve] [--skip-logs]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import math
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from bot.github.downloads import download_tail, download_zip_tails
from bot.intake.server import WEBHOOK_PATH
from bot.jobs import FINAL_STATES
from tests.bot.serving import corpus, free_port, headers, make_it_red, neo_serve, serve_env
from tests.fakes import FakeAnthropicAPI, FakeGitHub, FakeGitServer, Reply, make_repo, text
from tests.fakes.git_server import add_commit

__all__ = ["main"]

REPO = "octo/hello"
INSTALLATION = 7
JOB_TIMEOUT = 180.0


class _Git(FakeGitServer):
    """The git server taking the installation token the fake GitHub issued last."""

    def __init__(self, root: Path, github: FakeGitHub) -> None:
        self._github = github
        super().__init__(root)

    @property
    def token(self) -> str:
        tokens = self._github.tokens
        return tokens[-1].token if tokens else "no-token-yet"

    @token.setter
    def token(self, value: str) -> None:
        pass


def _git(origin: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(origin), *args], capture_output=True, check=True, text=True
    )
    return done.stdout.strip()


def _log(lines: int, seed: int) -> bytes:
    rng = random.Random(seed)
    body = b"".join(
        b"2026-01-01T00:00:00.0000000Z tests/test_%05d.py::test_case PASSED [%3d%%]\n"
        % (rng.randrange(100_000), n * 100 // lines)
        for n in range(lines)
    )
    return body + b"2026-01-01T00:00:01.0000000Z FAILED tests/test_dates.py::test_midnight\n"


def _webhook(pull: int, branch: str, sha: str, check: int) -> dict[str, Any]:
    """A real check_run.completed payload, red on `pull` of REPO."""
    payload = next(
        copy.deepcopy(p)
        for name, p in corpus()
        if name == "check_run" and p.get("action") == "completed"
    )
    owner, name = REPO.split("/")
    payload["repository"].update(full_name=REPO, name=name)
    payload["repository"]["owner"]["login"] = owner
    payload["installation"] = {"id": INSTALLATION, "node_id": "I_1"}
    run = payload["check_run"]
    run.update(id=check, name="test", head_sha=sha)
    run["check_suite"]["head_branch"] = branch
    make_it_red("check_run", payload)
    run["pull_requests"][0]["number"] = pull
    payload["sender"].update(login="github-actions[bot]", type="Bot")
    return payload


def _job(db: Path, dedupe: str) -> tuple[int, str, str | None] | None:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        row = conn.execute(
            "SELECT id, state, result FROM jobs WHERE dedupe_key = ?", (dedupe,)
        ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]), row[2])


def _one_run(
    github: FakeGitHub,
    anthropic: FakeAnthropicAPI,
    origin: Path,
    url: str,
    data: Path,
    client: httpx.Client,
    n: int,
) -> float:
    issue = github.add_issue(REPO, f"Fix the date test {n}", "It fails at midnight.", user="mona")
    branch = f"neo/issue-{issue}"
    _git(origin, "branch", branch, "main")
    sha = add_commit(origin, {f"work/{n}.txt": b"Neo's work\n"}, message="Neo: work", branch=branch)
    bot = github.bot_login
    # The progress comment of the work that made the pull request, which the repair edits.
    github.add_comment(REPO, issue, f"<!-- neo:job=w{n} -->\n**Done**", user=bot)
    pull = github.add_pull(REPO, f"Fix the date test {n}", head=branch, user=bot)
    github.set_pull_head(REPO, pull, sha)
    github.add_commit(REPO, sha, "Neo: work (#1)", author=bot)
    check = github.add_check_run(
        REPO,
        sha,
        "test",
        "failure",
        output={"title": "1 failed", "summary": "tests/test_dates.py", "text": ""},
        annotations=[{"path": "tests/test_dates.py", "start_line": 3, "message": "boom"}],
        log=_log(12_000, n),
    )
    seen: dict[str, float] = {}

    def first_reply(body: Mapping[str, Any]) -> Reply:
        seen["model"] = time.time()
        return Reply([text("The test is flaky; nothing to change.")])

    anthropic.script(first_reply)
    body = json.dumps(_webhook(pull, branch, sha, check)).encode()
    posted = time.time()
    answer = client.post(f"{url}{WEBHOOK_PATH}", content=body, headers=headers("check_run", body))
    if answer.status_code != 202 or answer.json().get("decision") != "queued":
        raise SystemExit(f"bench: the webhook was not queued: {answer.status_code} {answer.text}")
    dedupe = f"ci-repair:{REPO}:{sha}"
    deadline = time.monotonic() + JOB_TIMEOUT
    while time.monotonic() < deadline:
        row = _job(data / "neo.db", dedupe)
        if row is not None and row[1] in FINAL_STATES:
            break
        time.sleep(0.05)
    else:
        raise SystemExit(f"bench: the repair of {sha[:8]} did not end in {JOB_TIMEOUT:.0f} s")
    if "model" not in seen:
        raise SystemExit(f"bench: job {row[0]} ended without asking the model: {row[2]}")
    return seen["model"] - posted


def _nearest(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]


def serve_bench(args: argparse.Namespace) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="neo-bench-ci-", ignore_cleanup_errors=True) as temp,
        contextlib.ExitStack() as stack,
    ):
        scratch = Path(temp)
        origin = scratch / "served" / f"{REPO}.git"
        make_repo(origin, files=args.files, commits=3)
        github = stack.enter_context(FakeGitHub(slug="neo"))
        github.install(INSTALLATION, "octo", ["hello"])
        github.put_file(REPO, ".github/neo.yml", "ci_repair: true\n")
        git = stack.enter_context(_Git(scratch / "served", github))
        anthropic = stack.enter_context(FakeAnthropicAPI())
        env = {
            **serve_env(github, scratch / "data"),
            **anthropic.env,
            "NEO_WORKERS": "1",
            "NEO_SANDBOX": args.sandbox,
            "NEO_SANDBOX_IMAGE": args.image,
            "NEO_GITHUB_GIT_URL": git.base_url,
        }
        server = stack.enter_context(neo_serve(env, scratch / "serve.log"))
        client = stack.enter_context(httpx.Client(timeout=30))
        run = (github, anthropic, origin, server.url, scratch / "data", client)
        warm = _one_run(*run, 0)
        print(f"warm-up: webhook -> first model request {warm * 1000:8.1f} ms", flush=True)
        samples = []
        for n in range(1, args.runs + 1):
            samples.append(_one_run(*run, n))
            print(f"run {n}: webhook -> first model request {samples[-1] * 1000:8.1f} ms")
        p50, p95 = _nearest(samples, 0.5), _nearest(samples, 0.95)
        print(
            f"\nwebhook of a failed check -> first model request ({args.sandbox} sandbox,"
            f" warm mirror, {args.files} files, {len(samples)} runs):"
            f" p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms (target p50 <= 3000 ms)"
        )


# --- (b) the tail of a 50 MB log -----------------------------------------------------


def _measure(label: str, size: int, work: Any) -> None:
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    started = time.perf_counter()
    kept = asyncio.run(work())
    took = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    mb = size / 1e6
    print(
        f"{label}: {mb:.1f} MB in {took:.2f} s ({mb / took:.0f} MB/s); kept {kept:,} bytes;"
        f" tracemalloc peak {peak / 2**20:.1f} MiB; the process's peak RSS"
        f" {rss_after / 1024:.0f} MiB, +{(rss_after - rss_before) / 1024:.1f} MiB"
        " (target < 64 MB)"
    )


def _write_log(path: Path, size: int, seed: int) -> int:
    """A test run's log of about `size` bytes, written in chunks (never whole in memory),
    random enough to compress like a real one; its size."""
    rng = random.Random(seed)
    written = 0
    with path.open("wb") as out:
        while written < size:
            chunk = b"".join(
                b"2026-01-01T00:00:00.0000000Z tests/test_%05d.py::test_%016x PASSED\n"
                % (rng.randrange(100_000), rng.getrandbits(64))
                for _ in range(1000)
            )
            out.write(chunk)
            written += len(chunk)
        tail = b"2026-01-01T00:00:01.0000000Z FAILED tests/test_dates.py::test_midnight\n"
        out.write(tail)
    return written + len(tail)


def logs_bench(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="neo-bench-logs-") as temp:
        root = Path(temp)
        size = _write_log(root / "job.log", args.log_mb * 1_000_000, 7)
        with (
            zipfile.ZipFile(root / "run.zip", "w", zipfile.ZIP_DEFLATED) as archive,
            (root / "job.log").open("rb") as source,
        ):
            archive.writestr("test/1_Set up job.txt", b"Runner image\n")
            with archive.open("test/4_Run tests.txt", "w") as member:
                while chunk := source.read(1 << 20):
                    member.write(chunk)
        zipped = (root / "run.zip").stat().st_size
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(100):
                with contextlib.suppress(httpx.HTTPError):
                    httpx.get(f"{base}/", timeout=1)
                    break
                time.sleep(0.05)

            async def plain() -> int:
                async with httpx.AsyncClient(timeout=120) as client:
                    tail = await download_tail(client, f"{base}/job.log", "job")
                return len(tail.text)

            async def zipped_logs() -> int:
                async with httpx.AsyncClient(timeout=120) as client:
                    tails = await download_zip_tails(client, f"{base}/run.zip")
                return sum(len(t.text) for t in tails)

            _measure("plain job log", size, plain)
            _measure(f"run logs ZIP ({zipped / 1e6:.1f} MB compressed)", size, zipped_logs)
        finally:
            server.terminate()
            server.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="measured runs, after one warm-up")
    parser.add_argument("--files", type=int, default=2000, help="files in the repository")
    parser.add_argument("--sandbox", choices=("docker", "local"), default="docker")
    parser.add_argument("--image", default="neo-sandbox:local", help="the sandbox image")
    parser.add_argument("--log-mb", type=int, default=50, help="the big log's size in MB")
    parser.add_argument("--skip-serve", action="store_true", help="only the log figures")
    parser.add_argument("--skip-logs", action="store_true", help="only the webhook figures")
    args = parser.parse_args()
    if not args.skip_logs:
        logs_bench(args)
    if not args.skip_serve:
        serve_bench(args)


if __name__ == "__main__":
    main()
