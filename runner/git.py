"""Git on the host: clone, branch, commit, diffstat and push for one job.

Tokens reach one git process at a time through its environment; every tree
is treated as hostile (clean environment, allow-listed config, no blocking
files). docs/architecture.md, "Host git", gives the mirror and spare-tree
strategy and every protection with its reason.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import fnmatch
import hashlib
import logging
import os
import re
import secrets
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from runner.errors import NeoError

__all__ = [
    "GENERATED",
    "LOCAL_TIMEOUT",
    "NETWORK_TIMEOUT",
    "RECENT_COMMITS",
    "STALE_STAGING_SECONDS",
    "DiffStat",
    "FileStat",
    "GitError",
    "MirrorCache",
    "Staged",
    "checkout_branch",
    "clone",
    "clone_branch",
    "commit_all",
    "diffstat",
    "fetch_blobs",
    "fetch_pull_head",
    "fetch_pull_request",
    "push",
    "run_local",
    "stage_all",
]

log = logging.getLogger("neo.git")

# Commits back from the checked-out one whose blobs are fetched, so `git log
# -p`, `git show` and `git diff HEAD~N` work offline for recent history.
RECENT_COMMITS = 20

NETWORK_TIMEOUT = 600.0
LOCAL_TIMEOUT = 120.0
# git compares file and index times in whole seconds: wait this long after a
# checkout before refreshing its index (see `_make_spare`).
RACY_GIT_SECONDS = 1.1
# A spare's staging directory this old was left by a process that died.
STALE_STAGING_SECONDS = 3600.0

# How often a job waiting for another job's mirror lock looks again.
_LOCK_POLL_SECONDS = 0.02

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
# What a mirror's incremental fetch takes: new commits with their blobs, bar big ones.
_NEW_BLOBS = "--filter=blob:limit=1m"
# Fetches into a mirror keep their packs, which trees copy as whole files.
_KEEP_PACKS = (("fetch.unpackLimit", "1"), ("transfer.unpackLimit", "1"))
# Local operations on a tree never reach the network, whatever its remote says.
_OFFLINE = (("remote.origin.promisor", "false"),)
_LOCAL_CLONE = (("protocol.file.allow", "always"),)

# Untracked files that are caches and build output, never the change, in
# gitignore syntax: `git add` leaves them out of every commit made here.
GENERATED = (
    "__pycache__/",
    "*.pyc",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    "node_modules/",
    ".venv/",
    ".tox/",
    "*.egg-info/",
    ".DS_Store",
)

# Keys a tree's .git/config keeps when it is rewritten (lower case, as `git
# config --list` prints them); `branch.<name>.remote|merge` stay too.
_KEPT_KEYS = frozenset(
    {
        *("core.filemode", "core.logallrefupdates", "core.symlinks", "core.ignorecase"),
        *("core.precomposeunicode", "extensions.objectformat", "user.name", "user.email"),
    }
)
_BRANCH_KEY = re.compile(r"branch\..+\.(remote|merge)")

# Files in a git directory that git reads at start and must be regular files.
_REGULAR = ("HEAD", "config", "index", "packed-refs")
# Files in the working tree that git opens and reads while it walks it.
_READ_IN_TREE = frozenset({".gitignore", ".gitattributes", ".gitmodules"})

# Files in a git directory that make git read objects or config from elsewhere.
_FOREIGN = (
    "config.worktree",
    "commondir",
    "objects/info/alternates",
    "objects/info/http-alternates",
)

_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_IDENTITY = re.compile(r"[^<>\r\n]+ <[^<>\s]+>")
_AUTH_FAILURE = re.compile(
    r"authentication failed|could not read (username|password)|returned error: 40[13]\b",
    re.IGNORECASE,
)


class GitError(NeoError):
    """A git operation failed; the message is one line and holds no secret."""

    kind = "git_error"


@dataclass(frozen=True, slots=True)
class FileStat:
    """One file's share of a diff; a binary file counts no lines."""

    path: str
    insertions: int
    deletions: int
    binary: bool = False
    old_path: str | None = None  # set when the file was renamed from it


@dataclass(frozen=True, slots=True)
class DiffStat:
    files: tuple[FileStat, ...]

    @property
    def files_changed(self) -> int:
        return len(self.files)

    @property
    def insertions(self) -> int:
        return sum(file.insertions for file in self.files)

    @property
    def deletions(self) -> int:
        return sum(file.deletions for file in self.files)


# --- running git -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Auth:
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
class _Result:
    code: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode(errors="replace").strip()


def _scrub(text: str, secrets: Sequence[str] = ()) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return _USERINFO.sub("***@", text)


def _headline(stderr: str) -> str:
    """The line of git's stderr that says what went wrong."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for marker in ("! [", "fatal:", "error:"):
        for line in lines:
            if line.startswith(marker):
                return line.removeprefix("fatal: ").removeprefix("error: ")
    useful = [line for line in lines if not line.startswith("hint:")]
    return useful[-1] if useful else "no output"


def _describe(stderr: str, auth: _Auth | None) -> str:
    if auth is not None and _AUTH_FAILURE.search(stderr):
        return f"authentication failed for {auth.url} (check the token and its permissions)"
    return _headline(stderr)


def _environment(auth: _Auth | None, extra: Mapping[str, str] | None) -> dict[str, str]:
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


async def _git(
    args: Sequence[str],
    *,
    what: str,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    config: Sequence[tuple[str, str]] = (),
    auth: _Auth | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float | None = None,
    check: bool = True,
) -> _Result:
    """Run git with `args` and the hardening settings; raise GitError on failure.

    `what` names the operation in messages ("clone", "push", ...); `timeout`
    is by default LOCAL_TIMEOUT as it is when git runs.
    """
    if timeout is None:
        timeout = LOCAL_TIMEOUT
    settings = [*_HARDENING, *config]
    if work_tree is not None:
        # The sandbox user may own the tree; an explicit --git-dir skips the
        # ownership check in the git of today, this keeps it so in any other.
        settings.append(("safe.directory", str(work_tree)))
    argv = ["git"]
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
    stderr = _scrub(err.decode(errors="replace"), auth.secrets if auth else ())
    code = -9 if proc.returncode is None else proc.returncode
    if check and code != 0:
        raise GitError(f"git {what} failed: {_describe(stderr, auth)}")
    return _Result(code, out, stderr)


def _check_url(url: str) -> str:
    """`url` without a trailing slash; raise GitError unless it is plain http(s)."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise GitError(f"not an http(s) repository URL: {_scrub(url)}")
    if "@" in parts.netloc:
        raise GitError(f"a repository URL must not carry credentials: {_scrub(url)}")
    if parts.query or parts.fragment or not url.isprintable() or " " in url:
        raise GitError(f"not a plain repository URL: {_scrub(url)!r}")
    return url.rstrip("/")


async def _check_branch_name(name: str) -> None:
    checked = await _git(["check-ref-format", "--branch", name], what="branch", check=False)
    if checked.code != 0 or name.startswith("-"):
        raise GitError(f"not a valid branch name: {name!r}")


# --- the mirror cache --------------------------------------------------------------


class MirrorCache:
    """Per repository URL under `root`: a blob-less mirror, its lock, and a spare tree.

    Use it as an async context manager (or call `aclose`) so spare trees
    being made in the background are finished or cancelled.
    """

    def __init__(self, root: Path, *, spare_trees: bool = True) -> None:
        self.root = root
        self.spare_trees = spare_trees
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> MirrorCache:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def path(self, url: str) -> Path:
        """Where the mirror of `url` lives: a readable slug and a hash of the URL."""
        url = _check_url(url)
        digest = hashlib.sha256(url.encode()).hexdigest()[:20]
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", urlsplit(url).path.strip("/"))[-60:]
        return self.root / f"{slug.strip('.-') or 'repo'}-{digest}.git"

    def spare_path(self, url: str) -> Path:
        """Where the ready working tree of `url` waits for the next clone."""
        return self.path(url).with_suffix(".spare")

    @contextlib.asynccontextmanager
    async def locked(self, url: str) -> AsyncIterator[Path]:
        """Hold the mirror of `url` exclusively; yield its path (it may not exist yet)."""
        mirror = self.path(url)
        await asyncio.to_thread(self.root.mkdir, mode=0o700, parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        fd = os.open(mirror.with_suffix(".lock"), flags, 0o600)
        try:
            # Polled rather than blocking in a thread, so a cancelled job stops waiting.
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await asyncio.sleep(_LOCK_POLL_SECONDS)
            yield mirror
        finally:
            os.close(fd)  # releases the lock

    async def wait_idle(self) -> None:
        """Wait until no spare tree is being made."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def aclose(self) -> None:
        """Cancel the spare trees being made and wait for them to stop."""
        for task in self._tasks:
            task.cancel()
        await self.wait_idle()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _replenish(self, url: str, commit: str) -> None:
        if self.spare_trees:
            self._spawn(self._make_spare(url, commit))

    async def _make_spare(self, url: str, commit: str) -> None:
        """Check out `commit` (whose blobs the mirror holds) as the spare tree of `url`."""
        spare = self.spare_path(url)
        # Each maker stages apart: another process may be making one too.
        staging = spare.with_name(f"{spare.name}.tmp-{secrets.token_hex(4)}")
        try:
            async with self.locked(url) as mirror:
                await asyncio.to_thread(_remove_stale_staging, spare)
                if await asyncio.to_thread(spare.exists):
                    return
                await _clone_mirror(mirror, staging, LOCAL_TIMEOUT)
            git_dir = await _sanitize(staging, origin=url)
            await _git(
                ["checkout", "--quiet", "--detach", commit],
                what="checkout",
                git_dir=git_dir,
                work_tree=staging,
                config=_OFFLINE,
            )
            await _prune_branches(git_dir, keep=None)
            # Files written in the same second as the index are "racily
            # clean": the next checkout would re-read every one of them. A
            # refresh once the clock has moved on records them as clean.
            await asyncio.sleep(RACY_GIT_SECONDS)
            await _git(
                ["update-index", "-q", "--refresh"],
                what="update-index",
                git_dir=git_dir,
                work_tree=staging,
                config=_OFFLINE,
                check=False,
            )
            async with self.locked(url):
                if not await asyncio.to_thread(spare.exists):
                    await asyncio.to_thread(staging.rename, spare)
        except (GitError, OSError) as error:
            log.warning("no spare tree for %s: %s", _scrub(url), error)
        finally:
            await asyncio.to_thread(_remove_tree, staging)

    async def _update(self, mirror: Path, auth: _Auth, timeout: float) -> None:
        """Create the mirror of `auth.url`, or fetch what changed; under its lock."""
        if await asyncio.to_thread((mirror / "HEAD").is_file):
            # New commits bring their new blobs (bar big ones) in the same
            # round trip: the next clone wants them, and old ones stay out.
            await _git(
                ["fetch", "--quiet", "--prune", "--no-write-fetch-head", _NEW_BLOBS, "origin"],
                what="fetch",
                git_dir=mirror,
                config=_KEEP_PACKS,
                auth=auth,
                timeout=timeout,
            )
            return
        # Built aside and renamed, so a crash never leaves a half-made mirror.
        staging = mirror.with_suffix(".git-tmp")
        await asyncio.to_thread(_remove_tree, staging)
        try:
            # --bare takes branches and tags, not GitHub's refs/pull/*: a busy
            # repository has thousands, and a job fetches the one it needs.
            await _git(
                ["clone", "--quiet", "--bare", "--filter=blob:none", "--", auth.url, str(staging)],
                what="clone",
                auth=auth,
                timeout=timeout,
            )
            for refspec in ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"):
                args = ["config", "--add", "remote.origin.fetch", refspec]
                await _git(args, what="config", git_dir=staging)
            await asyncio.to_thread(staging.rename, mirror)
        finally:
            await asyncio.to_thread(_remove_tree, staging)

    async def _take_spare(self, mirror: Path, url: str, dest: Path) -> bool:
        """Move the spare tree of `url` to `dest` with the mirror's new objects and refs.

        The caller holds the lock. False when there is no spare to take.
        """
        spare = self.spare_path(url)
        if not self.spare_trees or not await asyncio.to_thread(_movable, spare, dest):
            return False
        await asyncio.to_thread(_move, spare, dest)
        await asyncio.to_thread(_copy_objects, mirror / "objects", dest / ".git" / "objects")
        heads = await _refs(mirror, "refs/heads/", "refs/tags/")
        wanted = {
            name.replace("refs/heads/", "refs/remotes/origin/", 1): sha
            for name, sha in heads.items()
        }
        present = await _refs(dest / ".git", "refs/remotes/origin/", "refs/tags/")
        present.pop("refs/remotes/origin/HEAD", None)
        commands = [f"update {name} {sha}\n" for name, sha in wanted.items()]
        commands += [f"delete {name}\n" for name in present.keys() - wanted.keys()]
        await _git(
            ["update-ref", "--stdin"],
            what="update-ref",
            git_dir=dest / ".git",
            stdin="".join(commands).encode(),
        )
        await asyncio.to_thread(_point_origin_head, mirror, dest / ".git", wanted)
        return True


async def _clone_mirror(mirror: Path, dest: Path, timeout: float) -> None:
    """Copy (never hard-link) the mirror's objects and refs into a new tree at `dest`."""
    await _git(
        [
            "clone",
            "--quiet",
            "--local",
            "--no-hardlinks",
            "--no-checkout",
            "--",
            str(mirror),
            str(dest),
        ],
        what="clone",
        config=_LOCAL_CLONE,
        timeout=timeout,
    )


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _remove_stale_staging(spare: Path) -> None:
    """Remove the half-made spares of `spare` that a killed process left behind.

    A spare is staged apart and renamed in within seconds to minutes; one
    untouched for longer than STALE_STAGING_SECONDS belongs to nobody.
    """
    cutoff = time.time() - STALE_STAGING_SECONDS
    for staging in spare.parent.glob(f"{spare.name}.tmp-*"):
        with contextlib.suppress(OSError):
            if staging.stat().st_mtime < cutoff:
                _remove_tree(staging)


def _is_empty_or_absent(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def _movable(spare: Path, dest: Path) -> bool:
    """Whether `spare` exists and a rename can carry it to `dest`."""
    if not spare.is_dir() or not dest.parent.is_dir():
        return False
    return spare.stat().st_dev == dest.parent.stat().st_dev


def _move(spare: Path, dest: Path) -> None:
    if dest.exists():
        dest.rmdir()  # empty, checked by the caller
    spare.rename(dest)


def _point_origin_head(mirror: Path, git_dir: Path, refs: Mapping[str, str]) -> None:
    """Point refs/remotes/origin/HEAD at the mirror's default branch, as a clone does.

    A symbolic ref is always a loose file holding `ref: <target>`.
    """
    target = (mirror / "HEAD").read_text().strip().removeprefix("ref: ")
    target = target.replace("refs/heads/", "refs/remotes/origin/", 1)
    symref = git_dir / "refs" / "remotes" / "origin" / "HEAD"
    if target in refs:
        symref.parent.mkdir(parents=True, exist_ok=True)
        symref.write_text(f"ref: {target}\n")
    else:
        symref.unlink(missing_ok=True)


def _copy_objects(source: Path, target: Path) -> None:
    """Copy the object files `target` lacks from `source`; index files last.

    Packs and loose objects are immutable and named by their content, so a
    file of the same name is the same file.
    """
    pending: list[tuple[Path, Path]] = []
    for directory in source.iterdir():
        if directory.name == "pack" or re.fullmatch(r"[0-9a-f]{2}", directory.name):
            for file in directory.iterdir():
                # Packs and their companions; not .keep locks or a multi-pack index.
                wanted = directory.name != "pack" or file.name.startswith("pack-")
                if wanted and not file.name.endswith(".keep") and file.is_file():
                    pending.append((file, target / directory.name / file.name))
    # git finds a pack by its .idx: it appears only once its .pack is whole.
    pending.sort(key=lambda pair: pair[0].suffix == ".idx")
    for file, copy in pending:
        if not copy.exists():
            copy.parent.mkdir(exist_ok=True)
            shutil.copyfile(file, copy)


async def _refs(git_dir: Path, *prefixes: str) -> dict[str, str]:
    listed = await _git(
        ["for-each-ref", "--format=%(refname) %(objectname)", *prefixes],
        what="for-each-ref",
        git_dir=git_dir,
    )
    return dict(line.split(" ", 1) for line in listed.text.splitlines() if line)


async def _prune_branches(git_dir: Path, keep: str | None) -> None:
    """Delete every local branch but `keep`: a tree starts with the one it is on."""
    branches = await _refs(git_dir, "refs/heads/")
    doomed = [name for name in branches if name != f"refs/heads/{keep}"]
    if doomed:
        commands = "".join(f"delete {name}\n" for name in doomed)
        stdin = commands.encode()
        await _git(["update-ref", "--stdin"], what="update-ref", git_dir=git_dir, stdin=stdin)


async def _default_branch(mirror: Path, auth: _Auth, timeout: float) -> str:
    """The repository's default branch: the mirror's HEAD, asked again once it dangles.

    The mirror learns it when it is created; a renamed default branch is
    pruned by the next fetch, and then the server is asked. (A job that knows
    the branch from its webhook passes it as `ref` instead.)
    """
    head = await _git(["symbolic-ref", "HEAD"], what="symbolic-ref", git_dir=mirror)
    exists = await _git(
        ["rev-parse", "--verify", "--quiet", head.text],
        what="rev-parse",
        git_dir=mirror,
        check=False,
    )
    if exists.code == 0:
        return head.text.removeprefix("refs/heads/")
    listed = await _git(
        ["ls-remote", "--symref", "origin", "HEAD"],
        what="ls-remote",
        git_dir=mirror,
        auth=auth,
        timeout=timeout,
    )
    match = re.search(r"^ref: (refs/heads/\S+)\tHEAD$", listed.text, re.MULTILINE)
    if match is None:
        raise GitError("git ls-remote failed: the repository has no default branch")
    await _git(["symbolic-ref", "HEAD", match.group(1)], what="symbolic-ref", git_dir=mirror)
    return match.group(1).removeprefix("refs/heads/")


async def _resolve(mirror: Path, ref: str, auth: _Auth, timeout: float) -> tuple[str, str | None]:
    """The commit `ref` names, and the branch it is (None when it is no branch).

    A full ref or commit id the mirror lacks (a pull request head, a merge
    commit) is fetched.
    """
    candidates: list[tuple[str, str | None]] = []
    if ref.startswith("refs/"):
        branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
        candidates.append((ref, branch))
    candidates += [(f"refs/heads/{ref}", ref), (f"refs/tags/{ref}", None)]
    if _SHA.fullmatch(ref):
        candidates.append((ref, None))
    for name, branch in candidates:
        found = await _git(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}"],
            what="rev-parse",
            git_dir=mirror,
            check=False,
        )
        if found.code == 0:
            return found.text, branch
    if not (ref.startswith("refs/") or _SHA.fullmatch(ref)):
        raise GitError(f"git clone failed: no branch or tag named {ref!r} in the repository")
    await _git(
        ["fetch", "--quiet", "--no-tags", "origin", ref],
        what="fetch",
        git_dir=mirror,
        config=_KEEP_PACKS,
        auth=auth,
        timeout=timeout,
    )
    args = ["rev-parse", "--verify", "FETCH_HEAD^{commit}"]
    return (await _git(args, what="rev-parse", git_dir=mirror)).text, None


async def _fetch_blobs(
    git_dir: Path,
    commit: str,
    auth: _Auth,
    timeout: float,
    *,
    depth: int = RECENT_COMMITS,
    config: Sequence[tuple[str, str]] = _KEEP_PACKS,
) -> int:
    """Fetch the blobs of `commit` and the `depth - 1` commits before it that `git_dir`
    lacks, in one request; how many."""
    listed = await _git(
        ["rev-list", "--objects", "--missing=print", f"--max-count={depth}", commit, "--"],
        what="rev-list",
        git_dir=git_dir,
        timeout=timeout,
    )
    missing = [line[1:] for line in listed.text.splitlines() if line.startswith("?")]
    if missing:
        # What git's own lazy fetch runs, for all of them in one request.
        await _git(
            [
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                "--stdin",
                "origin",
            ],
            what="fetch",
            git_dir=git_dir,
            config=[*config, ("fetch.negotiationAlgorithm", "noop")],
            auth=auth,
            stdin="".join(f"{oid}\n" for oid in missing).encode(),
            timeout=timeout,
        )
    return len(missing)


# --- working trees -----------------------------------------------------------------


def _git_dir(tree: Path) -> Path:
    """`tree`'s git directory; raise GitError unless it is a real directory in it."""
    git_dir = tree / ".git"
    try:
        mode = git_dir.lstat().st_mode
    except FileNotFoundError:
        raise GitError(f"not a git working tree: {tree}") from None
    if not stat.S_ISDIR(mode):
        raise GitError(f"not a git working tree (.git is not a directory): {tree}")
    return git_dir


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _config_text(entries: Sequence[tuple[str, str]]) -> str:
    """A git config file holding `entries` (dotted keys), grouped by section."""
    sections: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for key, value in entries:
        section, _, rest = key.partition(".")
        subsection, _, name = rest.rpartition(".")
        sections.setdefault((section, subsection), []).append((name, value))
    lines: list[str] = []
    for (section, subsection), items in sections.items():
        lines.append(f"[{section} {_quote(subsection)}]" if subsection else f"[{section}]")
        lines += [f"\t{name} = {_quote(value)}" for name, value in items]
    return "\n".join(lines) + "\n"


def _kind(mode: int) -> str | None:
    """What a file that is neither regular nor a directory is, for a message; else None."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _check_git_dir(git_dir: Path) -> None:
    """Refuse what in `git_dir` would lead git out of the tree or block it, and
    remove the files that point git at other object stores or configs.

    A symbolic link is followed out of the tree; a FIFO (or socket, or device)
    blocks the git process that opens it until its timeout; the files git
    reads first must be regular files. All are refused before git runs.
    """
    for name in _REGULAR:
        try:
            mode = (git_dir / name).lstat().st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            what = _kind(mode) or "a directory"
            raise GitError(f"refusing a working tree whose .git/{name} is {what}")
    for directory, dirs, files in os.walk(git_dir):
        for name in (*dirs, *files):
            path = os.path.join(directory, name)
            found = _kind(os.lstat(path).st_mode)
            if found is not None:
                where = os.path.relpath(path, git_dir.parent)
                raise GitError(f"refusing a working tree whose {where} is {found}")
    for name in _FOREIGN:
        with contextlib.suppress(FileNotFoundError):
            (git_dir / name).unlink()


def _is_git_name(name: str) -> bool:
    # git takes `.git` in any case for a git directory (core.protectNTFS).
    return name.lower() == ".git"


def _check_work_tree(tree: Path) -> tuple[str, ...]:
    """Refuse the files git would block on in `tree` (outside its .git); return the
    directories below the top that hold a `.git` of their own, sorted.

    git opens every .gitignore and .gitattributes on its way: a FIFO there
    blocks it. A directory holding a `.git` (a `git init`, a copied repository,
    a `gitdir:` file pointing anywhere) is not looked into: git is told to
    leave it alone (`_add_all`), so what is in it is never read.
    """
    embedded: list[str] = []
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(tree / relative) as listing:
                entries = list(listing)
        except OSError:
            continue  # git cannot read it either, and skips it
        if relative and any(_is_git_name(entry.name) for entry in entries):
            embedded.append(relative)
            continue
        for entry in entries:
            path = f"{relative}/{entry.name}" if relative else entry.name
            if path == ".git":
                continue  # checked by _check_git_dir
            if entry.is_dir(follow_symlinks=False):
                pending.append(path)
            elif entry.name in _READ_IN_TREE:
                # Through a link too: an older git follows it, and stat opens nothing.
                with contextlib.suppress(OSError):
                    kind = _kind(os.stat(tree / path).st_mode)
                    if kind is not None:
                        raise GitError(f"refusing a working tree whose {path} is {kind}")
    return tuple(sorted(embedded))


def _replace(path: Path, text: str) -> None:
    """Write `path` atomically, owned like its directory (the sandbox user may own it)."""
    temp = path.with_name(f"{path.name}.neo-tmp")
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    with contextlib.suppress(OSError):
        owner = path.parent.stat()
        os.chown(temp, owner.st_uid, owner.st_gid)
    os.replace(temp, path)


async def _sanitize(tree: Path, *, origin: str | None = None, branch: str | None = None) -> Path:
    """Check `tree` and rewrite its .git/config to the allow-listed keys; its git directory.

    `origin`, a URL the caller trusts, replaces the remote's; `branch` gets
    origin's branch of that name as its upstream.
    """
    git_dir, _ = await _prepare(tree, origin=origin, branch=branch)
    return git_dir


async def _prepare(
    tree: Path, *, origin: str | None = None, branch: str | None = None
) -> tuple[Path, tuple[str, ...]]:
    """`_sanitize`, and the directories of repositories embedded in `tree`."""
    git_dir = _git_dir(tree)
    await asyncio.to_thread(_check_git_dir, git_dir)
    embedded = await asyncio.to_thread(_check_work_tree, tree)
    config = git_dir / "config"
    # `--file` reads no include; a crafted file is only ever parsed, never obeyed.
    listed = await _git(
        ["config", "--file", str(config), "--null", "--list"], what="config", check=False
    )
    existing = [
        (key, value)
        for key, _, value in (
            item.partition("\n") for item in listed.stdout.decode(errors="replace").split("\0")
        )
        if key and "\n" not in value
    ]
    entries = [("core.repositoryformatversion", "0"), ("core.bare", "false")]
    entries += [(k, v) for k, v in existing if k in _KEPT_KEYS or _BRANCH_KEY.fullmatch(k)]
    if any(key == "extensions.objectformat" for key, _ in entries):
        entries[0] = ("core.repositoryformatversion", "1")
    url = origin or next((v for k, v in existing if k == "remote.origin.url"), None)
    if url is not None:
        entries += [
            ("remote.origin.url", url),
            ("remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"),
            ("remote.origin.promisor", "true"),
            ("remote.origin.partialclonefilter", "blob:none"),
        ]
    if branch is not None:
        entries = [(k, v) for k, v in entries if not k.startswith(f"branch.{branch}.")]
        entries += [(f"branch.{branch}.remote", "origin")]
        entries += [(f"branch.{branch}.merge", f"refs/heads/{branch}")]
    await asyncio.to_thread(_replace, config, _config_text(entries))
    return git_dir, embedded


async def clone(
    url: str,
    dest: Path,
    *,
    token: str,
    cache: MirrorCache,
    ref: str | None = None,
    timeout: float = NETWORK_TIMEOUT,
) -> str:
    """Make `dest` a working tree of `url` at `ref`; return the checked-out commit.

    `ref` is a branch (checked out as a local branch tracking origin's), a
    tag, a full ref such as `refs/pull/7/head`, or a commit id (those three
    detached); None is the repository's default branch. `dest` must not exist
    or be an empty directory; after a failure it may hold a partial tree,
    which the caller discards.
    """
    commit, _ = await _clone(url, dest, token=token, cache=cache, ref=ref, timeout=timeout)
    return commit


async def clone_branch(
    url: str,
    dest: Path,
    *,
    token: str,
    cache: MirrorCache,
    branch: str,
    base: str | None = None,
    timeout: float = NETWORK_TIMEOUT,
) -> tuple[str, bool]:
    """`branch` of `url` in `dest` when the repository has it, else `base` (a ref as
    `clone` takes it); the checked-out commit, and whether it is `branch`.

    One update of the mirror decides, where trying `branch` and then `base`
    with `clone` would update it twice. The caller makes `branch` when it
    was not there (`checkout_branch`).
    """
    return await _clone(
        url, dest, token=token, cache=cache, ref=base, prefer=branch, timeout=timeout
    )


async def _clone(
    url: str,
    dest: Path,
    *,
    token: str,
    cache: MirrorCache,
    ref: str | None,
    prefer: str | None = None,
    timeout: float,
) -> tuple[str, bool]:
    """Clone branch `prefer` if the mirror has it after its update, else `ref`."""
    url = _check_url(url)
    if not await asyncio.to_thread(_is_empty_or_absent, dest):
        raise GitError(f"clone destination is not empty: {dest}")
    auth = _Auth(url, token)
    async with cache.locked(url) as mirror:
        await cache._update(mirror, auth, timeout)
        found = None if prefer is None else await _branch_commit(mirror, prefer)
        if found is not None:
            commit, branch = found, prefer
        else:
            if ref is None:
                ref = await _default_branch(mirror, auth, timeout)
            commit, branch = await _resolve(mirror, ref, auth, timeout)
        await _fetch_blobs(mirror, commit, auth, timeout)
        # Under the lock: a fetch's repack could otherwise swap packs mid-copy.
        from_spare = await cache._take_spare(mirror, url, dest)
        if not from_spare:
            await _clone_mirror(mirror, dest, timeout)
    git_dir = await _sanitize(dest, origin=url, branch=branch)
    await _git(
        ["checkout", "--quiet", *(["-B", branch] if branch else ["--detach"]), commit],
        what="checkout",
        git_dir=git_dir,
        work_tree=dest,
        config=_OFFLINE,
        timeout=timeout,
    )
    if not from_spare:  # a spare tree has no branch of its own
        await _prune_branches(git_dir, keep=branch)
    cache._replenish(url, commit)
    return commit, found is not None


async def _branch_commit(mirror: Path, branch: str) -> str | None:
    """The commit of branch `branch` in the mirror; None when it has no such branch."""
    await _check_branch_name(branch)
    found = await _git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"refs/heads/{branch}^{{commit}}"],
        what="rev-parse",
        git_dir=mirror,
        check=False,
    )
    return found.text if found.code == 0 else None


async def checkout_branch(
    tree: Path, name: str, *, start: str | None = None, timeout: float = LOCAL_TIMEOUT
) -> None:
    """Create branch `name` at `start` (default HEAD), or reset it there; check it out.

    Local changes are carried over when git can. `start` must be a commit
    whose files are present (the cloned one or one made since).
    """
    await _check_branch_name(name)
    git_dir = await _sanitize(tree)
    if start is not None and start.startswith("-"):
        raise GitError(f"not a valid start point: {start!r}")
    # The `--` ends the revisions: `start` is never taken for a path.
    start_at = [start, "--"] if start is not None else []
    await _git(
        ["checkout", "--quiet", "-B", name, *start_at],
        what="checkout",
        git_dir=git_dir,
        work_tree=tree,
        config=_OFFLINE,
        timeout=timeout,
    )


async def fetch_pull_request(
    tree: Path,
    number: int,
    *,
    url: str,
    token: str,
    branch: str | None = None,
    timeout: float = NETWORK_TIMEOUT,
) -> str:
    """Fetch `refs/pull/<number>/head` from `url` and check it out as a local branch.

    The branch is `branch`, by default `pull/<number>`; returns the head
    commit. `url` is passed in rather than read from the tree, whose
    configuration the sandbox may have changed: the token goes only where the
    caller says.
    """
    if number < 1:
        raise GitError(f"not a pull request number: {number}")
    url = _check_url(url)
    name = branch or f"pull/{number}"
    await _check_branch_name(name)
    auth = _Auth(url, token)
    git_dir = await _sanitize(tree, origin=url)
    remote_ref = f"refs/remotes/origin/pull/{number}"
    await _git(
        [
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "origin",
            f"+refs/pull/{number}/head:{remote_ref}",
        ],
        what="fetch",
        git_dir=git_dir,
        work_tree=tree,
        auth=auth,
        timeout=timeout,
    )
    # The checkout lazily fetches the blobs the head adds, with the same token.
    await _git(
        ["checkout", "--quiet", "-B", name, remote_ref],
        what="checkout",
        git_dir=git_dir,
        work_tree=tree,
        auth=auth,
        timeout=timeout,
    )
    return (await _git(["rev-parse", "HEAD"], what="rev-parse", git_dir=git_dir)).text


async def run_local(
    tree: Path, *args: str, check: bool = True, stdin: bytes | None = None
) -> bytes:
    """Run an offline git command in `tree` under the same protections as
    every operation here (sanitised config, no hooks, no lazy fetch); its stdout.

    For steps this module has no function for (reset, restore, diff).
    """
    git_dir = await _sanitize(tree)
    result = await _git(
        args,
        what=args[0] if args else "git",
        git_dir=git_dir,
        work_tree=tree,
        config=_OFFLINE,
        stdin=stdin,
        check=check,
    )
    return result.stdout


async def fetch_pull_head(
    tree: Path, number: int, *, url: str, token: str, timeout: float = NETWORK_TIMEOUT
) -> str:
    """Fetch `refs/pull/<number>/head` from `url` into `tree`, its commits and trees only
    (no blob, no checkout); the head commit, also at `refs/remotes/origin/pull/<number>`.

    `url` is passed in rather than read from the tree, whose configuration the
    sandbox may have changed: the token goes only where the caller says.
    """
    if number < 1:
        raise GitError(f"not a pull request number: {number}")
    url = _check_url(url)
    git_dir = await _sanitize(tree, origin=url)
    remote_ref = f"refs/remotes/origin/pull/{number}"
    await _git(
        [
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "origin",
            f"+refs/pull/{number}/head:{remote_ref}",
        ],
        what="fetch",
        git_dir=git_dir,
        work_tree=tree,
        auth=_Auth(url, token),
        timeout=timeout,
    )
    return (await _git(["rev-parse", remote_ref], what="rev-parse", git_dir=git_dir)).text


async def fetch_blobs(
    tree: Path,
    commit: str,
    *,
    url: str,
    token: str,
    depth: int = 1,
    timeout: float = NETWORK_TIMEOUT,
) -> int:
    """Fetch, in one request, the blobs `tree` lacks for `commit` and the `depth - 1`
    commits before it; how many. After it, their checkout needs no network."""
    url = _check_url(url)
    git_dir = await _sanitize(tree, origin=url)
    return await _fetch_blobs(git_dir, commit, _Auth(url, token), timeout, depth=depth, config=())


@contextlib.contextmanager
def _generated_excludes() -> Iterator[str]:
    """A file of `GENERATED` patterns outside the tree, for `core.excludesFile`."""
    with tempfile.TemporaryDirectory(prefix="neo-git-") as directory:
        path = os.path.join(directory, "excludes")
        with open(path, "w") as handle:
            handle.write("".join(f"{pattern}\n" for pattern in GENERATED))
        yield path


def _leaving_out(embedded: Sequence[str]) -> bytes:
    # A pathspec that only excludes means "everything else"; from stdin, for any number.
    return b"".join(b":(top,exclude,literal)" + os.fsencode(path) + b"\0" for path in embedded)


async def _add_all(run: Callable[..., Awaitable[_Result]], embedded: Sequence[str]) -> None:
    """`git add --all`, but for the `embedded` directories, which git does not look
    into, and untracked generated files."""
    with _generated_excludes() as excludes:
        config = (("core.excludesFile", excludes),)
        if not embedded:
            await run(["add", "--all"], config=config)
            return
        await run(
            ["add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul"],
            stdin=_leaving_out(embedded),
            config=config,
        )


async def _untracked(run: Callable[..., Awaitable[_Result]], embedded: Sequence[str]) -> list[str]:
    """Untracked files the repository's own ignore rules do not ignore, but in `embedded`."""
    # The embedded repositories are left out by pathspec, as `git add` leaves
    # them: otherwise git reads their `.git`, which may be a FIFO it blocks on.
    excluded = [f":(top,exclude,literal){path}" for path in embedded]
    listed = await run(
        ["ls-files", "-z", "--others", "--exclude-standard", "--", *excluded],
        config=(("core.excludesFile", os.devnull),),
    )
    # git lists an embedded repository as its directory, never what is in it.
    inside = tuple(f"{directory}/" for directory in embedded)
    paths = listed.stdout.decode(errors="surrogateescape").split("\0")
    return [path for path in paths if path and not path.startswith(inside)]


def _generated_kind(path: str) -> str:
    """Which of `GENERATED` left `path` out: its outermost matching directory, else its name."""
    *directories, name = path.split("/")
    for part in directories:
        for pattern in GENERATED:
            if pattern.endswith("/") and fnmatch.fnmatchcase(part, pattern[:-1]):
                return pattern
    for pattern in GENERATED:
        if not pattern.endswith("/") and fnmatch.fnmatchcase(name, pattern):
            return pattern
    return directories[0] + "/" if directories else name


@dataclass(frozen=True, slots=True)
class Staged:
    """What `stage_all` left out of the index."""

    # Directories below the top holding a git repository of their own, sorted.
    embedded: tuple[str, ...] = ()
    # Untracked caches and build output: each kind (a pattern of `GENERATED`)
    # with how many files, in the order of `GENERATED`.
    generated: tuple[tuple[str, int], ...] = ()


async def stage_all(tree: Path, *, timeout: float = LOCAL_TIMEOUT) -> Staged:
    """Stage every change (deletions included) but repositories embedded in the tree
    and untracked generated files; say what was left out.

    A directory holding a `.git` of its own (`git init`, a copied repository,
    a `gitdir:` file) would be staged as a gitlink: a commit no remote has.
    Nothing in it is staged; what the index holds there stays as it was.
    """
    git_dir, embedded = await _prepare(tree)

    async def run(
        args: Sequence[str],
        *,
        stdin: bytes | None = None,
        config: Sequence[tuple[str, str]] = (),
    ) -> _Result:
        return await _git(
            args,
            what=args[0],
            git_dir=git_dir,
            work_tree=tree,
            config=(*_OFFLINE, *config),
            stdin=stdin,
            timeout=timeout,
        )

    await _add_all(run, embedded)
    # Everything else is staged now: what is still untracked, and not ignored
    # by the repository itself, was left out as generated.
    counts: dict[str, int] = {}
    for path in await _untracked(run, embedded):
        kind = _generated_kind(path)
        counts[kind] = counts.get(kind, 0) + 1
    order = {pattern: index for index, pattern in enumerate(GENERATED)}
    generated = sorted(counts.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))
    return Staged(embedded, tuple(generated))


async def commit_all(
    tree: Path,
    message: str,
    *,
    author_name: str,
    author_email: str,
    co_authors: Sequence[str] = (),
    timeout: float = LOCAL_TIMEOUT,
) -> str | None:
    """Stage every change (deletions included) and commit it; the new sha, or None.

    The commit is authored and committed by `author_name <author_email>` (the
    bot), with a `Co-authored-by: Name <email>` trailer per co-author. No hook
    runs. Repositories embedded in the tree and untracked generated files are
    left out, as by `stage_all`.
    """
    if not message.strip():
        raise GitError("the commit message is empty")
    if not _IDENTITY.fullmatch(f"{author_name} <{author_email}>"):
        raise GitError(f"not a valid commit identity: {author_name!r} <{author_email}>")
    trailers: list[str] = []
    for co_author in dict.fromkeys(co_authors):
        if not _IDENTITY.fullmatch(co_author):
            raise GitError(f"not a valid co-author (Name <email>): {co_author!r}")
        trailers += ["--trailer", f"Co-authored-by: {co_author}"]
    git_dir, embedded = await _prepare(tree)

    async def run(
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        check: bool = True,
        config: Sequence[tuple[str, str]] = (),
    ) -> _Result:
        return await _git(
            args,
            what=args[0],
            git_dir=git_dir,
            work_tree=tree,
            config=(*_OFFLINE, *config),
            env=env,
            stdin=stdin,
            timeout=timeout,
            check=check,
        )

    await _add_all(run, embedded)
    staged = await run(["diff", "--cached", "--quiet", "--no-ext-diff"], check=False)
    if staged.code == 0:
        return None
    if staged.code != 1:
        raise GitError(f"git diff failed: {_headline(staged.stderr)}")
    identity = {"GIT_AUTHOR_NAME": author_name, "GIT_AUTHOR_EMAIL": author_email}
    identity |= {"GIT_COMMITTER_NAME": author_name, "GIT_COMMITTER_EMAIL": author_email}
    await run(
        [
            "commit",
            "--quiet",
            "--no-verify",
            "--no-gpg-sign",
            "--cleanup=strip",
            "--message",
            message,
            *trailers,
        ],
        env=identity,
    )
    return (await run(["rev-parse", "HEAD"])).text


def _parse_numstat(output: bytes) -> tuple[FileStat, ...]:
    """`git diff --numstat -z` output as FileStats."""
    fields = output.decode(errors="surrogateescape").split("\0")
    files: list[FileStat] = []
    i = 0
    while i < len(fields) and fields[i]:
        added, deleted, path = fields[i].split("\t", 2)
        old_path = None
        if not path:  # a rename: the old and the new path follow
            old_path, path = fields[i + 1], fields[i + 2]
            i += 2
        i += 1
        binary = added == "-"
        insertions, deletions = (0, 0) if binary else (int(added), int(deleted))
        files.append(FileStat(path, insertions, deletions, binary, old_path))
    return tuple(files)


async def diffstat(
    tree: Path, base: str, *, head: str = "HEAD", timeout: float = LOCAL_TIMEOUT
) -> DiffStat:
    """What the commits from `base` to `head` changed, file by file."""
    git_dir = await _sanitize(tree)
    result = await _git(
        [
            "diff",
            "--numstat",
            "-z",
            "--find-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--end-of-options",
            base,
            head,
        ],
        what="diff",
        git_dir=git_dir,
        work_tree=tree,
        config=_OFFLINE,
        timeout=timeout,
    )
    return DiffStat(_parse_numstat(result.stdout))


async def push(
    tree: Path,
    branch: str,
    *,
    url: str,
    token: str,
    force: bool = False,
    timeout: float = NETWORK_TIMEOUT,
) -> None:
    """Push local `branch` to the branch of the same name at `url`."""
    url = _check_url(url)
    await _check_branch_name(branch)
    git_dir = await _sanitize(tree)
    refspec = f"{'+' if force else ''}refs/heads/{branch}:refs/heads/{branch}"
    await _git(
        ["push", "--quiet", "--no-verify", "--", url, refspec],
        what="push",
        git_dir=git_dir,
        work_tree=tree,
        config=_OFFLINE,
        auth=_Auth(url, token),
        timeout=timeout,
    )
