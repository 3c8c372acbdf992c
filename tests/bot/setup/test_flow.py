"""`neo setup-app`: GitHub's manifest flow, driven like a browser, against the fake GitHub.

A real `neo setup-app` process serves the start page; the test reads the form
the page posts to GitHub, then plays GitHub's redirect back to the callback
with a code the fake GitHub exchanges once, as GitHub does.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from bot.config.settings import Settings
from bot.github.app import GitHubApp, load_private_key
from bot.github.core import GHES_API_VERSION
from bot.github.manifest_conversion import NewApp
from bot.setup.flow import (
    SetupFailed,
    env_file_text,
    exchange_code,
    new_app_url,
    web_url,
    write_env_file,
)
from bot.setup.manifest import app_manifest
from tests.fakes import FakeGitHub
from tests.fakes.github_api import Call, IssuedToken, error_json, user_json

NEO = Path(sys.executable).with_name("neo")
WEBHOOK_URL = "https://neo.example.com/api/github/webhooks"
WEBHOOK_SECRET = "whsec-0123456789abcdef0123456789abcdef"
CLIENT_SECRET = "client-secret-0123456789abcdef0123456789"
ENV_NAMES = {"NEO_GITHUB_APP_ID", "NEO_GITHUB_PRIVATE_KEY", "NEO_WEBHOOK_SECRET"}
CLIENT_NAMES = {"NEO_GITHUB_CLIENT_ID", "NEO_GITHUB_CLIENT_SECRET"}

# What a request without credentials authenticates as in `ManifestGitHub`.
_ANONYMOUS = IssuedToken(
    token="",
    installation_id=0,
    expires_at=datetime.max.replace(tzinfo=UTC),
    permissions={},
    repositories=(),
)


class ManifestGitHub(FakeGitHub):
    """The fake GitHub plus `POST /app-manifests/{code}/conversions`.

    GitHub answers that endpoint without credentials, and the fake's
    `add_route` knows only App and installation routes, so a request without
    an Authorization header passes here as `_ANONYMOUS` (any other route
    would then 404 it: its repository is not in scope). Each code from
    `issue_code` is exchanged once; then, like an unknown one, it is a 404.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._codes: dict[str, str | None] = {}
        self.conversions: list[Call] = []
        self._issued = 0
        self.add_route("POST", "/app-manifests/{code}/conversions", self._convert)

    def issue_code(self, *, webhook_secret: str | None = WEBHOOK_SECRET) -> str:
        self._issued += 1
        code = f"{self._issued:040x}"
        self._codes[code] = webhook_secret
        return code

    def _verify_token(self, header: str | None) -> IssuedToken:
        if header is None:
            return _ANONYMOUS
        return super()._verify_token(header)

    def _convert(self, call: Call) -> tuple[int, Any]:
        self.conversions.append(call)
        code = call.params["code"]
        if call.token is not _ANONYMOUS or code not in self._codes:
            return 404, error_json(404, "Not Found")
        webhook_secret = self._codes.pop(code)
        stamp = "2024-01-01T00:00:00Z"
        base = self.base_url
        return 201, {
            "id": self.app_id,
            "slug": self.slug,
            "node_id": f"A_{self.app_id}",
            "client_id": f"Iv1.{self.app_id:016x}",
            "owner": user_json("octo", 1, base=base),
            "name": "Neo",
            "description": "A coding agent",
            "external_url": "https://neo.example.com",
            "html_url": f"https://github.example.com/apps/{self.slug}",
            "created_at": stamp,
            "updated_at": stamp,
            "permissions": {
                "contents": "write",
                "issues": "write",
                "pull_requests": "write",
                "metadata": "read",
            },
            "events": ["issue_comment", "issues"],
            "client_secret": CLIENT_SECRET,
            "webhook_secret": webhook_secret,
            "pem": self.private_key_pem,
        }


@pytest.fixture
def github() -> Iterator[ManifestGitHub]:
    fake = ManifestGitHub()
    with fake:
        yield fake


# --- driving the command ---------------------------------------------------------


class _Form(HTMLParser):
    """The start page's form: its action and its fields."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.method: str | None = None
        self.fields: dict[str, str] = {}
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.action, self.method = values.get("action"), values.get("method")
        elif tag == "input" and "name" in values:
            self.fields[values["name"]] = values.get("value", "")
        elif tag == "script":
            self.scripts += 1


@dataclass
class SetupRun:
    process: subprocess.Popen[str]
    local_url: str
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    def start_page(self) -> _Form:
        response = httpx.get(self.local_url, timeout=10)
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-store"
        form = _Form()
        form.feed(response.text)
        return form

    def wait(self) -> int:
        return self.process.wait(timeout=60)

    @property
    def output(self) -> str:
        return "".join(self.stdout) + "".join(self.stderr)


def _collect(stream: IO[str], into: list[str], lines: queue.Queue[str] | None) -> None:
    for line in stream:
        into.append(line)
        if lines is not None:
            lines.put(line)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("NEO_")}


@contextmanager
def setup_app(github: FakeGitHub, env_file: Path, *args: str) -> Iterator[SetupRun]:
    """`neo setup-app` against `github`, up and serving its start page."""
    argv = [str(NEO), "setup-app", "--webhook-url", WEBHOOK_URL, "--env-file", str(env_file)]
    process = subprocess.Popen(
        [*argv, "--api-url", github.base_url, *args],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    stdout: list[str] = []
    stderr: list[str] = []
    lines: queue.Queue[str] = queue.Queue()
    readers = [
        threading.Thread(target=_collect, args=(process.stdout, stdout, lines), daemon=True),
        threading.Thread(target=_collect, args=(process.stderr, stderr, None), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        try:
            first = lines.get(timeout=60)
        except queue.Empty:
            raise AssertionError(f"neo setup-app printed nothing: {''.join(stderr)}") from None
        url = next((word for word in first.split() if word.startswith("http://127.0.0.1:")), None)
        assert url is not None, first
        yield SetupRun(process, url, stdout, stderr)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        for reader in readers:
            reader.join(timeout=10)


def _state(form: _Form) -> str:
    assert form.action is not None
    return parse_qs(urlsplit(form.action).query)["state"][0]


def _env_lines(path: Path) -> dict[str, str]:
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def _assert_no_secret(text: str, github: FakeGitHub) -> None:
    key_body = github.private_key_pem.strip().splitlines()[1]  # a line of base64
    for secret in (key_body, WEBHOOK_SECRET, CLIENT_SECRET):
        assert secret not in text


def _clear_neo_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("NEO_"):
            monkeypatch.delenv(name)


# --- the flow ----------------------------------------------------------------------


async def test_setup_app_creates_the_app_and_writes_its_credentials_privately(
    github: ManifestGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    public = "https://neo.example.com"
    with setup_app(github, env_file, "--public-url", f"{public}/") as run:
        # Another site's page reaching the port by DNS rebinding gets nothing.
        port = urlsplit(run.local_url).port
        rebound = httpx.get(run.local_url, headers={"Host": f"evil.example:{port}"}, timeout=10)
        assert rebound.status_code == 400

        form = run.start_page()
        state = _state(form)
        assert len(state) >= 32
        assert state not in rebound.text
        assert form.method == "post"
        assert form.action == new_app_url(github.base_url, None, state)
        assert form.action.startswith(f"{github.base_url}/settings/apps/new?state=")
        assert form.scripts == 1  # the page posts itself
        callback = f"{run.local_url}callback"
        manifest = json.loads(form.fields["manifest"])
        assert manifest == app_manifest(WEBHOOK_URL, redirect_url=callback, public_url=public)
        assert manifest["callback_urls"] == [f"{public}/auth/github/callback"]
        assert not env_file.exists()

        # GitHub, once the owner confirmed, sends the browser back with a code.
        code = github.issue_code()
        done = httpx.get(callback, params={"code": code, "state": state}, timeout=60)
        assert done.status_code == 200
        assert done.headers["referrer-policy"] == "no-referrer"
        assert "installations/new" in done.text
        assert run.wait() == 0

    # The code was exchanged once, without credentials, as GitHub wants it.
    assert [call.params["code"] for call in github.conversions] == [code]
    assert github.conversions[0].token is _ANONYMOUS

    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert sorted(tmp_path.iterdir()) == [env_file]  # no temporary file left behind
    values = _env_lines(env_file)
    assert set(values) == {*ENV_NAMES, "NEO_GITHUB_API_URL", *CLIENT_NAMES, "NEO_PUBLIC_URL"}
    assert values["NEO_GITHUB_APP_ID"] == str(github.app_id)
    assert values["NEO_WEBHOOK_SECRET"] == WEBHOOK_SECRET
    assert values["NEO_GITHUB_API_URL"] == github.base_url
    assert "\\n" in values["NEO_GITHUB_PRIVATE_KEY"]
    # The App's OAuth client: signing in to the run page.
    assert values["NEO_GITHUB_CLIENT_ID"] == f"Iv1.{github.app_id:016x}"
    assert values["NEO_GITHUB_CLIENT_SECRET"] == CLIENT_SECRET
    assert values["NEO_PUBLIC_URL"] == public

    html_url = f"https://github.example.com/apps/{github.slug}"
    out = "".join(run.stdout)
    assert html_url in out
    assert f"{html_url}/installations/new" in out
    assert run.stderr == []
    _assert_no_secret(run.output, github)

    # `neo serve`'s own settings read the file, and the App's key works.
    _clear_neo_env(monkeypatch)
    settings = Settings(_env_file=env_file)
    assert settings.github_app_id == github.app_id
    assert settings.webhook_secret.get_secret_value() == WEBHOOK_SECRET
    assert settings.github_private_key is not None
    key = load_private_key(settings.github_private_key.get_secret_value(), None)
    assert key.strip() == github.private_key_pem.strip()
    async with GitHubApp(settings.github_app_id, key, settings.github_api_url) as app:
        assert await app.bot_login() == f"{github.slug}[bot]"


def test_an_organization_on_github_enterprise_server_and_force(tmp_path: Path) -> None:
    env_file = tmp_path / "neo.env"
    env_file.write_text("OLD=1\n")
    env_file.chmod(0o644)
    github = ManifestGitHub(path_prefix="/api/v3")
    with github:
        assert github.base_url.endswith("/api/v3")
        host = github.base_url.removesuffix("/api/v3")
        with setup_app(github, env_file, "--org", "acme", "--force", "--name", "Neo Acme") as run:
            form = run.start_page()
            state = _state(form)
            assert form.action == f"{host}/organizations/acme/settings/apps/new?state={state}"
            assert json.loads(form.fields["manifest"])["name"] == "Neo Acme"
            code = github.issue_code()
            httpx.get(f"{run.local_url}callback", params={"code": code, "state": state}, timeout=60)
            assert run.wait() == 0
        assert [call.route for call in github.conversions] == [f"/app-manifests/{code}/conversions"]
        assert github.requests[-1].path == f"/api/v3/app-manifests/{code}/conversions"
        # GitHub Enterprise Server answers only the API versions it documents.
        assert github.requests[-1].headers["x-github-api-version"] == GHES_API_VERSION
        api_url = github.base_url
    # Replaced, and private although the old file was not.
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    values = _env_lines(env_file)
    assert "OLD" not in values
    assert values["NEO_GITHUB_API_URL"] == api_url
    _assert_no_secret(run.output, github)


def test_a_redirect_with_another_state_writes_nothing(
    github: ManifestGitHub, tmp_path: Path
) -> None:
    env_file = tmp_path / ".env"
    with setup_app(github, env_file) as run:
        state = _state(run.start_page())
        code = github.issue_code()
        forged = httpx.get(
            f"{run.local_url}callback",
            params={"code": code, "state": "forged-" + state},
            timeout=60,
        )
        assert forged.status_code == 400
        assert run.wait() == 1
    assert github.conversions == []  # the code was not even exchanged
    assert list(tmp_path.iterdir()) == []
    assert "Created" not in "".join(run.stdout)
    assert len(run.stderr) == 1
    assert run.stderr[0].startswith("neo: error: the redirect's state is not this run's")
    assert "Traceback" not in run.output


def test_an_expired_code_is_one_line_and_writes_nothing(
    github: ManifestGitHub, tmp_path: Path
) -> None:
    env_file = tmp_path / ".env"
    with setup_app(github, env_file) as run:
        state = _state(run.start_page())
        stale = "ab" * 20  # never issued: what GitHub says of a code over an hour old
        page = httpx.get(
            f"{run.local_url}callback", params={"code": stale, "state": state}, timeout=60
        )
        assert page.status_code == 400
        assert run.wait() == 1
    assert len(run.stderr) == 1
    assert run.stderr[0].startswith(
        "neo: error: github 404 POST /app-manifests/{code}/conversions: Not Found (the code expired"
    )
    assert stale not in run.output
    assert "nothing was written" in run.stderr[0]
    assert list(tmp_path.iterdir()) == []


CONVERSIONS = "/app-manifests/{code}/conversions"


def test_a_5xx_on_the_exchange_is_not_retried(github: ManifestGitHub) -> None:
    # A code works once: a second POST after a 502 GitHub acted on could only fail.
    code = github.issue_code()
    github.fail_next("POST", CONVERSIONS, 502)

    with pytest.raises(SetupFailed) as raised:
        exchange_code(github.base_url, code)

    assert str(raised.value) == (
        f"github 502 POST {CONVERSIONS}: Server Error (GitHub is unavailable; try again later); "
        "nothing was written"
    )
    assert [r.status for r in github.requests if r.method == "POST"] == [502]
    assert code not in str(raised.value)


@contextmanager
def hanging_up_server() -> Iterator[tuple[str, list[bytes]]]:
    """An API URL whose server reads each request and closes without answering."""
    received: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return  # closed: the test is over
            with connection:
                connection.settimeout(10)
                data = b""
                while b"\r\n\r\n" not in data and (chunk := connection.recv(65536)):
                    data += chunk
                received.append(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", received
    finally:
        listener.close()
        thread.join(timeout=10)


def test_a_connection_lost_after_the_code_was_sent_says_to_start_over() -> None:
    with hanging_up_server() as (api_url, received), pytest.raises(SetupFailed) as raised:
        exchange_code(api_url, "ab" * 20)

    assert str(raised.value) == (
        f"github: POST {CONVERSIONS}: the connection failed (RemoteProtocolError) after the "
        "code was sent: GitHub may have created the App; delete it from your GitHub Apps "
        "settings if so and run neo setup-app again; nothing was written"
    )
    assert len(received) == 1  # sent once, not retried
    assert received[0].startswith(b"POST /app-manifests/" + b"ab" * 20 + b"/conversions ")


def test_no_server_at_the_api_url_is_one_line() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        api_url = f"http://127.0.0.1:{closed.getsockname()[1]}"  # nobody listens there

    with pytest.raises(SetupFailed) as raised:
        exchange_code(api_url, "ab" * 20)

    assert str(raised.value) == (
        f"github: POST {CONVERSIONS}: cannot connect: ConnectError (check --api-url); "
        "nothing was written"
    )


def test_a_file_that_appears_meanwhile_is_kept_and_the_app_named(
    github: ManifestGitHub, tmp_path: Path
) -> None:
    env_file = tmp_path / ".env"
    with setup_app(github, env_file) as run:
        state = _state(run.start_page())
        env_file.write_text("MINE=1\n")  # written by someone else while GitHub asked
        code = github.issue_code()
        page = httpx.get(
            f"{run.local_url}callback", params={"code": code, "state": state}, timeout=60
        )
        assert page.status_code == 400
        assert run.wait() == 1
    assert env_file.read_text() == "MINE=1\n"
    assert sorted(tmp_path.iterdir()) == [env_file]
    # The App exists on GitHub now: the one line says where to renew what was lost.
    assert len(run.stderr) == 1
    assert "appeared while the App was being created" in run.stderr[0]
    assert f"https://github.example.com/apps/{github.slug}" in run.stderr[0]
    _assert_no_secret(run.output, github)


def test_ctrl_c_stops_the_wait_and_writes_nothing(github: ManifestGitHub, tmp_path: Path) -> None:
    with setup_app(github, tmp_path / ".env") as run:
        run.start_page()
        run.process.send_signal(signal.SIGINT)
        assert run.wait() == 130
    assert run.stderr == ["neo: setup-app stopped; nothing was written\n"]
    assert list(tmp_path.iterdir()) == []


def test_an_existing_env_file_stops_setup_before_it_starts(
    github: ManifestGitHub, tmp_path: Path
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("NEO_WEBHOOK_SECRET=keep-me\n")
    env_file.chmod(0o640)
    done = subprocess.run(
        [str(NEO), "setup-app", "--webhook-url", WEBHOOK_URL, "--env-file", str(env_file)],
        env={**_env(), "NEO_GITHUB_API_URL": github.base_url},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""  # it never served a page: no App can be created for nothing
    assert (
        done.stderr
        == f"neo: error: {env_file} exists; pass --force to replace it, or another --env-file\n"
    )
    assert env_file.read_text() == "NEO_WEBHOOK_SECRET=keep-me\n"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o640
    assert github.requests == []


# --- the pure parts and the file -------------------------------------------------


@pytest.mark.parametrize(
    ("api_url", "web"),
    [
        ("https://api.github.com", "https://github.com"),
        ("https://api.github.com/", "https://github.com"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com"),
        ("https://ghe.example.com/api/v3/", "https://ghe.example.com"),
        ("https://api.acme.ghe.com", "https://acme.ghe.com"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ],
)
def test_web_url_follows_the_api_url(api_url: str, web: str) -> None:
    assert web_url(api_url) == web


def test_the_new_app_page_is_the_account_or_the_organization() -> None:
    assert new_app_url("https://github.com", None, "s t") == (
        "https://github.com/settings/apps/new?state=s+t"
    )
    assert new_app_url("https://github.com/", "acme", "s") == (
        "https://github.com/organizations/acme/settings/apps/new?state=s"
    )


PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEab+/cd==\nefgh\n-----END RSA PRIVATE KEY-----\n"


def _app(webhook_secret: str | None = WEBHOOK_SECRET) -> NewApp:
    return NewApp(
        app_id=99,
        name="Neo",
        html_url="https://github.com/apps/neo",
        pem=PEM,
        webhook_secret=webhook_secret,
        client_id="Iv23liABC",
        client_secret=CLIENT_SECRET,
    )


def test_the_env_file_has_one_line_per_setting_and_the_key_escaped() -> None:
    text = env_file_text(_app(), "https://api.github.com")
    values = dict(
        line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")
    )
    assert values == {
        "NEO_GITHUB_APP_ID": "99",
        "NEO_GITHUB_PRIVATE_KEY": PEM.strip().replace("\n", "\\n"),
        "NEO_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "NEO_GITHUB_API_URL": "https://api.github.com",
        "NEO_GITHUB_CLIENT_ID": "Iv23liABC",
        "NEO_GITHUB_CLIENT_SECRET": CLIENT_SECRET,
    }
    assert CLIENT_SECRET not in repr(_app())
    public = env_file_text(_app(), "https://api.github.com", "https://neo.example.com")
    assert "NEO_PUBLIC_URL=https://neo.example.com\n" in public
    assert load_private_key(values["NEO_GITHUB_PRIVATE_KEY"], None) == PEM
    # Without a secret from GitHub there is no line for one (the command warns).
    assert "NEO_WEBHOOK_SECRET" not in env_file_text(_app(None), "https://api.github.com")
    with pytest.raises(SetupFailed):
        env_file_text(_app("two\nlines"), "https://api.github.com")


def test_docker_reads_the_env_file_as_written(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    write_env_file(env_file, env_file_text(_app(), "https://api.github.com"), force=False)
    names = ["NEO_GITHUB_APP_ID", "NEO_GITHUB_PRIVATE_KEY", "NEO_WEBHOOK_SECRET"]
    docker = ["docker", "run", "--rm", "--env-file", str(env_file), "neo-sandbox:local"]
    done = subprocess.run(
        [*docker, "printenv", *names],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    app_id, key, secret = done.stdout.splitlines()
    assert (app_id, secret) == ("99", WEBHOOK_SECRET)
    assert load_private_key(key, None) == PEM


def test_the_env_file_is_private_whatever_the_umask(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    previous = os.umask(0)
    try:
        write_env_file(env_file, "A=1\n", force=False)
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        # A file that appeared meanwhile is never overwritten without force.
        with pytest.raises(SetupFailed, match="appeared"):
            write_env_file(env_file, "A=2\n", force=False)
        assert env_file.read_text() == "A=1\n"
        write_env_file(env_file, "A=3\n", force=True)
    finally:
        os.umask(previous)
    assert env_file.read_text() == "A=3\n"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert sorted(tmp_path.iterdir()) == [env_file]
