"""What `neo run` prints of a result: the text footer (the JSON is the result's own)."""

from __future__ import annotations

import io

from bot.cli.run_output import make_output
from runner.headless import RunResult
from runner.llm.types import Usage


def test_the_footer_names_the_calls_its_cost_leaves_out() -> None:
    # A subagent model without a price: its calls are recorded at no cost, so
    # the footer's cost was the parent's alone, with no word of them.
    out, err = io.StringIO(), io.StringIO()
    result = RunResult(
        is_error=False,
        result="done",
        error_type=None,
        error_message=None,
        stop_reason="end_turn",
        num_turns=2,
        usage=Usage(1_000, 100),
        cost_usd=0.0075,
        duration_ms=1_500,
        session_id="s",
        model_calls=10,
        unpriced=(("claude-private-9", 8),),
    )

    make_output("text", stdout=out, stderr=err).finish(result)

    assert err.getvalue().splitlines() == [
        "10 model calls · 1,000 in / 100 out tokens · $0.0075 · 8 calls of claude-private-9"
        " not priced · 1.5s · session s"
    ]
