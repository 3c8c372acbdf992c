"""`neo serve` serves the run pages and the sign-in beside its webhooks, and a page's live
stream does not hold up its shutdown."""

from __future__ import annotations

import copy
import json
import signal
import threading
from pathlib import Path
from typing import Any

import httpx

from tests.bot.serving import corpus, free_port, headers, neo_serve, serve_env
from tests.fakes import FakeGitHub


def _mention() -> dict[str, Any]:
    payload = next(
        copy.deepcopy(p)
        for name, p in corpus()
        if name == "issue_comment" and p.get("action") == "created" and "installation" in p
    )
    payload["comment"]["body"] = "@neo please fix the flaky date test"
    payload["comment"]["user"]["type"] = "User"
    payload["sender"]["type"] = "User"
    payload["issue"]["locked"] = False
    return payload


def test_neo_serve_serves_the_run_pages_and_ends_their_streams_to_stop(tmp_path: Path) -> None:
    payload = _mention()
    owner, name = payload["repository"]["full_name"].split("/")
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    with FakeGitHub(slug="neo") as github:
        github.install(payload["installation"]["id"], owner, [name])
        github.set_public(f"{owner}/{name}")
        authorize = f"{github.origin}/login/oauth/authorize?"
        env = serve_env(github, tmp_path / "data")
        env.update(
            {
                "NEO_PUBLIC_URL": public,
                "NEO_GITHUB_CLIENT_ID": github.oauth.client_id,
                "NEO_GITHUB_CLIENT_SECRET": github.oauth.client_secret,
            }
        )
        with neo_serve(env, tmp_path / "serve.log", port) as server:
            body = json.dumps(payload).encode()
            queued = httpx.post(
                f"{public}/api/github/webhooks",
                content=body,
                headers=headers("issue_comment", body),
            )
            (job,) = queued.json()["jobs"]
            listed = httpx.get(f"{public}/runs", timeout=30)
            page = httpx.get(f"{public}/runs/{job}", timeout=30)
            login = httpx.get(f"{public}/auth/github/login?next=/runs/{job}", timeout=30)

            opened = threading.Event()

            def watch() -> None:
                with httpx.stream("GET", f"{public}/runs/{job}/events", timeout=60) as stream:
                    opened.set()
                    for _ in stream.iter_raw():
                        pass

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            assert opened.wait(30)
            server.process.send_signal(signal.SIGTERM)
            # The stream ends as the server stops: it does not wait out the watcher.
            # (uvicorn raises the signal again once it has shut down: -15.)
            assert server.process.wait(timeout=30) == -signal.SIGTERM
            watcher.join(30)
            assert not watcher.is_alive()

    assert listed.status_code == 200
    assert f"/runs/{job}" in listed.text
    assert page.status_code == 200
    assert login.status_code == 303
    assert login.headers["location"].startswith(authorize)
