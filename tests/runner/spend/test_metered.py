"""The metered provider: every call through the ledger, with what is left as its output limit."""

from __future__ import annotations

import pytest

from runner.agent import MaxCost
from runner.llm.errors import ProviderHTTPError
from runner.llm.fallback import FallbackProvider
from runner.llm.price_book import Price, PriceBook
from runner.llm.provider import Completed, StreamEvent
from runner.llm.types import END_TURN, Message, Request, Response, Text, Usage
from runner.spend import Ledger, MeteredProvider, bound_request
from tests.fakes.scripted import ScriptedProvider

BOOK = PriceBook(
    operator={"cheap": Price(input=1.0, output=10.0), "dear": Price(input=2.0, output=20.0)}
)


def answer(usage: Usage) -> Response:
    return Response((Text("ok"),), END_TURN, usage)


def request(text: str = "hello", max_tokens: int = 32_000) -> Request:
    return Request(messages=(Message("user", (Text(text),)),), max_tokens=max_tokens)


async def completed(provider: MeteredProvider, req: Request) -> Response:
    events: list[StreamEvent] = [event async for event in provider.stream(req)]
    last = events[-1]
    assert isinstance(last, Completed)
    return last.response


async def test_the_provider_is_asked_for_no_more_output_than_is_left() -> None:
    inner = ScriptedProvider(answer(Usage(10, 10)), model="cheap")
    ledger = Ledger(0.05, BOOK)
    ledger.main.keeps_wrap_up = False
    metered = MeteredProvider(inner, ledger)

    await completed(metered, request())

    prompt = bound_request(request())
    assert inner.requests[0].max_tokens == int((0.05 - prompt * 1e-6) / 1e-5)


async def test_a_refused_call_never_reaches_the_provider() -> None:
    inner = ScriptedProvider(model="cheap")
    metered = MeteredProvider(inner, Ledger(0.01, BOOK))

    with pytest.raises(MaxCost):
        await completed(metered, request("x" * 20_000))

    assert inner.requests == []


async def test_the_response_carries_what_the_ledger_charged() -> None:
    inner = ScriptedProvider(answer(Usage(input_tokens=1_000_000)), model="cheap")
    ledger = Ledger(None, BOOK)

    response = await completed(MeteredProvider(inner, ledger), request())

    assert response.usage.cost_usd == pytest.approx(1.0)
    assert ledger.spent == pytest.approx(1.0)
    assert ledger.calls == 1


async def test_a_call_that_fails_releases_its_reservation() -> None:
    failure = ProviderHTTPError("test", 400, "invalid_request_error", "bad")
    inner = ScriptedProvider(failure, model="cheap")
    ledger = Ledger(1.0, BOOK)

    with pytest.raises(ProviderHTTPError):
        await completed(MeteredProvider(inner, ledger), request())

    assert (ledger.reserved, ledger.spent, ledger.calls) == (0.0, 0.0, 0)


async def test_a_fallback_is_reserved_at_the_dearer_model_until_it_takes_over() -> None:
    ledger = Ledger(10.0, BOOK)
    ledger.main.keeps_wrap_up = False
    reserved: list[float] = []

    def cheap_answer(_: Request) -> Response:
        reserved.append(ledger.reserved)
        return answer(Usage(50, 1_000))

    unavailable = ProviderHTTPError("test", 529, "overloaded_error", "busy")
    primary = ScriptedProvider(unavailable, model="dear")
    fallback = ScriptedProvider(cheap_answer, cheap_answer, model="cheap")
    metered = MeteredProvider(FallbackProvider(primary, fallback), ledger)
    prompt = bound_request(request(max_tokens=1_000))

    first = await completed(metered, request(max_tokens=1_000))
    await completed(metered, request(max_tokens=1_000))

    # While the primary might answer, its dearer worst case was reserved;
    # once the fallback took over, only the fallback's (the same prompt again:
    # the 50 tokens the fallback counted, and a margin).
    counted = int(50 * 1.01) + 256
    assert reserved == [
        pytest.approx(prompt * 2e-6 + 1_000 * 2e-5),
        pytest.approx(counted * 1e-6 + 1_000 * 1e-5),
    ]
    # Answered by the fallback: charged at its own price.
    assert first.usage.cost_usd == pytest.approx(50 * 1e-6 + 1_000 * 1e-5)
    assert ledger.calls == 2
