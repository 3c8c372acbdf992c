"""`neo skills list`: the skills a run on a working tree would see, and those skipped."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bot.config import CONFIG_PATH, RepoConfigError, parse_repo_config
from bot.config.loading import MAX_CONFIG_BYTES
from bot.exits import EXIT_OK, EXIT_USAGE
from runner.context import find_git_root
from runner.skills import discover, listing, tree_skills

__all__ = ["add_skills_parser", "skills_command"]


def add_skills_parser(commands: Any) -> None:
    skills = commands.add_parser(
        "skills",
        help="the skills a run would see",
        description="List the skills of a working tree and the built-in ones.",
    )
    actions = skills.add_subparsers(dest="skills_command", required=True, parser_class=type(skills))
    shown = actions.add_parser(
        "list",
        help="each skill a run sees, and each skipped with the reason",
        description=(
            f"The skills a run on the working tree sees, with the `disabled_skills` of its"
            f" {CONFIG_PATH} applied, and each one skipped with the reason."
        ),
    )
    shown.add_argument("--repo", type=Path, help="working tree (default: current directory)")
    shown.add_argument(
        "--no-skill",
        action="append",
        default=[],
        metavar="NAME",
        help="leave the skill NAME out, as `neo run --no-skill` does (repeatable)",
    )


def skills_command(args: argparse.Namespace) -> int:
    repo: Path = args.repo if args.repo is not None else Path.cwd()
    if not repo.is_dir():
        print(f"neo: error: --repo {repo} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    root = find_git_root(repo) or repo.resolve()
    try:
        disabled = (*_configured(root), *args.no_skill)
    except (RepoConfigError, OSError) as error:
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(listing(discover(tree_skills(root), disabled=disabled)))
    return EXIT_OK


def _configured(root: Path) -> tuple[str, ...]:
    """The `disabled_skills` of the tree's own config file, as a job would apply them."""
    path = root / CONFIG_PATH
    if not path.is_file() or not path.resolve().is_relative_to(root.resolve()):
        return ()
    with path.open("rb") as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)
    return parse_repo_config(data).disabled_skills
