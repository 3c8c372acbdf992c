"""`neo action`: the arguments of the Action's step (`bot.action.main` does the work)."""

from __future__ import annotations

import argparse
import os
from typing import Any

__all__ = ["action_command", "add_action_parser"]


def add_action_parser(commands: Any) -> None:
    commands.add_parser(
        "action",
        help="run Neo as a GitHub Actions step (what action.yml calls)",
        description=(
            "Act on the workflow run's event (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH) as the "
            "App would, with the inputs action.yml passes as INPUT_* variables; set the "
            "step's outputs and summary. See docs/actions.md."
        ),
    )


def action_command(args: argparse.Namespace) -> int:
    # Loaded here, not to declare the (absent) flags: `neo --help` needs none of it.
    from bot.action.main import main

    # Everything comes from the environment the workflow's runner sets.
    return main(os.environ)
