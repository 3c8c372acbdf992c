"""Running git on the host: one hardened process at a time.

Every process gets the hardening settings on its command line (no hooks, no
fsmonitor, no file protocol, no credential helper), a clean environment, and
a token only through its own environment (`Auth`); what it says is scrubbed
of the token before anyone reads it, and a timeout kills its whole group.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from runner.errors import NeoError

__all__ = [
    "LOCAL_TIMEOUT",
    "NETWORK_TIMEOUT",
    "OFFLINE",
    "Auth",
    "GitError",
    "Result",
    "check_branch_name",
    "check_url",
    "headline",
    "run_git",
    "scrub",
]


NETWORK_TIMEOUT = 600.0


LOCAL_TIMEOUT = 120.0


# How much less CPU a background git process gets than a job's own (nice: on
# Linux a process at 10 weighs a tenth of one at 0 where both want a core).
BACKGROUND_NICENESS = 10


# Variables a git process may inherit: where programs are, where temporary
# files go, and how to reach the network (proxies, CA bundles). Nothing that
# redirects git itself (GIT_DIR, GIT_CONFIG_*, GIT_SSH_COMMAND, ...).
_INHERITED = (
    *("PATH", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH"),
    *("http_proxy", "https_proxy", "no_proxy", "all_proxy"),
    *("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"),
)


# Settings every git process gets on its command line, which overrides the
# repository's own configuration.
_HARDENING = (
    ("core.hooksPath", os.devnull),
    ("core.fsmonitor", "false"),
    ("protocol.file.allow", "never"),
    ("credential.helper", ""),  # an empty value clears every configured helper
    # Background maintenance would outlive the lock that guards a mirror.
    ("gc.autoDetach", "false"),
    ("maintenance.autoDetach", "false"),
    ("advice.detachedHead", "false"),
)


# Local operations on a tree never reach the network, whatever its remote says.
OFFLINE = (("remote.origin.promisor", "false"),)


_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")


_AUTH_FAILURE = re.compile(
    r"authentication failed|could not read (username|password)|returned error: 40[13]\b",
    re.IGNORECASE,
)


class GitError(NeoError):
    """A git operation failed; the message is one line and holds no secret."""

    kind = "git_error"


@dataclass(frozen=True, slots=True)
class Auth:
    """A token for requests under `url`, and nowhere else."""

    url: str
    token: str

    @property
    def header(self) -> str:
        pair = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        return f"Authorization: Basic {pair}"

    @property
    def secrets(self) -> tuple[str, ...]:
        pair = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        alone = base64.b64encode(self.token.encode()).decode()
        return tuple(secret for secret in (self.token, pair, alone) if secret)


@dataclass(frozen=True, slots=True)
class Result:
    code: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode(errors="replace").strip()


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return _USERINFO.sub("***@", text)


def headline(stderr: str) -> str:
    """The line of git's stderr that says what went wrong."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for marker in ("! [", "fatal:", "error:"):
        for line in lines:
            if line.startswith(marker):
                return line.removeprefix("fatal: ").removeprefix("error: ")
    useful = [line for line in lines if not line.startswith("hint:")]
    return useful[-1] if useful else "no output"


def _describe(stderr: str, auth: Auth | None) -> str:
    if auth is not None and _AUTH_FAILURE.search(stderr):
        return f"authentication failed for {auth.url} (check the token and its permissions)"
    return headline(stderr)


def _environment(auth: Auth | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {name: os.environ[name] for name in _INHERITED if name in os.environ}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    env["LC_ALL"] = "C"  # messages in English, to classify them
    if auth is not None:
        env["GIT_CONFIG_COUNT"] = "1"
        env["GIT_CONFIG_KEY_0"] = f"http.{auth.url}.extraHeader"
        env["GIT_CONFIG_VALUE_0"] = auth.header
    env.update(extra or {})
    return env


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def run_git(
    args: Sequence[str],
    *,
    what: str,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    config: Sequence[tuple[str, str]] = (),
    auth: Auth | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float | None = None,
    check: bool = True,
    background: bool = False,
) -> Result:
    """Run git with `args` and the hardening settings; raise GitError on failure.

    `what` names the operation in messages ("clone", "push", ...); `timeout`
    is by default LOCAL_TIMEOUT as it is when git runs. `background`: work
    no job is waiting for (a spare tree), run at BACKGROUND_NICENESS so that
    the jobs' own processes get the CPU first.
    """
    if timeout is None:
        timeout = LOCAL_TIMEOUT
    settings = [*_HARDENING, *config]
    if work_tree is not None:
        # The sandbox user may own the tree; an explicit --git-dir skips the
        # ownership check in the git of today, this keeps it so in any other.
        settings.append(("safe.directory", str(work_tree)))
    # Niced before git starts, so that what git starts is too.
    argv = ["nice", "-n", str(BACKGROUND_NICENESS), "git"] if background else ["git"]
    for key, value in settings:
        argv += ["-c", f"{key}={value}"]
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        argv.append(f"--work-tree={work_tree}")
    argv += args
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=work_tree or git_dir,
        env=_environment(auth, env),
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except TimeoutError:
        _kill_group(proc.pid)
        await proc.wait()
        raise GitError(f"git {what} timed out after {timeout:g} s") from None
    except BaseException:
        # Cancelled: git and whatever it started end too, and are reaped.
        _kill_group(proc.pid)
        await proc.wait()
        raise
    stderr = scrub(err.decode(errors="replace"), auth.secrets if auth else ())
    code = -9 if proc.returncode is None else proc.returncode
    if check and code != 0:
        raise GitError(f"git {what} failed: {_describe(stderr, auth)}")
    return Result(code, out, stderr)


def check_url(url: str) -> str:
    """`url` without a trailing slash; raise GitError unless it is plain http(s)."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise GitError(f"not an http(s) repository URL: {scrub(url)}")
    if "@" in parts.netloc:
        raise GitError(f"a repository URL must not carry credentials: {scrub(url)}")
    if parts.query or parts.fragment or not url.isprintable() or " " in url:
        raise GitError(f"not a plain repository URL: {scrub(url)!r}")
    return url.rstrip("/")


# Names git has called valid branch names: a job checks its work branch's
# several times, each a git process. git's verdict on a name holds for the
# process's life; a name with `@` is asked each time (`--branch` reads
# `@{-1}` against the current repository). Bounded: cleared when full.
_VALID_BRANCHES: set[str] = set()
_VALID_BRANCHES_KEPT = 4096


async def check_branch_name(name: str) -> None:
    if name in _VALID_BRANCHES:
        return
    checked = await run_git(["check-ref-format", "--branch", name], what="branch", check=False)
    if checked.code != 0 or name.startswith("-"):
        raise GitError(f"not a valid branch name: {name!r}")
    if "@" not in name:
        if len(_VALID_BRANCHES) >= _VALID_BRANCHES_KEPT:
            _VALID_BRANCHES.clear()
        _VALID_BRANCHES.add(name)
