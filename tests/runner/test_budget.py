"""RunBudget: what the model is told of its limits, and the call a cost limit refuses."""

from __future__ import annotations

import pytest

from runner.agent import MaxCost
from runner.budget import RunBudget, ran_out, wrap_up_prompt
from runner.errors import ConfigError
from runner.llm.types import Usage
from runner.spend import Ledger, MeteredProvider
from tests.fakes.scripted import ScriptedProvider

MODEL = "claude-sonnet-4-6"  # $3 in, $15 out, $0.30 cache read per million tokens


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("max_turns", "told_at"),
    [(10, 8), (100, 80), (3, 3), (1, 1)],
    ids=["ten", "hundred", "three", "one"],
)
def test_the_turns_left_are_told_once_at_eighty_percent(max_turns: int, told_at: int) -> None:
    budget = RunBudget(max_turns=max_turns)
    notes = {turn: budget.note(turn) for turn in range(1, max_turns + 1)}

    told = [turn for turn, note in notes.items() if note]
    assert told == [told_at]
    assert f"{told_at} of {max_turns} model calls used, {max_turns - told_at} left" in str(
        notes[told_at]
    )


def test_the_time_left_is_told_once_past_eighty_percent() -> None:
    clock = Clock()
    budget = RunBudget(max_turns=100, time_limit=600.0, clock=clock)
    clock.now = 470.0
    assert budget.note(1) is None
    clock.now = 481.0
    note = budget.note(2)
    assert note is not None
    assert "about 2 of 10 minutes left" in note
    clock.now = 590.0
    assert budget.note(3) is None


def metered(limit: float) -> MeteredProvider:
    ledger = Ledger(limit)
    ledger.main.keeps_wrap_up = False  # only what the calls themselves cost, here
    return MeteredProvider(ScriptedProvider(model=MODEL), ledger)


def test_a_call_the_ledger_could_not_pay_for_is_refused_before_it_is_started() -> None:
    spend = metered(0.10)
    budget = RunBudget(max_turns=100, spend=spend)
    # 10,000 prompt tokens at the dearest rate ($6 a million for an hour's cache
    # write) and 1,024 of output ($15 a million): $0.075.
    budget.before_call(1, Usage(), 10_000)
    grant = spend.ledger.reserve(spend.ledger.main, spend.quotes(10_000), 1_024)
    spend.ledger.settle(grant, spend.quotes(0)[0], Usage(input_tokens=10_000))

    with pytest.raises(MaxCost) as raised:
        budget.before_call(2, Usage(), 10_000)

    assert str(raised.value) == (
        "stopped before model call 2: $0.03 of the $0.10 cost limit is spent: the next"
        " model call would cost up to $0.08 (a prompt of up to 10,000 tokens), more than"
        " the $0.07 left"
    )
    assert raised.value.kind == "max_cost"


def test_the_cost_spent_is_told_past_eighty_percent() -> None:
    spend = metered(1.00)
    budget = RunBudget(max_turns=100, spend=spend)
    notes = []
    for turn in range(1, 19):
        notes.append(budget.note(turn))
        # Each call costs $0.05 (about 16,667 input tokens).
        grant = spend.ledger.reserve(spend.ledger.main, spend.quotes(16_667), 1_024)
        spend.ledger.settle(grant, spend.quotes(0)[0], Usage(input_tokens=16_667))
    told = [(turn, note) for turn, note in enumerate(notes, start=1) if note]
    assert len(told) == 1
    turn, note = told[0]
    assert turn == 17
    assert note is not None
    assert "$0.80 of the $1.00 cost limit spent" in note


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("max_turns", "all the model calls"),
        ("max_cost", "cost limit"),
        ("timeout", "time limit"),
        ("max_output_tokens", "output token limit"),
        ("context_window_exceeded", "context window"),
    ],
)
def test_every_budget_is_named_in_the_last_word(kind: str, words: str) -> None:
    error = type("Stopped", (ConfigError,), {"kind": kind})("stopped")
    assert ran_out(error)
    assert words in wrap_up_prompt(error)
    assert "cannot call tools" in wrap_up_prompt(error)


def test_other_failures_are_not_budgets() -> None:
    assert not ran_out(ConfigError("bad"))
