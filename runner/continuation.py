"""What a job or `neo run` does with a response cut at the output limit: go on, twice.

A response that stops at `max_tokens` is most often a large file written in
one tool call. Ending the run there (as the loop does unasked) publishes an
incomplete pull request for want of a few thousand tokens; instead the model
is told what happened and gets up to `ATTEMPTS` more calls, each allowed the
model's whole output (`runner/llm/limits.py`), with its tools. A third cut in
a row fails closed as before: `max_output_tokens`, the last word, the work
kept as incomplete.
"""

from __future__ import annotations

from runner.agent.output_limit import Continuation

__all__ = ["ATTEMPTS", "ContinueCutResponses", "cut_note"]

ATTEMPTS = 2


def cut_note(max_tokens: int) -> str:
    """What the model is told after its response was cut at `max_tokens`."""
    return (
        f"[Neo: your last response was cut off at the output limit ({max_tokens:,} tokens):"
        " nothing after the cut arrived, and a tool call it was making was not run. Go on"
        " from where it stopped, in shorter responses: write a large file in parts (create"
        " it with its first part, then add the rest in further edits), and do not repeat"
        " what is already done.]"
    )


class ContinueCutResponses:
    """The `OutputLimit` of a run whose model writes at most `max_output` tokens a response."""

    def __init__(self, max_output: int, *, attempts: int = ATTEMPTS) -> None:
        self._max_output = max_output
        self._attempts = attempts

    def continuation(self, cuts: int, max_tokens: int) -> Continuation | None:
        if cuts > self._attempts:
            return None
        return Continuation(max(max_tokens, self._max_output), cut_note(max_tokens))
