"""`neo run`'s parser module: its written-out choices are the runner's."""

from __future__ import annotations

from bot.cli import run
from bot.cli.run_output import OUTPUT_FORMATS
from runner.llm.registry import OPENAI_AUTHS, PROVIDERS
from runner.llm.types import EFFORTS
from runner.subagent import SubagentSettings
from tests.neo_cli import loaded_by


def test_the_choices_written_out_are_the_runners() -> None:
    assert run.PROVIDERS == PROVIDERS
    assert run.OPENAI_AUTHS == OPENAI_AUTHS
    assert run.EFFORTS == EFFORTS
    assert run.OUTPUT_FORMATS == OUTPUT_FORMATS
    assert SubagentSettings().max_children == run.SUBAGENTS_AT_MOST
    assert SubagentSettings().max_turns == run.SUBAGENT_MAX_TURNS


def test_a_bad_flag_is_refused_before_the_runner_loads() -> None:
    # Refusing `--max-cost abc` used to import the runner, the SDKs' types and
    # the output renderers first: most of a second of CPU for one line.
    heavy = ("bot.cli.run_agent", "runner.headless", "runner.llm", "runner.sandbox", "rich")
    refuse = (
        "from bot.cli.main import main\n"
        "try:\n"
        "    main(['run', '--max-cost', 'abc', '--image', 'neo-sandbox:local', 'go'])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 2, exit.code\n"
    )

    assert loaded_by(refuse, heavy) == []
