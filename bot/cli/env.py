"""`neo env`: the prepared environments this host's Docker engine keeps (docs/setup.md).

    neo env list                 each one: repository, size, when prepared and last used
    neo env prune                those past their time, and beyond NEO_PREPARED_* bounds
    neo env prune --all          all of them

A job's own image (a fork's pull request's) is removed once its job is
gone, and an environment a running job's sandbox uses is never removed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from bot.config.prepared import PreparedSettings
from bot.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from runner.text import one_line

if TYPE_CHECKING:
    from runner.sandbox.prepared import Entry

__all__ = ["add_env_parser", "env_command"]


def add_env_parser(commands: Any) -> None:
    env = commands.add_parser(
        "env",
        help="list or prune the prepared environments kept on this host",
        description=(
            "The prepared environments this host's Docker engine keeps: the sandbox after"
            " setup, which the next job of the same repository and files starts from."
        ),
    )
    actions = env.add_subparsers(dest="env_command", required=True, parser_class=type(env))
    listing = actions.add_parser("list", help="each prepared environment, most recently used first")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    prune = actions.add_parser(
        "prune",
        help="remove those past their time or beyond the bounds (or all)",
        description=(
            "Remove the prepared environments unused for NEO_PREPARED_MAX_AGE hours (default"
            " 24), then the least recently used beyond NEO_PREPARED_MAX_COUNT (20) or"
            " NEO_PREPARED_MAX_GB (20); with --all, every one. One a running job uses stays."
        ),
    )
    prune.add_argument("--all", action="store_true", help="remove every prepared environment")
    prune.add_argument(
        "--repository",
        metavar="REPO",
        help="only this repository's (OWNER/NAME, its clone URL, or a `neo run` tree's path)",
    )


def env_command(args: argparse.Namespace) -> int:
    try:
        bounds = PreparedSettings().prepared_bounds()
    except ValidationError as error:
        problem = error.errors()[0]
        name = "NEO_" + str(problem["loc"][0]).upper()
        return _fail(f"neo: error: {name}: {problem['msg']}", EXIT_USAGE)
    # The docker SDK loads only for the commands that use it.
    from docker.errors import DockerException

    from runner.sandbox import prepared
    from runner.sandbox.base import SandboxError
    from runner.sandbox.docker import docker_client
    from runner.sandbox.preparing import orphaned

    try:
        client = docker_client()
        client.ping()
        if args.env_command == "list":
            entries = sorted(prepared.list_entries(client), key=lambda e: -e.last_used)
            _show(entries, args.format)
            return EXIT_OK
        repository = _repository(args.repository, prepared.list_entries(client))
        if args.repository is not None and repository is None:
            print(f"no prepared environment of {args.repository}")
            return EXIT_OK
        removed = prepared.prune(
            client, bounds, everything=args.all, orphan=orphaned, repository=repository
        )
    except (DockerException, SandboxError) as error:
        return _fail(f"neo: error: docker: {one_line(error)}", EXIT_FAILED)
    for entry in removed:
        print(f"removed {_line(entry)}")
    total = sum(entry.size for entry in removed)
    print(f"{len(removed)} removed, {_size(total)} freed")
    return EXIT_OK


def _repository(asked: str | None, entries: list[Entry]) -> str | None:
    """The label of the entries `asked` names: as written, or the clone URL ending in it."""
    if asked is None:
        return None
    wanted = asked.strip().removesuffix(".git").rstrip("/")
    for entry in entries:
        label = entry.repository.removesuffix(".git").rstrip("/")
        if label == wanted or label.endswith(f"/{wanted}"):
            return entry.repository
    return None


def _show(entries: list[Entry], form: str) -> None:
    if form == "json":
        print(json.dumps([_json(entry) for entry in entries]))
        return
    if not entries:
        print("no prepared environments")
        return
    for entry in entries:
        print(_line(entry))


def _line(entry: Entry) -> str:
    name = entry.reference or entry.image_id[:19]
    what = f"job {entry.job}'s own" if entry.job else (entry.repository or "?")
    return (
        f"{name[:24]}  {what}  {_size(entry.size)}"
        f"  prepared {_ago(entry.created)}, last used {_ago(entry.last_used)}"
    )


def _json(entry: Entry) -> dict[str, object]:
    return {
        "image": entry.image_id,
        "reference": entry.reference or None,
        "repository": entry.repository,
        "job": entry.job,
        "bytes": entry.size,
        "created": entry.created,
        "last_used": entry.last_used,
        "setup": [step.command for step in entry.setup.steps] if entry.setup else None,
    }


def _size(size: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _ago(moment: float) -> str:
    seconds = max(time.time() - moment, 0)
    for unit, scale in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= scale:
            return f"{seconds / scale:.0f} {unit} ago"
    return "just now"


def _fail(message: str, status: int) -> int:
    print(message, file=sys.stderr)
    return status
