"""runner.git against the real git CLI and a real smart-HTTP server (git http-backend)."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest

from runner.errors import NeoError
from runner.git import (
    LOCAL_TIMEOUT,
    STALE_STAGING_SECONDS,
    Author,
    DiffStat,
    FileStat,
    GitError,
    MirrorCache,
    Staged,
    checkout_branch,
    clone,
    clone_branch,
    commit_all,
    commit_staged,
    diffstat,
    fetch_pull_request,
    push,
    run_local,
    stage_all,
    trusting,
)
from runner.git.process import BACKGROUND_NICENESS, run_git
from tests.fakes import (
    FakeGitServer,
    add_commit,
    file_content,
    file_path,
    git_env,
    make_pull_request,
    make_repo,
)

TOKEN = "ghs_S3cretTokenForTheTests0123456789abcd"
WRONG = "ghs_NotTheRightToken000000000000000000000"
# Every form the token could leak in: raw, and base64 as it travels in the header.
LEAKS = (
    TOKEN.encode(),
    base64.b64encode(f"x-access-token:{TOKEN}".encode()),
    base64.b64encode(TOKEN.encode()),
)
BOT_NAME, BOT_EMAIL = "neo[bot]", "neo-bot@users.noreply.github.com"
BOT = Author(BOT_NAME, BOT_EMAIL)


async def commit(tree: Path, message: str, co_authors: Sequence[str] = ()) -> str | None:
    """commit_all as the bot."""
    return await commit_all(tree, message, author=BOT, co_authors=co_authors)


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, env=git_env(), check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode().strip()


def files_holding_secrets(root: Path) -> list[Path]:
    """Every regular file under `root` (.git included) that holds the token in any form."""
    found = []
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                if any(leak in data for leak in LEAKS):
                    found.append(path)
    return found


@pytest.fixture
def served(tmp_path: Path) -> Path:
    return tmp_path / "served"


@pytest.fixture
def origin(served: Path) -> Path:
    """The repository on the server: 20 files, 3 commits on main."""
    repo = served / "octo" / "hello.git"
    make_repo(repo, files=20, commits=3)
    return repo


@pytest.fixture
def server(served: Path, origin: Path) -> Iterator[FakeGitServer]:
    with FakeGitServer(served, token=TOKEN) as fake:
        yield fake


@pytest.fixture
def url(server: FakeGitServer) -> str:
    return server.url("octo/hello.git")


@pytest.fixture
async def cache(tmp_path: Path) -> AsyncIterator[MirrorCache]:
    async with MirrorCache(tmp_path / "cache") as mirrors:
        yield mirrors


@pytest.fixture
async def tree(tmp_path: Path, url: str, cache: MirrorCache) -> Path:
    """A clone of the origin's main branch."""
    dest = tmp_path / "tree"
    await clone(url, dest, token=TOKEN, cache=cache)
    return dest


def assert_one_safe_line(error: GitError) -> None:
    message = str(error)
    assert "\n" not in message
    assert all(leak.decode() not in message for leak in LEAKS)
    assert error.kind == "git_error"
    assert isinstance(error, NeoError)


# --- clone and credentials


async def test_clone_checks_out_the_default_branch(
    tree: Path, origin: Path, server: FakeGitServer
) -> None:
    head = git("rev-parse", "refs/heads/main", cwd=origin)

    assert git("rev-parse", "HEAD", cwd=tree) == head
    assert git("symbolic-ref", "--short", "HEAD", cwd=tree) == "main"
    assert git("rev-parse", "--abbrev-ref", "main@{upstream}", cwd=tree) == "origin/main"
    assert git("status", "--porcelain", cwd=tree) == ""
    assert (tree / file_path(7)).read_bytes() == file_content(7)
    assert git("for-each-ref", "--format=%(refname)", "refs/heads/", cwd=tree) == "refs/heads/main"
    assert server.requests
    assert all(request.authenticated for request in server.requests)


async def test_clone_returns_the_commit_it_checked_out(
    tmp_path: Path, url: str, origin: Path, cache: MirrorCache
) -> None:
    sha = await clone(url, tmp_path / "tree", token=TOKEN, cache=cache)

    assert sha == git("rev-parse", "refs/heads/main", cwd=origin)


@pytest.mark.parametrize("token", [WRONG, ""])
async def test_clone_with_a_wrong_or_missing_token_fails_in_one_safe_line(
    tmp_path: Path, url: str, cache: MirrorCache, server: FakeGitServer, token: str
) -> None:
    with pytest.raises(GitError) as raised:
        await clone(url, tmp_path / "tree", token=token, cache=cache)

    assert_one_safe_line(raised.value)
    assert f"authentication failed for {url}" in str(raised.value)
    if token:
        assert token not in str(raised.value)
    assert not any(request.authenticated for request in server.requests)
    assert {request.status for request in server.requests} == {401}
    assert not (tmp_path / "tree").exists()
    assert not cache.path(url).exists()


async def test_a_url_carrying_credentials_is_refused_without_echoing_them(
    tmp_path: Path, url: str, cache: MirrorCache, server: FakeGitServer
) -> None:
    with_userinfo = url.replace("http://", f"http://x-access-token:{TOKEN}@")

    with pytest.raises(GitError) as raised:
        await clone(with_userinfo, tmp_path / "tree", token=TOKEN, cache=cache)

    assert_one_safe_line(raised.value)
    assert "must not carry credentials" in str(raised.value)
    assert server.requests == []


async def test_cloning_a_missing_repository_fails_in_one_line(
    tmp_path: Path, server: FakeGitServer, cache: MirrorCache
) -> None:
    with pytest.raises(GitError) as raised:
        await clone(server.url("octo/absent.git"), tmp_path / "tree", token=TOKEN, cache=cache)

    assert_one_safe_line(raised.value)
    assert "not found" in str(raised.value)


async def test_clone_into_a_non_empty_directory_is_refused(
    tmp_path: Path, url: str, cache: MirrorCache
) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file").write_text("mine\n")

    with pytest.raises(GitError, match="not empty"):
        await clone(url, tmp_path / "busy", token=TOKEN, cache=cache)
    assert (tmp_path / "busy" / "file").read_text() == "mine\n"


async def test_the_token_is_in_no_file_and_origin_is_clean(
    tree: Path, url: str, cache: MirrorCache
) -> None:
    assert files_holding_secrets(tree) == []
    assert files_holding_secrets(cache.root) == []
    assert git("config", "--get-all", "remote.origin.url", cwd=tree) == url
    config = (tree / ".git" / "config").read_text()
    assert "extraheader" not in config.lower()
    assert "@" not in config


async def test_the_token_never_reaches_a_command_line(
    tmp_path: Path, url: str, cache: MirrorCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A `git` first on PATH that records its arguments, then runs the real one.
    real = shutil.which("git")
    assert real is not None
    wrappers, log = tmp_path / "bin", tmp_path / "argv.log"
    wrappers.mkdir()
    wrapper = wrappers / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrappers}{os.pathsep}{os.environ['PATH']}")
    dest = tmp_path / "tree"

    await clone(url, dest, token=TOKEN, cache=cache)
    (dest / "new.txt").write_text("new\n")
    await commit(dest, "Add a file")
    await push(dest, "main", url=url, token=TOKEN)

    recorded = log.read_bytes()
    assert b" clone " in recorded
    assert b" push " in recorded
    assert all(leak not in recorded for leak in LEAKS)


async def test_background_git_and_what_it_starts_run_at_a_lower_priority(
    tmp_path: Path,
) -> None:
    # A shell alias: git starts `nice`, which prints the niceness it inherited.
    alias = (("alias.niceness", "!nice"),)

    own = await run_git(["niceness"], what="alias", git_dir=tmp_path, config=alias)
    background = await run_git(
        ["niceness"], what="alias", git_dir=tmp_path, config=alias, background=True
    )

    assert int(background.text) == min(int(own.text) + BACKGROUND_NICENESS, 19)
    assert int(own.text) == os.getpriority(os.PRIO_PROCESS, 0)


async def test_a_spare_tree_is_checked_out_at_a_lower_priority_than_a_jobs_tree(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A `git` first on PATH that records its niceness and arguments.
    real = shutil.which("git")
    assert real is not None
    wrappers, log = tmp_path / "bin", tmp_path / "nice.log"
    wrappers.mkdir()
    wrapper = wrappers / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$(nice) $*" >> {log}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrappers}{os.pathsep}{os.environ['PATH']}")

    async with MirrorCache(tmp_path / "cache") as cache:
        await clone(url, tmp_path / "tree", token=TOKEN, cache=cache)
        await cache.wait_idle()

    own = os.getpriority(os.PRIO_PROCESS, 0)
    checkouts = [line.split()[0] for line in log.read_text().splitlines() if " checkout " in line]
    refreshes = [
        line.split()[0] for line in log.read_text().splitlines() if " update-index " in line
    ]
    low = str(min(own + BACKGROUND_NICENESS, 19))
    assert checkouts == [str(own), low]  # the job's tree, then the spare
    # Before the spare is offered, niced; then under the mirror's lock, which
    # a job's clone may be waiting for: not niced.
    assert refreshes == [low, str(own)]


async def test_the_tree_works_offline_without_the_cache(tree: Path, cache: MirrorCache) -> None:
    shutil.rmtree(cache.root)

    assert not (tree / ".git" / "objects" / "info" / "alternates").exists()
    missing = git("rev-list", "--objects", "--missing=print", "-1", "HEAD", cwd=tree)
    assert [line for line in missing.splitlines() if line.startswith("?")] == []
    assert len(git("log", "--oneline", cwd=tree).splitlines()) == 3
    assert "Change 2" in git("show", "HEAD", cwd=tree)
    assert "diff --git" in git("diff", "HEAD~2", "HEAD", cwd=tree)
    (tree / "offline.txt").write_text("written offline\n")
    git("add", "offline.txt", cwd=tree)
    git("-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qm", "x", cwd=tree)
    assert git("status", "--porcelain", cwd=tree) == ""


async def test_the_tree_shares_no_file_with_the_cache(tree: Path) -> None:
    packs = list((tree / ".git" / "objects" / "pack").iterdir())

    assert packs
    assert all(pack.stat().st_nlink == 1 for pack in packs)


async def test_clone_of_a_tag_a_commit_and_a_pull_request_head_is_detached(
    tmp_path: Path, url: str, origin: Path, cache: MirrorCache
) -> None:
    git("tag", "v1", "main~1", cwd=origin)
    first = git("rev-list", "--max-parents=0", "main", cwd=origin)
    pull_head = make_pull_request(origin, 3, {"pr.txt": b"proposed\n"})

    tagged = await clone(url, tmp_path / "tag", token=TOKEN, cache=cache, ref="v1")
    by_sha = await clone(url, tmp_path / "sha", token=TOKEN, cache=cache, ref=first)
    pull = await clone(url, tmp_path / "pull", token=TOKEN, cache=cache, ref="refs/pull/3/head")

    assert tagged == git("rev-parse", "main~1", cwd=origin)
    assert by_sha == first
    assert pull == pull_head
    assert (tmp_path / "pull" / "pr.txt").read_text() == "proposed\n"
    for name in ("tag", "sha", "pull"):
        done = subprocess.run(
            ["git", "-C", str(tmp_path / name), "symbolic-ref", "-q", "HEAD"],
            env=git_env(),
            check=False,
        )
        assert done.returncode == 1  # detached


async def test_clone_of_another_branch_tracks_it(
    tmp_path: Path, url: str, origin: Path, cache: MirrorCache
) -> None:
    git("branch", "develop", "main~1", cwd=origin)

    sha = await clone(url, tmp_path / "tree", token=TOKEN, cache=cache, ref="develop")

    assert sha == git("rev-parse", "develop", cwd=origin)
    assert git("symbolic-ref", "--short", "HEAD", cwd=tmp_path / "tree") == "develop"
    upstream = git("rev-parse", "--abbrev-ref", "develop@{upstream}", cwd=tmp_path / "tree")
    assert upstream == "origin/develop"


async def test_clone_of_an_unknown_branch_fails(
    tmp_path: Path, url: str, cache: MirrorCache
) -> None:
    with pytest.raises(GitError) as raised:
        await clone(url, tmp_path / "tree", token=TOKEN, cache=cache, ref="no-such-branch")

    assert_one_safe_line(raised.value)
    assert "no-such-branch" in str(raised.value)


async def test_a_stalled_server_times_out_in_one_line(tmp_path: Path, cache: MirrorCache) -> None:
    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        url = f"http://127.0.0.1:{port}/octo/hello.git"

        with pytest.raises(GitError) as raised:
            await clone(url, tmp_path / "tree", token=TOKEN, cache=cache, timeout=0.5)

    assert_one_safe_line(raised.value)
    assert str(raised.value).endswith("timed out after 0.5 s")


# --- a work branch, or its base


def fetches(server: FakeGitServer) -> int:
    """How many times git asked the server for its refs: once per clone or fetch."""
    return sum(1 for r in server.requests if r.method == "GET" and r.service == "git-upload-pack")


async def test_clone_branch_takes_the_base_when_the_branch_is_new_with_one_fetch(
    tmp_path: Path, url: str, origin: Path, server: FakeGitServer, cache: MirrorCache
) -> None:
    await clone(url, tmp_path / "warm", token=TOKEN, cache=cache)  # the mirror exists
    server.clear()

    sha, continued = await clone_branch(
        url, tmp_path / "tree", token=TOKEN, cache=cache, branch="neo/issue-1", base="main"
    )

    assert continued is False
    assert sha == git("rev-parse", "main", cwd=origin)
    assert git("symbolic-ref", "--short", "HEAD", cwd=tmp_path / "tree") == "main"
    assert fetches(server) == 1


@pytest.mark.parametrize("spare", [False, True])
async def test_clone_branch_continues_the_branch_when_the_repository_has_it(
    tmp_path: Path,
    url: str,
    origin: Path,
    server: FakeGitServer,
    cache: MirrorCache,
    spare: bool,
) -> None:
    await clone(url, tmp_path / "warm", token=TOKEN, cache=cache)
    if spare:
        await cache.wait_idle()
    # The branch appears after the mirror was made: the one fetch must find it.
    git("branch", "neo/issue-1", "main", cwd=origin)
    tip = add_commit(origin, {"notes.txt": b"earlier run\n"}, branch="neo/issue-1")
    server.clear()

    sha, continued = await clone_branch(
        url, tmp_path / "tree", token=TOKEN, cache=cache, branch="neo/issue-1", base="main"
    )

    tree = tmp_path / "tree"
    assert continued is True
    assert sha == tip
    assert (tree / "notes.txt").read_text() == "earlier run\n"
    assert git("symbolic-ref", "--short", "HEAD", cwd=tree) == "neo/issue-1"
    assert git("rev-parse", "--abbrev-ref", "neo/issue-1@{upstream}", cwd=tree) == (
        "origin/neo/issue-1"
    )
    assert git("status", "--porcelain", cwd=tree) == ""
    assert fetches(server) == 1


async def test_clone_branch_refuses_a_branch_name_git_would_not_take(
    tmp_path: Path, url: str, cache: MirrorCache
) -> None:
    with pytest.raises(GitError) as raised:
        await clone_branch(
            url, tmp_path / "tree", token=TOKEN, cache=cache, branch="-x..y", base="main"
        )
    assert_one_safe_line(raised.value)
    assert "not a valid branch name" in str(raised.value)


# --- the mirror cache


@pytest.mark.parametrize("spare_trees", [True, False])
async def test_a_second_clone_fetches_only_what_changed(
    tmp_path: Path, served: Path, server: FakeGitServer, spare_trees: bool
) -> None:
    repo = served / "octo" / "big.git"
    make_repo(repo, files=300, commits=2)
    url = server.url("octo/big.git")
    async with MirrorCache(tmp_path / "cache", spare_trees=spare_trees) as cache:
        server.clear()
        await clone(url, tmp_path / "first", token=TOKEN, cache=cache)
        cold_bytes = sum(request.response_bytes for request in server.requests)
        await cache.wait_idle()
        assert cache.spare_path(url).is_dir() is spare_trees
        new = add_commit(repo, {"added.txt": b"one more file\n", file_path(5): None})

        server.clear()
        second = await clone(url, tmp_path / "second", token=TOKEN, cache=cache)

    warm_bytes = sum(request.response_bytes for request in server.requests)
    assert cold_bytes > 100_000  # 300 files of 1 KB
    assert warm_bytes < 5_000  # one commit, one tree path and one blob
    assert second == new
    tree = tmp_path / "second"
    assert (tree / "added.txt").read_text() == "one more file\n"
    assert not (tree / file_path(5)).exists()
    assert git("status", "--porcelain", cwd=tree) == ""
    assert git("rev-parse", "origin/main", cwd=tree) == new
    assert git("symbolic-ref", "--short", "HEAD", cwd=tree) == "main"
    assert files_holding_secrets(tree) == []
    missing = git("rev-list", "--objects", "--missing=print", "-1", "HEAD", cwd=tree)
    assert [line for line in missing.splitlines() if line.startswith("?")] == []


async def test_a_renamed_default_branch_is_followed(
    tmp_path: Path, url: str, origin: Path, cache: MirrorCache
) -> None:
    await clone(url, tmp_path / "first", token=TOKEN, cache=cache)
    await cache.wait_idle()  # the second clone takes the spare tree
    git("branch", "-m", "main", "trunk", cwd=origin)

    sha = await clone(url, tmp_path / "second", token=TOKEN, cache=cache)

    second = tmp_path / "second"
    assert sha == git("rev-parse", "refs/heads/trunk", cwd=origin)
    assert git("symbolic-ref", "--short", "HEAD", cwd=second) == "trunk"
    assert (
        git("symbolic-ref", "refs/remotes/origin/HEAD", cwd=second) == "refs/remotes/origin/trunk"
    )
    assert git("for-each-ref", "--format=%(refname)", "refs/remotes/", cwd=second).split() == [
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/trunk",
    ]


async def test_the_spare_tree_is_replaced_after_it_is_taken(
    tmp_path: Path, url: str, cache: MirrorCache
) -> None:
    await clone(url, tmp_path / "first", token=TOKEN, cache=cache)
    await cache.wait_idle()
    spare = cache.spare_path(url)
    inode = spare.stat().st_ino

    await clone(url, tmp_path / "second", token=TOKEN, cache=cache)
    await cache.wait_idle()

    assert (tmp_path / "second").stat().st_ino == inode  # moved, not copied
    assert spare.is_dir()
    assert spare.stat().st_ino != inode


def touch_every_file(tree: Path) -> None:
    """What giving a tree to another user does to git's stat data: every ctime changes."""
    for directory, _, names in os.walk(tree):
        for name in names:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode))


async def test_a_spare_made_ready_is_taken_with_its_index_fresh(
    tmp_path: Path, url: str, origin: Path
) -> None:
    readied: list[Path] = []

    def ready(spare: Path) -> None:
        readied.append(spare)
        touch_every_file(spare)

    async with MirrorCache(tmp_path / "cache", spare_ready=ready) as cache:
        await clone(url, tmp_path / "first", token=TOKEN, cache=cache)
        await cache.wait_idle()
        spare = cache.spare_path(url)
        # git recorded the files' stat data after `ready`: the checkout that
        # takes the spare need not read every file again.
        fresh = git("diff-files", "--name-only", cwd=spare)
        await clone(url, tmp_path / "second", token=TOKEN, cache=cache)
        await cache.wait_idle()

    second = tmp_path / "second"
    assert len(readied) == 2  # the spare the second clone took, and the next one
    assert not readied[0].exists()  # staged aside, then moved into place
    assert fresh == ""
    assert git("status", "--porcelain", cwd=second) == ""
    assert git("rev-parse", "HEAD", cwd=second) == git("rev-parse", "main", cwd=origin)


async def test_a_spare_that_cannot_be_made_ready_is_dropped_and_the_next_clone_works(
    tmp_path: Path, url: str, origin: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(spare: Path) -> None:
        raise PermissionError(1, "Operation not permitted", str(spare))

    async with MirrorCache(tmp_path / "cache", spare_ready=refuse) as cache:
        await clone(url, tmp_path / "first", token=TOKEN, cache=cache)
        await cache.wait_idle()
        assert not cache.spare_path(url).exists()
        assert [p for p in cache.root.iterdir() if ".spare" in p.name] == []
        sha = await clone(url, tmp_path / "second", token=TOKEN, cache=cache)

    assert sha == git("rev-parse", "main", cwd=origin)
    assert git("status", "--porcelain", cwd=tmp_path / "second") == ""
    assert "no spare tree for" in caplog.text
    assert "Operation not permitted" in caplog.text


async def test_a_spare_is_offered_before_its_index_is_refreshed(
    tmp_path: Path, url: str, origin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The refresh waits for the clock to move on; a job that comes meanwhile
    # takes the spare as it is, rather than clone and check out every file.
    monkeypatch.setattr("runner.git.mirrors.RACY_GIT_SECONDS", 600.0)

    def ready(spare: Path) -> None:
        # Every file's stat data changed, and none written in the current second.
        past = time.time() - 10
        for directory, _, names in os.walk(spare):
            for name in names:
                os.utime(os.path.join(directory, name), (past, past), follow_symlinks=False)

    async with MirrorCache(tmp_path / "cache", spare_ready=ready) as cache:
        await clone(url, tmp_path / "first", token=TOKEN, cache=cache)
        spare = cache.spare_path(url)
        for _ in range(600):
            if spare.exists():
                break
            await asyncio.sleep(0.05)
        offered = spare.stat().st_ino
        # What `ready` changed is recorded before the spare is offered.
        fresh = git("diff-files", "--name-only", cwd=spare)

        sha = await clone(url, tmp_path / "second", token=TOKEN, cache=cache)

    second = tmp_path / "second"
    assert second.stat().st_ino == offered  # moved, not cloned
    assert fresh == ""
    assert sha == git("rev-parse", "main", cwd=origin)
    assert git("status", "--porcelain", cwd=second) == ""


async def test_a_half_made_spare_left_by_a_dead_process_is_removed_only_once_stale(
    tmp_path: Path, url: str, cache: MirrorCache
) -> None:
    spare = cache.spare_path(url)
    spare.parent.mkdir(parents=True, exist_ok=True)
    stale = spare.with_name(f"{spare.name}.tmp-dead0000")
    fresh = spare.with_name(f"{spare.name}.tmp-live0000")
    for staging in (stale, fresh):
        (staging / "src").mkdir(parents=True)
        (staging / "src" / "half.py").write_text("written before the kill\n")
    hours_ago = time.time() - STALE_STAGING_SECONDS - 60
    os.utime(stale, (hours_ago, hours_ago))

    await clone(url, tmp_path / "tree", token=TOKEN, cache=cache)
    await cache.wait_idle()

    assert not stale.exists()
    assert fresh.is_dir()  # another process may still be making it
    assert spare.is_dir()


async def test_concurrent_clones_of_one_repository_both_succeed(
    tmp_path: Path, url: str, origin: Path, cache: MirrorCache
) -> None:
    shas = await asyncio.gather(
        *(clone(url, tmp_path / f"tree{n}", token=TOKEN, cache=cache) for n in range(3))
    )

    head = git("rev-parse", "refs/heads/main", cwd=origin)
    assert shas == [head, head, head]
    for n in range(3):
        assert git("status", "--porcelain", cwd=tmp_path / f"tree{n}") == ""
        assert git("fsck", "--connectivity-only", "--no-dangling", cwd=tmp_path / f"tree{n}") == ""
    assert sorted(path.suffix for path in cache.root.iterdir() if path.suffix == ".git") == [".git"]


# --- pull requests and branches


async def test_fetch_pull_request_checks_out_its_head(
    tree: Path, url: str, origin: Path, server: FakeGitServer
) -> None:
    head = make_pull_request(origin, 7, {"feature.txt": b"from the pr\n", "README.md": b"pr\n"})
    server.clear()

    sha = await fetch_pull_request(tree, 7, url=url, token=TOKEN)

    assert sha == head
    assert git("symbolic-ref", "--short", "HEAD", cwd=tree) == "pull/7"
    assert (tree / "feature.txt").read_text() == "from the pr\n"
    assert (tree / "README.md").read_text() == "pr\n"
    assert git("status", "--porcelain", cwd=tree) == ""
    assert server.requests
    assert all(request.authenticated for request in server.requests)
    assert files_holding_secrets(tree) == []


async def test_fetch_pull_request_with_a_wrong_token_fails_in_one_safe_line(
    tree: Path, url: str, origin: Path
) -> None:
    make_pull_request(origin, 8, {"feature.txt": b"x\n"})

    with pytest.raises(GitError) as raised:
        await fetch_pull_request(tree, 8, url=url, token=WRONG)

    assert_one_safe_line(raised.value)
    assert "authentication failed" in str(raised.value)


async def test_fetch_pull_request_sends_the_token_only_to_the_given_url(
    tree: Path, url: str, origin: Path, tmp_path: Path
) -> None:
    # The sandbox points origin elsewhere; the caller's URL wins.
    git("config", "remote.origin.url", "http://127.0.0.1:9/evil.git", cwd=tree)
    head = make_pull_request(origin, 9, {"feature.txt": b"x\n"})

    assert await fetch_pull_request(tree, 9, url=url, token=TOKEN) == head
    assert git("config", "remote.origin.url", cwd=tree) == url


async def test_checkout_branch_creates_then_resets(tree: Path) -> None:
    base = git("rev-parse", "HEAD", cwd=tree)

    await checkout_branch(tree, "neo/issue-12")
    (tree / "work.txt").write_text("work\n")
    made = await commit(tree, "Work")
    await checkout_branch(tree, "neo/issue-12", start=base)

    assert made is not None
    assert git("symbolic-ref", "--short", "HEAD", cwd=tree) == "neo/issue-12"
    assert git("rev-parse", "HEAD", cwd=tree) == base
    assert not (tree / "work.txt").exists()


async def test_checkout_branch_refuses_a_bad_name(tree: Path) -> None:
    with pytest.raises(GitError, match="not a valid branch name"):
        await checkout_branch(tree, "bad name..lock")


# --- commits


async def test_commit_all_commits_everything_as_the_bot_with_co_authors(tree: Path) -> None:
    (tree / "README.md").write_text("# changed\n")
    (tree / file_path(3)).unlink()
    (tree / "docs").mkdir()
    (tree / "docs" / "new.md").write_text("new\n")

    sha = await commit(
        tree,
        "Fix the flaky date test",
        co_authors=["Octo Cat <octocat@example.com>", "Mona <mona@example.com>"],
    )

    assert sha == git("rev-parse", "HEAD", cwd=tree)
    who = git("log", "-1", "--format=%an|%ae|%cn|%ce", cwd=tree)
    identity = f"{BOT_NAME}|{BOT_EMAIL}"
    assert who == f"{identity}|{identity}"
    body = git("log", "-1", "--format=%B", cwd=tree)
    assert body.splitlines()[0] == "Fix the flaky date test"
    trailers = git("log", "-1", "--format=%(trailers:key=Co-authored-by,valueonly)", cwd=tree)
    assert trailers.splitlines() == ["Octo Cat <octocat@example.com>", "Mona <mona@example.com>"]
    changes = git("show", "--name-status", "--format=", "HEAD", cwd=tree).splitlines()
    assert sorted(changes) == sorted(["M\tREADME.md", f"D\t{file_path(3)}", "A\tdocs/new.md"])
    assert git("status", "--porcelain", cwd=tree) == ""


async def test_commit_all_with_nothing_changed_returns_none(tree: Path) -> None:
    head = git("rev-parse", "HEAD", cwd=tree)

    assert await commit(tree, "Nothing") is None
    assert git("rev-parse", "HEAD", cwd=tree) == head


async def test_commit_all_refuses_a_co_author_that_would_inject_lines(tree: Path) -> None:
    (tree / "x.txt").write_text("x\n")

    with pytest.raises(GitError, match="not a valid co-author"):
        await commit(tree, "x", co_authors=["Eve <eve@example.com>\nSigned-off-by: x"])


async def test_the_repository_cannot_run_code_on_the_host_when_committing(tree: Path) -> None:
    # What a sandbox could leave behind: hooks, a hooks path, a filter driver,
    # an fsmonitor command.
    marker = tree.parent / "ran"
    script = f"#!/bin/sh\necho ran >> {marker}\ncat\n"
    hooks = tree / ".git" / "hooks"
    for name in ("pre-commit", "commit-msg", "post-commit", "prepare-commit-msg"):
        (hooks / name).write_text(script)
        (hooks / name).chmod(0o755)
    (tree / "myhooks").mkdir()
    (tree / "myhooks" / "pre-commit").write_text(script)
    (tree / "myhooks" / "pre-commit").chmod(0o755)
    evil = tree / "myhooks" / "pre-commit"
    git("config", "core.hooksPath", str(tree / "myhooks"), cwd=tree)
    git("config", "filter.evil.clean", str(evil), cwd=tree)
    git("config", "filter.evil.required", "true", cwd=tree)
    git("config", "core.fsmonitor", str(evil), cwd=tree)
    (tree / ".gitattributes").write_text("*.txt filter=evil\n")
    (tree / "data.txt").write_text("data\n")

    sha = await commit(tree, "Add data")

    assert sha is not None
    assert not marker.exists()
    config = (tree / ".git" / "config").read_text()
    assert "hooksPath" not in config
    assert "evil" not in config
    assert "fsmonitor" not in config
    assert git("show", "HEAD:data.txt", cwd=tree) == "data"


async def test_a_git_directory_holding_a_symlink_is_refused(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside-config"
    outside.write_text("[core]\n\tbare = false\n")
    config = tree / ".git" / "config"
    config.unlink()
    config.symlink_to(outside)

    with pytest.raises(GitError, match="symbolic link"):
        await commit(tree, "x")
    assert outside.read_text() == "[core]\n\tbare = false\n"


@pytest.mark.parametrize("name", ["HEAD", "config", "index", "info/exclude"])
async def test_a_git_directory_holding_a_fifo_is_refused_before_git_opens_it(
    tree: Path, name: str
) -> None:
    fifo = tree / ".git" / name
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    (tree / "x.txt").write_text("x\n")

    # Were git to open the FIFO, it would block until this timeout and say so.
    with pytest.raises(GitError) as raised:
        await commit_all(tree, "x", author=BOT, timeout=LOCAL_TIMEOUT / 60)
    assert str(raised.value) == f"refusing a working tree whose .git/{name} is a FIFO"


async def test_a_trusting_block_checks_the_tree_once_and_every_call_after_it_again(
    tree: Path,
) -> None:
    config = tree / ".git" / "config"

    async with trusting(tree):
        # Written after the block's check: its calls take that check as theirs.
        git("config", "core.editor", "evil", cwd=tree)
        await run_local(tree, "status", "--short")
        assert "evil" in config.read_text()
    await run_local(tree, "status", "--short")

    assert "evil" not in config.read_text()


async def test_a_trusting_block_refuses_a_hostile_tree_as_it_opens(tree: Path) -> None:
    os.mkfifo(tree / ".gitignore")

    with pytest.raises(GitError, match=r"whose \.gitignore is a FIFO"):
        async with trusting(tree):
            pytest.fail("the block ran on a tree it should have refused")


async def test_commit_all_of_what_is_staged_leaves_the_rest_out(tree: Path) -> None:
    (tree / "staged.txt").write_text("in\n")
    await stage_all(tree)
    (tree / "later.txt").write_text("out\n")

    sha = await commit_all(tree, "Staged only", author=BOT, staged=True)

    assert sha is not None
    listed = git("show", "--name-only", "--format=", "HEAD", cwd=tree).split()
    assert listed == ["staged.txt"]


async def test_a_git_config_that_is_a_directory_is_refused_in_one_line(tree: Path) -> None:
    config = tree / ".git" / "config"
    config.unlink()
    config.mkdir()

    with pytest.raises(GitError) as raised:
        await commit(tree, "x")
    assert str(raised.value) == "refusing a working tree whose .git/config is a directory"


async def test_repositories_embedded_in_the_tree_are_left_out_of_the_commit(tree: Path) -> None:
    git("init", "-q", "sub", cwd=tree)
    (tree / "sub" / "s.txt").write_text("s\n")
    git("add", "s.txt", cwd=tree / "sub")
    git(
        "-c",
        "user.name=m",
        "-c",
        "user.email=m@example.com",
        "commit",
        "-qm",
        "s",
        cwd=tree / "sub",
    )
    (tree / "a b").mkdir()
    (tree / "a b" / ".git").write_text("gitdir: ../.git\n")  # the tree's own repository
    (tree / "a b" / "p.txt").write_text("p\n")
    (tree / "x.txt").write_text("x\n")

    assert (await stage_all(tree)).embedded == ("a b", "sub")
    sha = await commit(tree, "x")

    assert sha is not None
    assert git("diff", "--name-only", "HEAD^", "HEAD", cwd=tree) == "x.txt"
    assert " commit " not in git("ls-tree", "-r", "HEAD", cwd=tree)  # no gitlink


def write_files(tree: Path, paths: Sequence[str]) -> None:
    for path in paths:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(f"{path}\n")


@pytest.mark.parametrize(
    ("written", "generated"),
    [
        pytest.param(
            ["__pycache__/calc.cpython-311.pyc"], (("__pycache__/", 1),), id="pycache-at-the-top"
        ),
        pytest.param(
            ["src/pkg/__pycache__/a.pyc", "src/pkg/__pycache__/b.pyc", "old.pyc"],
            (("__pycache__/", 2), ("*.pyc", 1)),
            id="pycache-deep-and-a-stray-pyc",
        ),
        pytest.param(
            [".pytest_cache/README.md", ".pytest_cache/v/cache/nodeids", ".mypy_cache/x.json"],
            ((".pytest_cache/", 2), (".mypy_cache/", 1)),
            id="tool-caches",
        ),
        pytest.param(
            [".ruff_cache/0.6/x", ".tox/py311/log", ".venv/bin/python", "web/node_modules/l/i.js"],
            ((".ruff_cache/", 1), ("node_modules/", 1), (".venv/", 1), (".tox/", 1)),
            id="environments-and-node-modules",
        ),
        pytest.param(
            ["node_modules/pkg/__pycache__/m.pyc"],
            (("node_modules/", 1),),
            id="the-outermost-directory-names-it",
        ),
        pytest.param(
            ["src/demo.egg-info/PKG-INFO", "docs/.DS_Store"],
            (("*.egg-info/", 1), (".DS_Store", 1)),
            id="build-output-and-finder-files",
        ),
        pytest.param(
            ["notes.pyc.txt", "node_modules.md", "my__pycache__/x.txt"], (), id="lookalikes-kept"
        ),
    ],
)
async def test_untracked_generated_files_are_left_out_and_counted(
    tree: Path, written: list[str], generated: tuple[tuple[str, int], ...]
) -> None:
    write_files(tree, ["calc.py", *written])

    staged = await stage_all(tree)
    await commit(tree, "x")

    assert staged.generated == generated
    committed = git("diff", "--name-only", "HEAD^", "HEAD", cwd=tree).splitlines()
    assert set(committed) == {"calc.py"} | (set() if generated else set(written))
    assert (tree / written[0]).exists()  # left out, not deleted


async def test_tracked_generated_files_stay_tracked(tree: Path) -> None:
    write_files(tree, ["node_modules/x.js", "lib/cache.pyc", "__pycache__/kept.pyc"])
    git("add", "--force", ".", cwd=tree)
    git("-c", "user.name=m", "-c", "user.email=m@example.com", "commit", "-qm", "vendor", cwd=tree)
    (tree / "node_modules" / "x.js").write_text("changed\n")
    (tree / "lib" / "cache.pyc").write_text("changed\n")
    (tree / "__pycache__" / "kept.pyc").unlink()
    write_files(tree, ["node_modules/y.js"])

    staged = await stage_all(tree)
    await commit(tree, "x")

    assert staged.generated == (("node_modules/", 1),)
    changes = git("show", "--name-status", "--format=", "HEAD", cwd=tree).splitlines()
    assert sorted(changes) == [
        "D\t__pycache__/kept.pyc",
        "M\tlib/cache.pyc",
        "M\tnode_modules/x.js",
    ]


async def test_what_the_repository_ignores_itself_is_not_reported(tree: Path) -> None:
    write_files(tree, ["__pycache__/a.pyc", "node_modules/l/i.js"])
    (tree / ".gitignore").write_text("__pycache__/\n")

    staged = await stage_all(tree)
    await commit(tree, "x")

    assert staged.generated == (("node_modules/", 1),)
    committed = git("diff", "--name-only", "HEAD^", "HEAD", cwd=tree).splitlines()
    assert committed == [".gitignore"]


async def test_generated_files_in_an_embedded_repository_are_not_counted(tree: Path) -> None:
    write_files(tree, ["vendor/lib/__pycache__/a.pyc", "vendor/lib/x.py", "x.txt"])
    (tree / "vendor" / "lib" / ".git").mkdir()

    staged = await stage_all(tree)

    assert staged == Staged(embedded=("vendor/lib",), generated=())


async def test_a_fifo_git_reads_in_the_working_tree_is_refused(tree: Path) -> None:
    (tree / "docs").mkdir()
    os.mkfifo(tree / "docs" / ".gitattributes")
    os.mkfifo(tree / "plain-fifo")  # git passes over any other, and so does the check

    with pytest.raises(GitError) as raised:
        await stage_all(tree, timeout=LOCAL_TIMEOUT / 60)
    assert str(raised.value) == "refusing a working tree whose docs/.gitattributes is a FIFO"


async def test_alternates_written_in_the_tree_are_removed(tree: Path, cache: MirrorCache) -> None:
    alternates = tree / ".git" / "objects" / "info" / "alternates"
    alternates.write_text("/somewhere/else/objects\n")
    (tree / "x.txt").write_text("x\n")

    assert await commit(tree, "x") is not None
    assert not alternates.exists()


async def test_a_tree_without_a_git_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()

    with pytest.raises(GitError, match="not a git working tree"):
        await commit(tmp_path / "plain", "x")


# --- diffstat


async def test_diffstat_counts_files_and_lines(tree: Path) -> None:
    base = git("rev-parse", "HEAD", cwd=tree)
    (tree / "README.md").write_text("# fixture\nfirst\nsecond\n")
    deleted = file_content(4)
    (tree / file_path(4)).unlink()
    (tree / file_path(6)).rename(tree / "moved.py")
    (tree / "logo.bin").write_bytes(b"\x89PNG\x00\x01\x02\x00" * 16)
    await commit(tree, "Several changes")

    stat = await diffstat(tree, base)

    by_path = {file.path: file for file in stat.files}
    assert by_path["README.md"] == FileStat("README.md", 2, 0)
    assert by_path[file_path(4)] == FileStat(file_path(4), 0, len(deleted.splitlines()))
    assert by_path["moved.py"] == FileStat("moved.py", 0, 0, old_path=file_path(6))
    assert by_path["logo.bin"] == FileStat("logo.bin", 0, 0, binary=True)
    assert stat.files_changed == 4
    assert stat.insertions == 2
    assert stat.deletions == len(deleted.splitlines())


async def test_diffstat_of_no_change_is_empty(tree: Path) -> None:
    assert await diffstat(tree, "HEAD") == DiffStat(files=())


async def test_diffstat_from_the_fork_point_leaves_out_what_the_base_did_since(
    tree: Path,
) -> None:
    await checkout_branch(tree, "neo/fix")
    (tree / "fix.txt").write_text("fixed\n")
    await commit(tree, "Fix")
    await checkout_branch(tree, "main", start="HEAD~1")
    (tree / "README.md").write_text("# moved on\n")
    await commit(tree, "Base moves on")

    stat = await diffstat(tree, "main", head="neo/fix", fork_point=True)

    assert [file.path for file in stat.files] == ["fix.txt"]
    assert sorted(f.path for f in (await diffstat(tree, "main", head="neo/fix")).files) == [
        "README.md",
        "fix.txt",
    ]


async def test_diffstat_from_the_fork_point_of_unrelated_histories_fails(tree: Path) -> None:
    git("checkout", "-q", "--orphan", "alone", cwd=tree)
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "alone", cwd=tree)

    with pytest.raises(GitError) as raised:
        await diffstat(tree, "main", head="alone", fork_point=True)

    assert_one_safe_line(raised.value)


# --- push


async def test_push_lands_in_the_servers_repository(
    tree: Path, url: str, origin: Path, server: FakeGitServer
) -> None:
    await checkout_branch(tree, "neo/fix")
    (tree / "fix.txt").write_text("fixed\n")
    sha = await commit(tree, "Fix")
    server.clear()

    await push(tree, "neo/fix", url=url, token=TOKEN)

    assert git("rev-parse", "refs/heads/neo/fix", cwd=origin) == sha
    assert git("show", "refs/heads/neo/fix:fix.txt", cwd=origin) == "fixed"
    pushes = [r for r in server.requests if r.service == "git-receive-pack"]
    assert pushes
    assert all(request.authenticated for request in pushes)
    assert files_holding_secrets(tree) == []


async def test_push_with_a_wrong_token_fails_in_one_safe_line(
    tree: Path, url: str, origin: Path
) -> None:
    (tree / "fix.txt").write_text("fixed\n")
    await commit(tree, "Fix")

    with pytest.raises(GitError) as raised:
        await push(tree, "main", url=url, token=WRONG)

    assert_one_safe_line(raised.value)
    assert "authentication failed" in str(raised.value)
    assert git("rev-parse", "refs/heads/main", cwd=origin) != git("rev-parse", "HEAD", cwd=tree)


async def test_a_rejected_push_needs_force(tree: Path, url: str, origin: Path) -> None:
    add_commit(origin, {"upstream.txt": b"someone else\n"})
    (tree / "mine.txt").write_text("mine\n")
    mine = await commit(tree, "Mine")

    with pytest.raises(GitError) as raised:
        await push(tree, "main", url=url, token=TOKEN)
    assert_one_safe_line(raised.value)
    assert "rejected" in str(raised.value)

    await push(tree, "main", url=url, token=TOKEN, force=True)
    assert git("rev-parse", "refs/heads/main", cwd=origin) == mine


async def test_push_works_when_the_sandbox_user_owns_the_tree(
    tree: Path, url: str, origin: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("changing a tree's owner needs root")
    (tree / "fix.txt").write_text("fixed\n")
    for directory, dirs, files in os.walk(tree):
        for name in (*dirs, *files):
            os.lchown(os.path.join(directory, name), 4242, 4242)
    os.chown(tree, 4242, 4242)

    sha = await commit(tree, "Fix")
    await push(tree, "main", url=url, token=TOKEN)

    assert git("rev-parse", "refs/heads/main", cwd=origin) == sha
    assert stat.S_IMODE((tree / ".git" / "config").stat().st_mode) == 0o644
    assert (tree / ".git" / "config").stat().st_uid == 4242


async def test_commit_staged_commits_the_index_as_it_is(tree: Path) -> None:
    (tree / "kept.txt").write_text("staged\n")
    (tree / "left.txt").write_text("not staged\n")
    git("add", "kept.txt", cwd=tree)

    sha = await commit_staged(
        tree,
        "Keep",
        author=BOT,
        co_authors=["Mona <mona@example.com>"],
        trailers=[("Neo-Run", "u")],
    )

    assert sha == git("rev-parse", "HEAD", cwd=tree)
    assert git("show", "--name-only", "--format=", sha, cwd=tree) == "kept.txt"
    assert git("log", "-1", "--format=%an <%ae>|%cn|%(trailers:only,unfold)", cwd=tree) == (
        f"{BOT_NAME} <{BOT_EMAIL}>|{BOT_NAME}|Co-authored-by: Mona <mona@example.com>\nNeo-Run: u"
    )
    assert git("status", "--porcelain", cwd=tree) == "?? left.txt"


async def test_commit_staged_refuses_a_trailer_that_would_inject_lines(tree: Path) -> None:
    git("add", "-A", cwd=tree)
    head = git("rev-parse", "HEAD", cwd=tree)

    with pytest.raises(GitError):
        await commit_staged(tree, "x", author=BOT, trailers=[("Neo-Run", "u\nSigned-off-by: x")])

    assert git("rev-parse", "HEAD", cwd=tree) == head


async def test_commit_all_adds_the_trailers_asked_for_after_the_co_authors(tree: Path) -> None:
    (tree / "x.txt").write_text("x\n")
    url = "https://neo.example.com/runs/7"
    await commit_all(
        tree,
        "Fix it",
        author=BOT,
        co_authors=["Mona <mona@example.com>"],
        trailers=[("Neo-Run", url)],
    )
    body = git("log", "-1", "--format=%B", cwd=tree).splitlines()
    assert body[-2:] == ["Co-authored-by: Mona <mona@example.com>", f"Neo-Run: {url}"]


async def test_commit_all_refuses_a_trailer_that_would_inject_lines(tree: Path) -> None:
    (tree / "x.txt").write_text("x\n")
    with pytest.raises(GitError, match="not a valid trailer"):
        await commit_all(
            tree,
            "x",
            author=BOT,
            trailers=[("Neo-Run", "https://x\nSigned-off-by: eve")],
        )
