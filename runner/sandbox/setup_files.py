"""The root files setup reads, on the host before any sandbox, and a run's environment request.

    files = read_setup_files(tree)                       # name -> content, with notes
    request = environment_for(tree, config.setup, repository=spec.repo_url)

Symbolic links are never followed and nothing outside the tree is read: a
repository's link could point at the host's own files.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Sequence
from pathlib import Path

from runner.sandbox.requests import Bounds, EnvironmentRequest
from runner.sandbox.setup_detect import is_setup_file, plan_setup
from runner.sandbox.setup_plan import SetupFiles

__all__ = ["MAX_FILE_BYTES", "environment_for", "read_setup_files"]

# A lockfile larger than this is not read (its step is not detected, and a note says so).
MAX_FILE_BYTES = 64 * 1024 * 1024
_BOUNDS = Bounds()


def read_setup_files(tree: Path, commands: Sequence[str] = ()) -> SetupFiles:
    """The tree's root setup files, and the files `commands` name (for an explicit plan's key).

    Symbolic links are never followed (a repository's link could point at the
    host's files), and nothing outside the tree is read.
    """
    root = Path(os.path.realpath(tree))
    contents: dict[str, bytes] = {}
    notes: list[str] = []
    with os.scandir(root) as entries:
        names = sorted(entry.name for entry in entries if is_setup_file(entry.name))
    for name in [*names, *_named_paths(commands)]:
        if name in contents:
            continue
        data = _read_regular(root, name, notes, quiet=name not in names)
        if data is not None:
            contents[name] = data
    return SetupFiles(contents, tuple(notes))


def _named_paths(commands: Sequence[str]) -> list[str]:
    """Relative paths the commands name (`-r requirements/dev.txt`, `--file=x.lock`)."""
    found = []
    for command in commands:
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        for word in words:
            word = word.partition("=")[2] if word.startswith("--") else word
            word = re.sub(r"^-[rc](?=.)", "", word)
            path = os.path.normpath(word) if word else ""
            if path and not path.startswith(("/", "-", "..")) and path != ".":
                found.append(path)
    return found


def _read_regular(root: Path, name: str, notes: list[str], *, quiet: bool) -> bytes | None:
    """The content of regular file `name` under `root`, reached through no symbolic link."""
    fd = None
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        *parents, leaf = name.split("/")
        for part in parents:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
        child = os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        os.close(fd)
        fd = child
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > MAX_FILE_BYTES:
            notes.append(f"{name} is larger than {MAX_FILE_BYTES // 2**20} MiB: not read")
            return None
        with os.fdopen(fd, "rb") as handle:
            fd = None
            return handle.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES]
    except OSError:
        if not quiet:
            notes.append(f"{name} could not be read (a symbolic link is never followed)")
        return None
    finally:
        if fd is not None:
            os.close(fd)


def environment_for(
    tree: Path,
    setting: Sequence[str] | None,
    *,
    repository: str | None,
    share: bool = True,
    bounds: Bounds = _BOUNDS,
) -> EnvironmentRequest:
    """What a run on `tree` asks of its sandbox's environment: the plan for `setting`
    (see `plan_setup`) and the files it read, kept and reused under `repository`."""
    files = read_setup_files(tree, setting or ())
    return EnvironmentRequest(
        plan_setup(setting, files), files, repository=repository, share=share, bounds=bounds
    )
