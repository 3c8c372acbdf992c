"""A provider whose every call goes through the run's ledger.

The run meters each provider it hands out (the agent's, which its compactor
and its last word use too, and the subagents'), so a model call cannot be
made around the ledger: before a call its worst case is reserved (and its
`max_tokens` lowered to what is left, or the call refused), and what the
response cost settles it. A call that fails without a response releases its
reservation. A fallback inside is quoted at the dearer of the two models
until it has taken over.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

from runner.llm.fallback import may_answer
from runner.llm.provider import (
    Completed,
    Provider,
    StreamEvent,
    close_provider,
    prepare_provider,
)
from runner.llm.types import Request
from runner.spend.ledger import MIN_OUTPUT_TOKENS, Account, Ledger, Quote
from runner.spend.prompt_bound import PromptBound, within_window

__all__ = ["MeteredProvider"]


class MeteredProvider:
    """`inner`, each call charged to `account` (default: the run's own) of `ledger`."""

    def __init__(self, inner: Provider, ledger: Ledger, account: Account | None = None) -> None:
        self._inner = inner
        self._ledger = ledger
        self._account = account or ledger.main
        self._bound = PromptBound()

    @property
    def inner(self) -> Provider:
        return self._inner

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    @property
    def account(self) -> Account:
        return self._account

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def model(self) -> str:
        return self._inner.model

    async def aclose(self) -> None:
        await close_provider(self._inner)

    async def prepare(self) -> None:
        await prepare_provider(self._inner)

    def check(self, prompt_tokens: int) -> None:
        """Raise MaxCost when a call with a prompt of `prompt_tokens` could not write
        even the least useful answer now; reserves nothing."""
        self._ledger.check(self._account, self.quotes(prompt_tokens), minimum=MIN_OUTPUT_TOKENS)

    def prompt_bound(self, request: Request) -> int:
        """At most how many prompt tokens `request` is, as its reservation would count."""
        return self._bound.tokens(request)

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        quotes = self.quotes(self._bound.tokens(request))
        grant = self._ledger.reserve(self._account, quotes, request.max_tokens)
        if grant.max_tokens != request.max_tokens:
            request = replace(request, max_tokens=grant.max_tokens)
        try:
            async for event in self._inner.stream(request):
                if isinstance(event, Completed):
                    # Settled before it is passed on: a caller may stop reading here.
                    response = event.response
                    answered = Quote(self._inner.name, self._inner.model, 0)
                    cost = self._ledger.settle(grant, answered, response.usage)
                    self._bound.counted(request, response.usage)
                    if cost is not None and cost != response.usage.cost_usd:
                        usage = replace(response.usage, cost_usd=cost)
                        event = Completed(replace(response, usage=usage))
                yield event
        finally:
            self._ledger.release(grant)  # nothing when it was settled

    def quotes(self, prompt_tokens: int) -> list[Quote]:
        """The models that may answer a call with a prompt of `prompt_tokens`, as quoted."""
        return [
            Quote(name, model, within_window(prompt_tokens, model))
            for name, model in may_answer(self._inner)
        ]
