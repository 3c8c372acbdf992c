"""`neo --help` and a mistyped command: the subcommands listed without importing one."""

from __future__ import annotations

import argparse
import subprocess
import sys

from bot.cli.main import COMMANDS, build_parser


def _summaries(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help for choice in action._choices_actions}
    raise AssertionError("neo has no subcommands")


def test_the_listing_says_what_each_modules_parser_says() -> None:
    listed = build_parser(listing=True)
    full = build_parser()

    assert _summaries(listed) == _summaries(full)
    assert list(_summaries(listed)) == list(COMMANDS)
    assert listed.format_help() == full.format_help()


def test_neo_help_and_a_mistyped_command_import_no_subcommand() -> None:
    script = (
        "import sys\n"
        "from bot.cli.main import main\n"
        "for argv in (['--help'], ['rn', 'go'], []):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as exit:\n"
        "        print(exit.code, file=sys.stderr)\n"
        "print([m for m in sys.modules if m.startswith('bot.cli.') and m != 'bot.cli.main'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )

    assert done.stdout.splitlines()[-1] == "[]", done.stdout
    assert "usage: neo" in done.stdout
    choices = ", ".join(repr(name) for name in COMMANDS)
    assert done.stderr.splitlines() == [
        "0",
        f"neo: error: argument command: invalid choice: 'rn' (choose from {choices})"
        " (see neo --help)",
        "2",
        "neo: error: the following arguments are required: command (see neo --help)",
        "2",
    ]
