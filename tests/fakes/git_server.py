"""A real git smart-HTTP server for tests: `git http-backend` behind HTTP Basic auth.

Bare repositories under `root` are served at `/<relative path>` on 127.0.0.1,
so the real `git` CLI clones, fetches and pushes through the same wire
protocol (v2, partial clone filters, receive-pack) it uses against GitHub:

    make_repo(root / "octo" / "hello.git", files=10)
    with FakeGitServer(root, token="t0ken") as server:
        url = server.url("octo/hello.git")
        ...  # git clone with "Authorization: Basic base64(x-access-token:t0ken)"
        assert server.requests[-1].authenticated

Every request must carry `x-access-token:<token>` as Basic credentials; any
other gets 401 with `WWW-Authenticate: Basic`. Each request is recorded
(method, path, service, whether credentials were present and right, status,
bytes in and out) in `server.requests`.

GitHub's rule for workflow files holds: a push by a token without the
`workflows` permission (`may_push_workflows` says, per request) that adds,
changes or removes a file under `.github/workflows/` is refused whole, as
GitHub refuses it ("refusing to allow a GitHub App to create or update
workflow `.github/workflows/x.yml` without `workflows` permission"). What
counts is every commit the push makes reachable from a branch or tag for
the first time, against its first parent: a commit only a pull request's
ref (`refs/pull/N/head`) held counts, as a fork's does on GitHub.

The repository helpers build history with `git fast-import`, so a repository
of thousands of files takes a fraction of a second.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import selectors
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO
from urllib.parse import unquote, urlsplit

__all__ = [
    "FakeGitServer",
    "GitRequest",
    "add_commit",
    "basic_auth",
    "file_content",
    "file_path",
    "git_env",
    "make_bomb",
    "make_pull_request",
    "make_repo",
]

_IDENTITY = "Fake Author <author@example.com>"

# What GitHub allows and the client-side mirror relies on: filters, fetching
# promised blobs by id, and pushes.
_SERVER_CONFIG = (
    ("http.receivepack", "true"),
    ("uploadpack.allowFilter", "true"),
    ("uploadpack.allowAnySHA1InWant", "true"),
    ("safe.directory", "*"),
)

# The pre-receive hook that stands for GitHub's check of workflow files. It
# runs only for a push whose token lacks the permission (the server sets
# FAKE_GIT_NO_WORKFLOWS); receive-pack gives it the pushed objects in
# quarantine, and `--branches --tags` are the refs before the push.
_WORKFLOWS_HOOK = r"""#!/bin/sh
[ -n "$FAKE_GIT_NO_WORKFLOWS" ] || exit 0
zero=0000000000000000000000000000000000000000
refused=""
while read -r old new ref; do
    [ "$new" = "$zero" ] && continue
    for commit in $(git rev-list "$new" --not --branches --tags); do
        paths=$(git diff-tree -r --no-commit-id --name-only --root -m --first-parent \
            "$commit" -- .github/workflows/)
        refused="$refused $paths"
    done
done
for path in $refused; do
    echo "refusing to allow a GitHub App to create or update workflow \`$path\`" \
        "without \`workflows\` permission" >&2
    exit 1
done
exit 0
"""


def git_env(**extra: str) -> dict[str, str]:
    """An environment for git in tests: no user, system or inherited git settings."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("GIT_") and name not in ("HOME", "XDG_CONFIG_HOME")
    }
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C")
    env.update(extra)
    return env


def basic_auth(token: str) -> str:
    """The Authorization header value GitHub accepts for an installation token."""
    return "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


@dataclass(frozen=True, slots=True)
class GitRequest:
    """One HTTP request as the server saw and answered it."""

    method: str
    path: str
    query: str
    service: str | None  # "git-upload-pack" (fetch) or "git-receive-pack" (push)
    auth_present: bool
    authenticated: bool
    status: int
    request_bytes: int
    response_bytes: int


# --- repositories ----------------------------------------------------------------


def _git(*args: str, input: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", *args], input=input, capture_output=True, env=git_env(), check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode().strip()


def _blob(data: bytes) -> bytes:
    return b"data %d\n%s\n" % (len(data), data)


def _commit_stream(
    ref: str, parent: str | None, files: Mapping[str, bytes | None], message: str, when: int
) -> bytes:
    parts = [
        f"commit {ref}\n".encode(),
        f"author {_IDENTITY} {when} +0000\n".encode(),
        f"committer {_IDENTITY} {when} +0000\n".encode(),
        _blob(message.encode()),
    ]
    if parent is not None:
        parts.append(f"from {parent}\n".encode())
    for path, data in files.items():
        if data is None:
            parts.append(f"D {path}\n".encode())
        else:
            parts.append(f"M 100644 inline {path}\n".encode())
            parts.append(_blob(data))
    parts.append(b"\n")
    return b"".join(parts)


def _fast_import(repo: Path, stream: bytes) -> None:
    _git("--git-dir", str(repo), "fast-import", "--quiet", "--force", input=stream)


def file_content(index: int, version: int = 0, size: int = 1024) -> bytes:
    """Deterministic, distinct, realistically compressible content for file `index`."""
    lines: list[bytes] = []
    length = 0  # of the lines so far: summing them again per line is quadratic
    while length < size:
        seed = f"{index}:{version}:{len(lines)}".encode()
        lines.append(f"value_{len(lines)} = '{hashlib.sha256(seed).hexdigest()}'\n".encode())
        length += len(lines[-1])
    return b"".join(lines)[:size]


def file_path(index: int) -> str:
    """Where file `index` lives: 100 files a directory, as in a real source tree."""
    return f"src/pkg{index // 100:03d}/module_{index:05d}.py"


def make_repo(
    path: Path,
    files: int = 10,
    *,
    commits: int = 1,
    branch: str = "main",
    file_size: int = 1024,
) -> str:
    """A bare repository at `path` with `files` files and `commits` commits; its head sha.

    The first commit adds every file (`file_path(i)`, `file_content(i)`, plus a
    README.md); each later commit rewrites one file.
    """
    _git("init", "--quiet", "--bare", f"--initial-branch={branch}", str(path))
    ref = f"refs/heads/{branch}"
    start = 1_700_000_000
    tree: dict[str, bytes | None] = {"README.md": b"# fixture\n"}
    tree.update({file_path(i): file_content(i, size=file_size) for i in range(files)})
    stream = [_commit_stream(ref, None, tree, "Initial commit", start)]
    for n in range(1, commits):
        change: dict[str, bytes | None] = {"README.md": f"# fixture {n}\n".encode()}
        if files:
            index = (n - 1) % files
            change = {file_path(index): file_content(index, n, file_size)}
        # No parent given: fast-import continues the branch it is writing.
        stream.append(_commit_stream(ref, None, change, f"Change {n}", start + n))
    _fast_import(path, b"".join(stream))
    return _git("--git-dir", str(path), "rev-parse", ref)


def add_commit(
    repo: Path,
    files: Mapping[str, bytes | None],
    *,
    message: str = "Another change",
    branch: str = "main",
) -> str:
    """Commit `files` (None deletes a path) on top of `branch` in a bare repo; the new sha."""
    ref = f"refs/heads/{branch}"
    _fast_import(repo, _commit_stream(ref, f"{ref}^0", files, message, int(time.time())))
    return _git("--git-dir", str(repo), "rev-parse", ref)


def make_pull_request(
    repo: Path,
    number: int,
    files: Mapping[str, bytes | None],
    *,
    base: str = "main",
    message: str = "Proposed change",
) -> str:
    """A commit on top of `base` reachable only from `refs/pull/<number>/head`; its sha."""
    ref = f"refs/pull/{number}/head"
    stream = _commit_stream(ref, f"refs/heads/{base}^0", files, message, int(time.time()))
    _fast_import(repo, stream)
    return _git("--git-dir", str(repo), "rev-parse", ref)


def make_bomb(
    repo: Path, number: int, *, files: int, file_size: int, base: str = "main", per_dir: int = 1000
) -> str:
    """A pull request head (`refs/pull/<number>/head`, on top of `base`) adding `files`
    copies of one blob of `file_size` bytes, `per_dir` to a directory: a "git bomb",
    a few hundred kilobytes packed (one blob, one directory tree), `files * file_size`
    bytes checked out. Its sha."""
    ref = f"refs/pull/{number}/head"
    data = file_content(0, 0, file_size)
    parts = [b"blob\nmark :1\n", _blob(data)]
    parts += [
        f"commit {ref}\n".encode(),
        f"author {_IDENTITY} {int(time.time())} +0000\n".encode(),
        f"committer {_IDENTITY} {int(time.time())} +0000\n".encode(),
        _blob(b"A few small fixes"),
        f"from refs/heads/{base}^0\n".encode(),
    ]
    parts += [
        f"M 100644 :1 bomb/d{i // per_dir:04d}/f{i % per_dir:05d}.txt\n".encode()
        for i in range(files)
    ]
    _fast_import(repo, b"".join([*parts, b"\n"]))
    return _git("--git-dir", str(repo), "rev-parse", ref)


# --- the server ------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so curl's `Expect: 100-continue` is answered at once; every
    # response still closes its connection, which delimits a CGI body of
    # unknown length.
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: object) -> None:
        pass  # tests read `requests`, not stderr

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _serve(self) -> None:
        self.close_connection = True
        fake = self.server.fake
        parts = urlsplit(self.path)
        path, query = unquote(parts.path), parts.query
        body = self._read_body() if self.command == "POST" else b""
        header = self.headers.get("Authorization")
        service = next(
            (name for name in ("git-upload-pack", "git-receive-pack") if name in self.path), None
        )
        push = service == "git-receive-pack"
        authenticated = fake.accepts(header, path, push=push)

        def record(status: int, sent: int) -> None:
            fake.record(
                GitRequest(
                    self.command,
                    path,
                    query,
                    service,
                    header is not None,
                    authenticated,
                    status,
                    len(body),
                    sent,
                )
            )

        if not authenticated:
            message = b"authentication required\n"
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="fake-git"')
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(message)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(message)
            record(401, len(message))
            return
        workflows = not push or fake.may_push_workflows(header, path)
        status, sent = self._backend(path, query, body, workflows=workflows)
        record(status, sent)

    def _backend(self, path: str, query: str, body: bytes, *, workflows: bool) -> tuple[int, int]:
        fake = self.server.fake
        env = git_env(
            GIT_PROJECT_ROOT=str(fake.root),
            GIT_HTTP_EXPORT_ALL="1",
            GATEWAY_INTERFACE="CGI/1.1",
            REQUEST_METHOD=self.command,
            PATH_INFO=path,
            QUERY_STRING=query,
            CONTENT_TYPE=self.headers.get("Content-Type", ""),
            CONTENT_LENGTH=str(len(body)),
            REMOTE_USER="x-access-token",
            REMOTE_ADDR=self.client_address[0],
        )
        config = (*_SERVER_CONFIG, ("core.hooksPath", str(fake.hooks)))
        env["GIT_CONFIG_COUNT"] = str(len(config))
        for i, (key, value) in enumerate(config):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
        if not workflows:
            env["FAKE_GIT_NO_WORKFLOWS"] = "1"
        if encoding := self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = encoding
        if protocol := self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = env["HTTP_GIT_PROTOCOL"] = protocol
        proc = subprocess.Popen(
            ["git", "http-backend"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        # The backend may answer before it has read everything; feed it apart.
        feeder = threading.Thread(target=_feed, args=(proc.stdin, body), daemon=True)
        feeder.start()
        status, headers, sent = 200, [], 0
        try:
            while line := proc.stdout.readline().rstrip(b"\r\n"):
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                else:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Connection", "close")
            self.end_headers()
            while chunk := proc.stdout.read(65536):
                self.wfile.write(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            proc.kill()  # the client went away (a timeout in a test)
        finally:
            proc.stdout.close()
            proc.wait()
            feeder.join()
        return status, sent


def _feed(pipe: IO[bytes], data: bytes) -> None:
    try:
        pipe.write(data)
    except BrokenPipeError:
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            pipe.close()


class _Server(ThreadingHTTPServer):
    """serve_forever's loop, woken by `stop_serving` rather than polling.

    A fake serves for a whole test: the stock loop's poll (10 ms here, so a
    stop was quick) cost 11 ms of CPU per second of serving.
    """

    daemon_threads = True

    def __init__(self, fake: FakeGitServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake
        self._stopping = threading.Event()
        self._wake, self._waker = socket.socketpair()

    def serve_until_stopped(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._wake, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is self and not self._stopping.is_set():
                        self.handle_request()  # ready: its own select returns at once

    def stop_serving(self) -> None:
        self._stopping.set()
        self._waker.send(b"\0")

    def server_close(self) -> None:
        super().server_close()
        self._wake.close()
        self._waker.close()


class FakeGitServer:
    """Serves the bare repositories under `root` over smart HTTP; a context manager."""

    def accepts(self, authorization: str | None, path: str, *, push: bool) -> bool:
        """Whether the `Authorization` header may fetch (or `push` to) `path`."""
        return authorization == basic_auth(self.token)

    def may_push_workflows(self, authorization: str | None, path: str) -> bool:
        """Whether a push with the `Authorization` header may touch workflow files."""
        return self.workflows

    def __init__(self, root: Path, *, token: str = "test-token", workflows: bool = True) -> None:
        self.root = root
        self.token = token
        # The one token's `workflows` permission (a subclass may decide per token).
        self.workflows = workflows
        self._hooks: tempfile.TemporaryDirectory[str] | None = None
        self._requests: list[GitRequest] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake git server is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def url(self, repo: str) -> str:
        """The clone URL of the bare repository at `root / repo`."""
        return f"{self.base_url}/{repo}"

    @property
    def requests(self) -> list[GitRequest]:
        """A snapshot of every request so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    def record(self, request: GitRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def __enter__(self) -> FakeGitServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def hooks(self) -> Path:
        """The server's hooks directory (its receive-pack's `core.hooksPath`)."""
        if self._hooks is None:
            raise RuntimeError("the fake git server is not running")
        return Path(self._hooks.name)

    def start(self) -> None:
        self._hooks = tempfile.TemporaryDirectory(prefix="fake-git-hooks-")
        hook = self.hooks / "pre-receive"
        hook.write_text(_WORKFLOWS_HOOK)
        hook.chmod(0o755)
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_until_stopped, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is None or self._thread is None:
            return
        self._server.stop_serving()
        self._thread.join(10)
        self._server.server_close()
        self._server = None
        self._thread = None
        if self._hooks is not None:
            self._hooks.cleanup()
            self._hooks = None
