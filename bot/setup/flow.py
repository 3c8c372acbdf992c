"""`neo setup-app`: create Neo's GitHub App with GitHub's manifest flow, from a terminal.

    neo setup-app --webhook-url https://neo.example.com/api/github/webhooks [--org ORG]

The steps, the state check and the env file: docs/architecture.md, "App setup".
"""

from __future__ import annotations

import contextlib
import hmac
import html
import json
import logging
import os
import re
import secrets
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final, TextIO
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from bot.github.core import DEFAULT_API_URL, web_url
from bot.github.errors import GitHubError
from bot.github.manifest_conversion import ConversionUnknown, NewApp, convert_manifest_code
from bot.setup.manifest import DEFAULT_NAME, app_manifest
from runner.durable import fsync_directory
from runner.errors import ConfigError, NeoError

__all__ = [
    "SetupFailed",
    "SetupOptions",
    "env_file_text",
    "exchange_code",
    "new_app_url",
    "run_setup",
    "web_url",
    "write_env_file",
]

log = logging.getLogger("neo.setup_app")

CALLBACK_PATH: Final = "/callback"

# GitHub's codes are hex; anything else could steer the exchange to another path.
_CODE = re.compile(r"[A-Za-z0-9_-]{1,200}")


class SetupFailed(NeoError):
    """The flow did not produce a written env file: the CLI exits 1."""

    kind = "setup_failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class SetupOptions:
    webhook_url: str
    env_file: Path
    api_url: str = DEFAULT_API_URL
    github_url: str = "https://github.com"
    org: str | None = None
    # NEO_PUBLIC_URL: the App's callback URL for signing in to the run page.
    public_url: str | None = None
    name: str = DEFAULT_NAME
    port: int = 0
    force: bool = False


# --- pure parts ------------------------------------------------------------------


def new_app_url(github_url: str, org: str | None, state: str) -> str:
    """Where the manifest is posted: the account's or the organization's new-App page."""
    base = github_url.rstrip("/")
    page = f"/organizations/{quote(org)}/settings/apps/new" if org else "/settings/apps/new"
    return f"{base}{page}?{urlencode({'state': state})}"


def start_page(action: str, manifest: Mapping[str, Any], account: str) -> str:
    """The local page that posts `manifest` to GitHub as soon as it loads."""
    name = html.escape(str(manifest["name"]))
    return f"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Create the GitHub App {name}</title></head>
<body>
<form id="manifest-form" action="{html.escape(action)}" method="post">
<input type="hidden" name="manifest" value="{html.escape(json.dumps(manifest))}">
<p>Taking you to GitHub to create the App <strong>{name}</strong> for \
{html.escape(account)}.</p>
<button type="submit">Continue to GitHub</button>
</form>
<script>document.getElementById("manifest-form").submit();</script>
</body>
</html>
"""


def _result_page(title: str, *paragraphs: str) -> str:
    body = "\n".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
    return (
        f'<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n{body}\n</body>\n</html>\n"
    )


def env_file_text(app: NewApp, api_url: str, public_url: str | None = None) -> str:
    """The env file: the App's NEO_* settings, one `NAME=value` line each.

    The OAuth client id and secret let people sign in to the run page;
    NEO_PUBLIC_URL is written when it was given.

    Values are unquoted, as `docker run --env-file` takes them verbatim; the
    key's newlines are `\\n` escapes, which NEO_GITHUB_PRIVATE_KEY accepts.
    """
    pem = "\\n".join(app.pem.strip().splitlines())
    values = {
        "NEO_GITHUB_APP_ID": str(app.app_id),
        "NEO_GITHUB_PRIVATE_KEY": pem,
        "NEO_WEBHOOK_SECRET": app.webhook_secret,
        "NEO_GITHUB_API_URL": api_url,
        "NEO_GITHUB_CLIENT_ID": app.client_id or None,
        "NEO_GITHUB_CLIENT_SECRET": app.client_secret or None,
        "NEO_PUBLIC_URL": public_url or None,
    }
    lines = [
        f"# The GitHub App {_one_line(app.html_url, 'html_url')}, created by neo setup-app.",
        "# Secrets: keep this file private (mode 0600) and out of version control.",
    ]
    for key, value in values.items():
        if value is not None:
            lines.append(f"{key}={_one_line(value, key)}")
    return "\n".join(lines) + "\n"


def _one_line(value: str, what: str) -> str:
    # A line break or a NUL would end the value early or corrupt the next line.
    if not value or any(c in value for c in "\r\n\0"):
        raise SetupFailed(f"GitHub answered an unusable {what}; nothing was written")
    return value


# --- the env file ----------------------------------------------------------------


def check_env_file(path: Path, *, force: bool) -> None:
    """Raise ConfigError unless `path` may be written: before anyone creates an App."""
    if path.is_dir():
        raise ConfigError(f"--env-file {path} is a directory")
    if (path.exists() or path.is_symlink()) and not force:
        raise ConfigError(f"{path} exists; pass --force to replace it, or another --env-file")
    directory = path.parent
    if not directory.is_dir():
        raise ConfigError(f"--env-file: the directory {directory} does not exist")
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=f".{path.name}.", suffix=".tmp"):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ConfigError(f"--env-file: cannot write in {directory}: {reason}") from None


def write_env_file(path: Path, text: str, *, force: bool) -> None:
    """Write `text` to `path`, mode 0600 from the first byte, all at once.

    The text goes to a temporary file in the same directory (mkstemp creates
    it 0600) and then takes `path`'s place: by a hard link when `path` must
    not exist (which fails rather than replace a file that appeared since),
    by a rename with `force`.
    """
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if force:
            os.replace(temporary, path)
        else:
            os.link(temporary, path)
    except FileExistsError:
        raise SetupFailed(
            f"{path} appeared while the App was being created; nothing was written "
            "(its private key can be regenerated in the App's settings)"
        ) from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise SetupFailed(f"cannot write {path}: {reason}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    fsync_directory(path.parent)


# --- the exchange ----------------------------------------------------------------


def exchange_code(api_url: str, code: str) -> NewApp:
    """The new App's credentials for the code GitHub's redirect carried (single use)."""
    try:
        app = convert_manifest_code(api_url, code)
    except ConversionUnknown as error:
        raise SetupFailed(
            f"{error}: GitHub may have created the App; delete it from your GitHub Apps "
            "settings if so and run neo setup-app again; nothing was written"
        ) from None
    except GitHubError as error:
        if error.status is None:  # no answer, or not GitHub's
            hint = " (check --api-url)"
        elif error.status == 404:
            hint = " (the code expired or was used: codes last an hour; run neo setup-app again)"
        elif error.status >= 500:
            hint = " (GitHub is unavailable; try again later)"
        else:
            hint = ""
        raise SetupFailed(f"{error}{hint}; nothing was written") from None
    return app


# --- the local server ------------------------------------------------------------


class _Flow:
    """One run: the page to serve, the state to expect, what the callback produced."""

    def __init__(self, options: SetupOptions, port: int) -> None:
        self.options = options
        self.state = secrets.token_urlsafe(32)
        self.local_url = f"http://127.0.0.1:{port}/"
        # Anything else in Host is another site's page reaching us by DNS rebinding.
        self.hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})
        manifest = app_manifest(
            options.webhook_url,
            name=options.name,
            redirect_url=f"http://127.0.0.1:{port}{CALLBACK_PATH}",
            public_url=options.public_url,
        )
        self.action = new_app_url(options.github_url, options.org, self.state)
        account = f"the organization {options.org}" if options.org else "your account"
        self.page = start_page(self.action, manifest, account)
        self.done = threading.Event()
        self.created: NewApp | None = None
        self.error: NeoError | None = None
        self._lock = threading.Lock()
        self._claimed = False

    def callback(self, query: Mapping[str, list[str]]) -> tuple[int, str, bool]:
        """(status, page, whether this request ended the run)."""
        with self._lock:
            if self._claimed:
                page = _result_page("Already done", "This run of neo setup-app is over.")
                return 409, page, False
            self._claimed = True
        try:
            self.created = self._complete(query)
        except NeoError as error:
            self.error = error
        except Exception as error:  # the terminal must hear of it, not wait forever
            log.debug("setup-app callback failed", exc_info=True)
            self.error = SetupFailed(f"unexpected {type(error).__name__}; nothing was written")
        if self.created is not None:
            app, path = self.created, self.options.env_file
            install = html.escape(app.install_url)
            return (
                200,
                _result_page(
                    f"Created the GitHub App {app.name}",
                    f"Its id, private key and webhook secret are in {html.escape(str(path))}.",
                    f'Next, <a href="{install}">install it on your repositories</a>.',
                ),
                True,
            )
        message = html.escape(str(self.error))
        return 400, _result_page("The GitHub App was not set up", message), True

    def _complete(self, query: Mapping[str, list[str]]) -> NewApp:
        state = (query.get("state") or [""])[0]
        if not hmac.compare_digest(state.encode(), self.state.encode()):
            raise SetupFailed(
                "the redirect's state is not this run's (a stale tab or a forged request); "
                "nothing was written"
            )
        code = (query.get("code") or [""])[0]
        if not _CODE.fullmatch(code):
            raise SetupFailed("the redirect carried no usable code; nothing was written")
        app = exchange_code(self.options.api_url, code)
        try:
            text = env_file_text(app, self.options.api_url, self.options.public_url)
            write_env_file(self.options.env_file, text, force=self.options.force)
        except SetupFailed as error:
            # The App exists now: say where, as its key and secret can be renewed there.
            raise SetupFailed(
                f"{error}; the App was created: renew its key and secret at {app.html_url}, "
                "or delete it and run neo setup-app again"
            ) from None
        return app


class _Server(ThreadingHTTPServer):
    flow: _Flow


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # A connection that sends nothing is dropped, not waited on.
    timeout = 30
    server_version = "neo-setup-app"
    sys_version = ""

    def do_GET(self) -> None:
        flow = self.server.flow
        url = urlsplit(self.path)
        if self.headers.get("Host", "") not in flow.hosts:
            self._send(400, _result_page("Bad request", "Open this page by its 127.0.0.1 URL."))
        elif url.path == "/":
            self._send(200, flow.page)
        elif url.path == CALLBACK_PATH:
            status, page, ended = flow.callback(parse_qs(url.query))
            try:
                self._send(status, page)
            finally:
                if ended:
                    flow.done.set()
        else:
            self._send(404, _result_page("Not found", "Nothing here."))

    def _send(self, status: int, page: str) -> None:
        body = page.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        # The callback URL holds the code: no link on its page may pass it on.
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # request lines hold the code and state: keep them off the terminal


def run_setup(options: SetupOptions, out: TextIO) -> NewApp:
    """Run the flow: serve the page, wait for GitHub's redirect, write the env file.

    Raises ConfigError before anything is served, SetupFailed after.
    """
    check_env_file(options.env_file, force=options.force)
    try:
        server = _Server(("127.0.0.1", options.port), _Handler)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ConfigError(f"cannot listen on 127.0.0.1:{options.port}: {reason}") from None
    flow = _Flow(options, server.server_address[1])
    server.flow = flow
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="neo-setup-app"
    )
    thread.start()
    try:
        where = f"organization {options.org}" if options.org else "your account"
        print(
            f"Open {flow.local_url} in a browser to create the GitHub App for {where} "
            f"on {options.github_url}.",
            file=out,
            flush=True,
        )
        print("Waiting for GitHub to send the browser back (Ctrl-C to stop)…", file=out, flush=True)
        flow.done.wait()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    if flow.error is not None:
        raise flow.error
    assert flow.created is not None  # done is set only with an outcome
    return flow.created
