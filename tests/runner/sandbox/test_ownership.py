"""The user's tree after a docker sandbox run: owners and modes as they were, git still works;
a job's own tree given to the sandbox user for good, git's index kept fresh.

The lending and the giving by table on real trees (they need root to hand
files over, as Neo does when run as root), then whole runs on the real
engine: as root on a tree root owns, as root on another user's tree, as a
normal user, and as root on a tree given.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from runner.git import Author, commit_all
from runner.sandbox import SandboxError
from runner.sandbox.docker import SANDBOX_UID, DockerSandbox
from runner.sandbox.ownership import give_ahead, give_tree, hand_over, lend, sandbox_user
from runner.tools import BashTool, ToolContext
from tests.runner.sandbox.conftest import SANDBOX_IMAGE

CTX = ToolContext("call-1", lambda event: None)
Snapshot = dict[str, tuple[int, int, int]]

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="handing files over needs root")


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A scratch directory other users may pass through (pytest's is root's alone),
    so that git can run as the tree's owner in it."""
    path = Path(tempfile.mkdtemp(prefix="neo-ownership-"))
    path.chmod(0o711)
    try:
        yield path
    finally:
        shutil.rmtree(path)


@pytest.mark.parametrize(
    ("euid", "owner", "user"),
    [
        pytest.param(0, (0, 0), (1000, 1000), id="root-on-roots-tree"),
        pytest.param(0, (4321, 55), (4321, 55), id="root-on-a-users-tree"),
        pytest.param(4321, (4321, 55), (4321, 4321), id="a-user-as-themself"),
        pytest.param(4321, (0, 0), (4321, 4321), id="a-user-on-roots-tree"),
    ],
)
def test_commands_never_run_as_root(
    euid: int, owner: tuple[int, int], user: tuple[int, int]
) -> None:
    assert sandbox_user(euid, (euid, euid), owner, 1000) == user


def git(tree: Path, *args: str, as_user: tuple[int, int] | None = None) -> str:
    """git as root (or `as_user`), trusting no directory it would not trust anyway."""
    argv = ["git", "-C", str(tree), *args]
    if as_user is not None:
        uid, gid = as_user
        argv = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv]
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tree),
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(argv, capture_output=True, text=True, env=environment, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def make_tree(tree: Path, owner: tuple[int, int] = (0, 0)) -> Path:
    """A repository with a commit, assorted modes, a file of another user, a symlink."""
    tree.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(tree)], check=True, timeout=30)
    (tree / "a.txt").write_text("a\n")
    (tree / "secret.txt").write_text("s\n")
    (tree / "secret.txt").chmod(0o600)
    (tree / "run.sh").write_text("#!/bin/sh\n")
    (tree / "run.sh").chmod(0o755)
    (tree / "private").mkdir(mode=0o700)
    (tree / "private" / "inner.txt").write_text("i\n")
    (tree / "tool").write_text("t\n")
    (tree / "tool").chmod(0o2755)
    (tree / "link").symlink_to("a.txt")
    (tree / "theirs.txt").write_text("t\n")
    author = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "-C", str(tree), *author, "add", "-A"], check=True, timeout=30)
    subprocess.run(
        ["git", "-C", str(tree), *author, "commit", "-qm", "first"], check=True, timeout=30
    )
    if os.geteuid() == 0:
        for path in [tree, *tree.rglob("*")]:
            os.lchown(path, *owner)
        os.lchown(tree / "theirs.txt", 4242, 4343)
        # chown cleared it; the set-gid bit is what a careless restore loses.
        (tree / "tool").chmod(0o2755)
    return tree


def snapshot(tree: Path) -> Snapshot:
    found = {}
    for path in [tree, *tree.rglob("*")]:
        status = path.lstat()
        found[str(path.relative_to(tree))] = (status.st_uid, status.st_gid, status.st_mode)
    return found


def as_uid(path: Path, user: tuple[int, int]) -> None:
    os.lchown(path, *user)


# -- the lending, on real trees --------------------------------------------------


@needs_root
def test_a_tree_root_owns_is_lent_to_the_sandbox_user_and_given_back(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "repo")
    before = snapshot(tree)

    loan = lend(tree, fallback_uid=SANDBOX_UID)
    lent = snapshot(tree)
    # What the sandbox's commands do, as uid 1000: an edit, a replaced file,
    # new files, a deliberate chmod.
    with (tree / "a.txt").open("a") as file:
        file.write("more\n")
    (tree / "new.txt").write_text("n\n")
    as_uid(tree / "new.txt", loan.user)
    (tree / "private" / "inner.tmp").write_text("replaced\n")
    as_uid(tree / "private" / "inner.tmp", loan.user)
    os.replace(tree / "private" / "inner.tmp", tree / "private" / "inner.txt")
    (tree / "run.sh").chmod(0o644)
    loan.give_back()
    after = snapshot(tree)

    assert loan.user == (SANDBOX_UID, SANDBOX_UID)
    assert {owner[:2] for owner in lent.values()} == {loan.user}
    changed_on_purpose = {"run.sh": 0o100644}
    for path, (uid, gid, mode) in before.items():
        assert after[path][:2] == (uid, gid), path
        assert after[path][2] == changed_on_purpose.get(path, mode), path
    assert after["new.txt"][:2] == (0, 0)
    assert stat.S_IMODE(after["tool"][2]) == 0o2755
    assert git(tree, "status", "--porcelain") == (
        " M a.txt\n M private/inner.txt\n M run.sh\n?? new.txt\n"
    )


@needs_root
def test_giving_back_twice_changes_nothing_more(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "repo")
    loan = lend(tree, fallback_uid=SANDBOX_UID)
    loan.give_back()
    os.lchown(tree / "a.txt", SANDBOX_UID, SANDBOX_UID)

    loan.give_back()

    assert (tree / "a.txt").lstat().st_uid == SANDBOX_UID


@needs_root
def test_a_tree_that_cannot_be_lent_is_given_back_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = make_tree(tmp_path / "repo")
    before = snapshot(tree)
    real_lchown = os.lchown

    def refuse_one(path: str, uid: int, gid: int) -> None:
        if path.endswith("secret.txt") and uid == SANDBOX_UID:
            raise PermissionError(1, "Operation not permitted", path)
        real_lchown(path, uid, gid)

    monkeypatch.setattr(os, "lchown", refuse_one)

    with pytest.raises(SandboxError) as raised:
        lend(tree, fallback_uid=SANDBOX_UID)

    assert str(raised.value).startswith("cannot lend the working tree to uid 1000: ")
    assert "\n" not in str(raised.value)
    assert snapshot(tree) == before


# -- whole runs on the real engine ------------------------------------------------


async def run_commands(client: DockerClient, tree: Path, command: str) -> str:
    async with DockerSandbox.start(
        tree, image=SANDBOX_IMAGE, job_id="test-ownership", client=client
    ) as sandbox:
        output = await BashTool(sandbox)({"command": command, "timeout": 60}, CTX)
    assert isinstance(output.content, str)
    return output.content


EDITS = (
    "id -u; echo more >> a.txt && echo new > made.txt && mkdir -p made/sub"
    " && touch made/sub/f && echo x >> private/inner.txt && chmod +x a.txt && git status -s"
)


@needs_root
async def test_a_run_as_root_leaves_roots_tree_as_it_was(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "repo")
    before = snapshot(tree)

    output = await run_commands(docker_client, tree, EDITS)

    after = snapshot(tree)
    assert output.startswith("1000\n"), output
    assert output.endswith("exit code: 0"), output
    for path, (uid, gid, mode) in before.items():
        assert after[path][:2] == (uid, gid), path
        if path != "a.txt":
            assert after[path][2] == mode, path
    assert after["a.txt"][2] == before["a.txt"][2] | 0o111
    assert {after[p][:2] for p in ("made.txt", "made", "made/sub", "made/sub/f")} == {(0, 0)}
    assert git(tree, "status", "--porcelain") == (
        " M a.txt\n M private/inner.txt\n?? made.txt\n?? made/\n"
    )


@needs_root
async def test_a_run_as_root_on_a_users_tree_runs_as_that_user(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    user = (4321, 4322)
    tree = make_tree(tmp_path / "repo", owner=user)
    (tree / "build.log").write_text("root's\n")
    before = snapshot(tree)

    output = await run_commands(docker_client, tree, f"id -u; id -g; echo x >> build.log; {EDITS}")

    after = snapshot(tree)
    assert output.startswith("4321\n4322\n"), output
    assert output.endswith("exit code: 0"), output
    for path, (uid, gid, _) in before.items():
        assert after[path][:2] == (uid, gid), path
    assert after["build.log"][:2] == (0, 0)
    assert after["made/sub/f"][:2] == user
    assert "?? made.txt" in git(tree, "status", "--porcelain", as_user=user)


async def test_a_run_as_a_normal_user_changes_no_owner(
    docker_client: DockerClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() == 0:
        # Root playing a runner of uid 4321 whose tree is its own.
        user: tuple[int, int] = (4321, 4321)
        as_user: tuple[int, int] | None = user
        tree = make_tree(tmp_path / "repo", owner=user)
        for name in ("geteuid", "getuid", "getgid"):
            monkeypatch.setattr(os, name, lambda: 4321)
    else:
        user, as_user = (os.getuid(), os.getgid()), None
        tree = make_tree(tmp_path / "repo")
    before = snapshot(tree)

    output = await run_commands(docker_client, tree, EDITS)

    after = snapshot(tree)
    assert output.startswith(f"{user[0]}\n"), output
    assert output.endswith("exit code: 0"), output
    for path, (uid, gid, _) in before.items():
        assert after[path][:2] == (uid, gid), path
    assert after["made.txt"][:2] == user
    assert "?? made.txt" in git(tree, "status", "--porcelain", as_user=as_user)


# -- a tree given for good (a job's own checkout) ------------------------------------


def outside_and_links(tmp_path: Path, tree: Path) -> Path:
    """A directory outside `tree`, root's, and links in `tree` leading into it:
    to a directory, to a file, through a directory link, and one dangling."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root's\n")
    (tree / "to-dir").symlink_to(outside)
    (tree / "to-file").symlink_to(outside / "passwd")
    (tree / "private" / "deeper").symlink_to("../to-dir")
    (tree / "dangling").symlink_to(tmp_path / "nothing-here")
    return outside


def ctimes(tree: Path) -> dict[str, int]:
    return {str(p.relative_to(tree)): p.lstat().st_ctime_ns for p in [tree, *tree.rglob("*")]}


@needs_root
def test_a_tree_given_is_the_sandbox_users_throughout_and_nothing_outside_it(
    tmp_path: Path,
) -> None:
    tree = make_tree(tmp_path / "repo")
    outside = outside_and_links(tmp_path, tree)
    outside_before = {p: p.lstat() for p in (outside, outside / "passwd")}

    loan = hand_over(tree, fallback_uid=SANDBOX_UID)
    loan.give_back()  # a tree given has nothing to give back

    assert loan.user == (SANDBOX_UID, SANDBOX_UID)
    given = snapshot(tree)
    assert {owner[:2] for owner in given.values()} == {loan.user}
    assert {"to-dir", "to-file", "private/deeper", "dangling", ".git/index"} <= given.keys()
    # Through none of the links: what they lead to is as it was, ctime included.
    for path, before in outside_before.items():
        after = path.lstat()
        assert (after.st_uid, after.st_gid, after.st_ctime_ns) == (
            before.st_uid,
            before.st_gid,
            before.st_ctime_ns,
        ), path


@needs_root
def test_giving_a_tree_touches_only_what_the_user_does_not_own_yet(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "repo")
    give_tree(tree, (SANDBOX_UID, SANDBOX_UID))
    # What the host's checkout wrote since: a file, a directory and the index.
    (tree / "new.txt").write_text("n\n")
    (tree / "made").mkdir()
    os.lchown(tree / ".git" / "index", 0, 0)
    before = ctimes(tree)

    assert give_tree(tree, (SANDBOX_UID, SANDBOX_UID)) == 3

    after = ctimes(tree)
    assert {path for path in before if after[path] != before[path]} == {
        "new.txt",
        "made",
        ".git/index",
    }


@needs_root
def test_a_tree_whose_root_is_a_link_is_not_given(tmp_path: Path) -> None:
    target = make_tree(tmp_path / "repo")
    (tmp_path / "link").symlink_to(target)
    before = snapshot(target)

    with pytest.raises(NotADirectoryError):
        give_tree(tmp_path / "link", (SANDBOX_UID, SANDBOX_UID))

    assert snapshot(target) == before


@needs_root
def test_a_tree_given_ahead_is_the_sandbox_users_as_a_run_will_find_it(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "repo")
    outside = outside_and_links(tmp_path, tree)

    give_ahead(tree)

    assert {owner[:2] for owner in snapshot(tree).values()} == {(SANDBOX_UID, SANDBOX_UID)}
    assert {(outside / "passwd").lstat().st_uid, outside.lstat().st_uid} == {0}
    assert hand_over(tree, fallback_uid=SANDBOX_UID).user == (SANDBOX_UID, SANDBOX_UID)


@needs_root
def test_a_tree_that_cannot_be_given_ahead_says_why_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = make_tree(tmp_path / "repo")
    # A chown first on PATH that refuses, as one would on a read-only file system.
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "chown").write_text(
        "#!/bin/sh\necho \"chown: changing ownership of '$6': Read-only file system\" >&2\n"
        'echo "chown: and more" >&2\nexit 1\n'
    )
    (tools / "chown").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")

    with pytest.raises(OSError, match=r"^chown failed: chown: changing ownership") as raised:
        give_ahead(tree)

    assert "\n" not in str(raised.value)
    assert "Read-only file system" in str(raised.value)


def test_a_runner_that_is_not_root_gives_nothing_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = make_tree(tmp_path / "repo")
    before = snapshot(tree)
    monkeypatch.setattr(os, "geteuid", lambda: 4321)

    give_ahead(tree)

    assert snapshot(tree) == before


RESTRICTIVE = (
    "id -u; echo more >> a.txt && umask 077 && mkdir -p made/sub && echo s > made/sub/f"
    " && echo key > made/key.pem && chmod 400 made/key.pem && chmod 500 made"
)


@needs_root
async def test_a_run_on_a_tree_given_keeps_gits_index_and_the_host_commits_its_work(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "repo")
    outside = outside_and_links(tmp_path, tree)
    git(tree, "add", "-A")
    git(tree, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "links")
    # As a spare tree is made: given ahead, then the index refreshed.
    give_ahead(tree)
    sandbox = (SANDBOX_UID, SANDBOX_UID)
    git(tree, "update-index", "-q", "--refresh", as_user=sandbox)
    # The job's checkout on the host, as root, since: the index rewritten, a file written.
    git(tree, "-c", f"safe.directory={tree}", "update-index", "-q", "--really-refresh")
    (tree / "host.txt").write_text("h\n")
    assert (tree / ".git" / "index").lstat().st_uid == 0

    async with DockerSandbox.start(
        tree, image=SANDBOX_IMAGE, job_id="test-ownership", client=docker_client, give_tree=True
    ) as box:
        output = await BashTool(box)({"command": RESTRICTIVE, "timeout": 60}, CTX)

    assert isinstance(output.content, str)
    assert output.content.startswith("1000\n"), output.content
    assert output.content.endswith("exit code: 0"), output.content
    after = snapshot(tree)
    assert {owner[:2] for owner in after.values()} == {sandbox}
    assert stat.S_IMODE(after["made"][2]) == 0o500
    # Nothing changed hands for the run: git's index still knows every file
    # but the one the run edited, without reading them again.
    assert git(tree, "diff-files", "--name-only", as_user=sandbox) == "a.txt\n"
    assert (outside / "passwd").lstat().st_uid == 0
    # Root's git on the host commits what the sandbox wrote, whatever its modes.
    sha = await commit_all(tree, "Work", author=Author("neo[bot]", "neo@example.com"))
    assert sha is not None
    assert git(tree, "show", f"{sha}:made/key.pem", as_user=sandbox) == "key\n"
    assert git(tree, "show", f"{sha}:made/sub/f", as_user=sandbox) == "s\n"
    assert git(tree, "status", "--porcelain", as_user=sandbox) == ""
    # And deletes the tree after the job.
    shutil.rmtree(tree)
    assert not tree.exists()
