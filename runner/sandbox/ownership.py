"""Who the docker sandbox's commands run as, and the tree lent to them and given back,
or given to them for good.

A sandboxed command is never root. Run by a normal user, commands run as that
user and nothing changes hands. Run as root, they run as the tree's owner
when that is not root; on a tree root owns, as the image's user (uid 1000),
which gets the tree for the run: every entry not already its own is recorded
and handed over, and given back when the container is gone. What existed gets
its owner and group back (and the set-id bits a chown clears, when the mode is
otherwise unchanged); what the run created goes to the tree's owner. So git
still trusts the repository afterwards ("dubious ownership" is what a tree
left to uid 1000 gets from root's git), and the user's files are as they were.

    loan = lend(tree, fallback_uid=1000)   # before the container starts
    ...                                    # commands run as loan.user
    loan.give_back()                       # after it is removed; idempotent

A tree the runner made for one run and deletes after it (a job's checkout)
is not lent but given (`hand_over`): what the user does not own yet becomes
its own, and nothing is given back. Lending it cost two walks of the whole
tree and, as every chown changes a file's ctime, made git hash every file
again; a tree given ahead of time (`give_tree`: a spare tree, as it is
made) changes hands only where the host's checkout wrote it since, and
git's index stays fresh for the rest. Root's git still reads and commits
what the sandbox wrote, whatever its modes: it trusts the tree by
`safe.directory`, and the tree is checked before each use (`runner.git`).
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.sandbox.base import SandboxError
from runner.text import one_line

__all__ = ["SANDBOX_UID", "Loan", "give_ahead", "give_tree", "hand_over", "lend", "sandbox_user"]

log = logging.getLogger("neo.sandbox")

# The sandbox image's `neo` user: who commands run as on a tree root owns.
SANDBOX_UID = 1000

# What a chown by root clears on a file that is not a directory.
_SET_ID = stat.S_ISUID | stat.S_ISGID


@dataclass(frozen=True, slots=True)
class Original:
    uid: int
    gid: int
    mode: int


def sandbox_user(
    euid: int, me: tuple[int, int], owner: tuple[int, int], fallback: int
) -> tuple[int, int]:
    """The uid and gid commands run as (pure): never root."""
    if euid != 0:
        return me
    if owner[0] != 0:
        return owner
    return fallback, fallback


@dataclass(slots=True)
class Loan:
    """The tree as lent: `user` runs the commands; `give_back` undoes the lending."""

    root: Path
    user: tuple[int, int]
    owner: tuple[int, int]
    # Entries handed to `user`, by path relative to the root, as they were.
    changed: Mapping[str, Original] = field(default_factory=dict)
    # Entries `user` owned already: neither handed over nor the run's own.
    kept: frozenset[str] = frozenset()
    lent: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def give_back(self) -> None:
        """Restore what `lend` changed and give what the run made to the owner.

        Call it once no process of the sandbox is left; it never raises (it
        runs from finalizers too), and a second call does nothing.
        """
        with self._lock:
            if not self.lent:
                return
            self.lent = False
        failed: list[str] = []
        for relative, path in _entries(self.root):
            try:
                self._give_back(relative, path)
            except OSError as error:
                failed.append(f"{relative}: {one_line(error)}")
        if failed:
            log.warning(
                "could not give %d path(s) of %s back to their owners, first %s",
                len(failed),
                self.root,
                failed[0],
            )

    def _give_back(self, relative: str, path: str) -> None:
        status = os.lstat(path)
        if (status.st_uid, status.st_gid) != self.user:
            # Not the sandbox's: the host (its git) wrote it, as its owner.
            return
        original = self.changed.get(relative)
        if original is None:
            if relative not in self.kept:
                os.lchown(path, *self.owner)
            return
        os.lchown(path, original.uid, original.gid)
        if (
            original.mode & _SET_ID
            and not stat.S_ISLNK(status.st_mode)
            and stat.S_IMODE(status.st_mode) == stat.S_IMODE(original.mode) & ~_SET_ID
        ):
            os.chmod(path, stat.S_IMODE(original.mode))


def lend(root: Path, *, fallback_uid: int) -> Loan:
    """The tree at `root` lent to the user commands run as (see the module's doc).

    Raises SandboxError, with everything already handed over given back, when
    an entry cannot be.
    """
    top = os.lstat(root)
    owner = (top.st_uid, top.st_gid)
    user = sandbox_user(os.geteuid(), (os.getuid(), os.getgid()), owner, fallback_uid)
    if os.geteuid() != 0:
        return Loan(root, user, owner)
    changed: dict[str, Original] = {}
    kept: set[str] = set()
    loan = Loan(root, user, owner, changed, lent=True)
    try:
        for relative, path in _entries(root):
            status = os.lstat(path)
            if (status.st_uid, status.st_gid) == user:
                kept.add(relative)
                continue
            changed[relative] = Original(status.st_uid, status.st_gid, status.st_mode)
            os.lchown(path, *user)
    except OSError as error:
        loan.kept = frozenset(kept)
        loan.give_back()
        raise SandboxError(
            f"cannot lend the working tree to uid {user[0]}: {one_line(error)}"
        ) from None
    loan.kept = frozenset(kept)
    # A tree that was the user's throughout has nothing to give back.
    loan.lent = bool(changed) or user != owner
    return loan


def hand_over(root: Path, *, fallback_uid: int) -> Loan:
    """The tree at `root`, made for one run and deleted after it, given to the
    user commands run as for good (see the module's doc); nothing to give back.

    Raises SandboxError when an entry cannot be handed over.
    """
    top = os.lstat(root)
    owner = (top.st_uid, top.st_gid)
    user = sandbox_user(os.geteuid(), (os.getuid(), os.getgid()), owner, fallback_uid)
    if os.geteuid() == 0:
        try:
            give_tree(root, user)
        except OSError as error:
            raise SandboxError(
                f"cannot give the working tree to uid {user[0]}: {one_line(error)}"
            ) from None
    return Loan(root, user, owner)


def give_ahead(tree: Path) -> None:
    """Give `tree`, made by the runner for a later run in the docker sandbox (a
    spare tree), to the user that run's commands will run as, as `hand_over`
    will: its own hand-over then finds little to do. Nothing unless root.

    Background work, beside a job's own: `chown -R` at a low CPU priority,
    in a process of its own (a walk in Python held the interpreter's lock
    for most of 50 ms, on the event loop's way). No link is followed: each
    changes hands itself. Raises OSError when the tree cannot be handed over.
    """
    if os.geteuid() != 0:
        return
    top = os.lstat(tree)
    uid, gid = sandbox_user(0, (0, 0), (top.st_uid, top.st_gid), SANDBOX_UID)
    argv = ["nice", "-n", "10", "chown", "-R", "-h", "-P", f"{uid}:{gid}", "--", str(tree)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_GIVE_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise OSError(f"chown did not give {tree} away within {_GIVE_TIMEOUT:g}s") from None
    if done.returncode != 0:
        raise OSError(f"chown failed: {one_line(done.stderr) or done.returncode}")


# For `give_ahead`'s chown of a whole tree.
_GIVE_TIMEOUT = 300.0


def give_tree(root: Path, user: tuple[int, int]) -> int:
    """Make `root` and every entry under it `user`'s; how many changed hands.

    What `user` owns already is not touched (its ctime, which git's index
    records, stays). The walk goes by directory descriptors, one per level,
    and never follows a symbolic link: a link in the tree changes hands
    itself, what it points to is neither changed nor looked at, even if a
    directory were swapped for a link while the walk is under way (opening
    it then fails).
    """
    uid, gid = user
    changed = 0
    # The open directories from the top down to the one being walked, each
    # with what is left of its entries.
    levels: list[tuple[int, Iterator[os.DirEntry[str]]]] = []
    try:
        _descend(levels, root)
        status = os.fstat(levels[0][0])
        if (status.st_uid, status.st_gid) != user:
            os.fchown(levels[0][0], uid, gid)
            changed += 1
        while levels:
            directory, pending = levels[-1]
            entry = next(pending, None)
            if entry is None:
                levels.pop()
                os.close(directory)
                continue
            status = entry.stat(follow_symlinks=False)
            if (status.st_uid, status.st_gid) != user:
                os.chown(entry.name, uid, gid, dir_fd=directory, follow_symlinks=False)
                changed += 1
            if stat.S_ISDIR(status.st_mode):
                _descend(levels, entry.name, directory)
    finally:
        for directory, _ in levels:
            os.close(directory)
    return changed


# A directory opened to walk it: never through a symbolic link.
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _descend(
    levels: list[tuple[int, Iterator[os.DirEntry[str]]]],
    name: str | Path,
    parent: int | None = None,
) -> None:
    """Open directory `name` (in `parent`) and put it with its entries on `levels`;
    each entry stats itself by the descriptor."""
    directory = os.open(name, _DIRECTORY, dir_fd=parent)
    try:
        with os.scandir(directory) as listing:
            entries = list(listing)
    except BaseException:
        os.close(directory)
        raise
    levels.append((directory, iter(entries)))


def _entries(root: Path) -> Iterator[tuple[str, str]]:
    """Every entry under `root`, itself first, never following a symlink out of it."""
    yield ".", str(root)
    for directory, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            path = os.path.join(directory, name)
            yield os.path.relpath(path, root), path
