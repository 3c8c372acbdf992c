"""The Anthropic adapter, driving the real SDK against the fake Messages API."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from runner.errors import ConfigError
from runner.llm.anthropic import AnthropicProvider, build_params
from runner.llm.errors import ContextOverflow, ProviderConnectionError, ProviderHTTPError
from runner.llm.provider import Retrying, TextDelta
from runner.llm.types import (
    CacheTTL,
    Effort,
    Message,
    Opaque,
    Request,
    SystemPrompt,
    Text,
    ToolResult,
    ToolSpec,
    ToolUse,
    Usage,
)
from tests.fakes import (
    BrokenStream,
    Disconnect,
    ErrorReply,
    FakeAnthropicAPI,
    RawStream,
    Reply,
    Stall,
    StreamError,
    text,
    thinking,
    tool_use,
)
from tests.fakes import Usage as WireUsage
from tests.fakes.anthropic_api import INTERLEAVED_THINKING, validate_request, validate_thinking
from tests.runner.llm.streams import HELLO, Adapter, Sleeps, collect, completed, opened

provider = Adapter(AnthropicProvider, "claude-sonnet-5-5")


async def test_streams_text_and_reports_usage_with_cache_tokens(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    usage = WireUsage(120, 30, cache_creation_input_tokens=50, cache_read_input_tokens=700)
    fake_anthropic.script(Reply([text("Hello there, friend")], usage=usage))

    events = await collect(provider(fake_anthropic))

    deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert deltas == "Hello there, friend"
    response = completed(events).response
    assert response.content == (Text("Hello there, friend"),)
    assert response.stop_reason == "end_turn"
    assert response.usage == Usage(120, 30, 50, 700)
    assert fake_anthropic.requests[0].body["stream"] is True


async def test_tool_use_and_thinking_round_trip(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(
        Reply(
            [
                thinking("let me look", signature="sig-123"),
                text("Reading."),
                tool_use("toolu_1", "read_file", {"path": "a.py", "limit": 5}),
            ],
            stop_reason="tool_use",
        ),
        Reply([text("done")]),
    )
    p = provider(fake_anthropic)

    first = completed(await collect(p)).response
    assert first.stop_reason == "tool_use"
    assert first.tool_uses == (ToolUse("toolu_1", "read_file", {"path": "a.py", "limit": 5}),)
    opaque = first.content[0]
    assert isinstance(opaque, Opaque)
    assert opaque.kind == "thinking"
    assert opaque.data["signature"] == "sig-123"

    follow_up = Request(
        messages=(
            *HELLO.messages,
            Message("assistant", first.content),
            Message("user", (ToolResult("toolu_1", (Text("print(1)"),)),)),
        )
    )
    await collect(p, follow_up)

    replayed = fake_anthropic.requests[1].body["messages"][1]["content"][0]
    assert replayed == {"type": "thinking", "thinking": "let me look", "signature": "sig-123"}


async def test_cache_breakpoints_on_stable_prefix_and_newest_message(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.script(Reply([text("ok")]))
    spec = ToolSpec("bash", "Run a command.", {"type": "object", "properties": {}})
    request = Request(
        messages=(
            Message("user", (Text("first"),)),
            Message("assistant", (Text("answer"),)),
            Message("user", (Text("second"), Text("third"))),
        ),
        system=SystemPrompt(("base", "environment", "project")),
        tools=(spec,),
    )

    await collect(provider(fake_anthropic), request)

    body = fake_anthropic.requests[0].body
    marked = [i for i, block in enumerate(body["system"]) if "cache_control" in block]
    assert marked == [0, 2]
    messages = body["messages"]
    assert "cache_control" in messages[-1]["content"][-1]
    assert "cache_control" not in messages[-1]["content"][0]
    assert all("cache_control" not in b for m in messages[:-1] for b in m["content"])
    assert body["tools"] == [
        {"name": "bash", "description": "Run a command.", "input_schema": spec.input_schema}
    ]


_TTL = [
    pytest.param("short", None, None, id="five-minutes"),
    pytest.param("long_prefix", "1h", None, id="an-hour-for-the-stable-prefix"),
    pytest.param("long", "1h", "1h", id="an-hour-for-all"),
]


@pytest.mark.parametrize(("ttl", "prefix", "newest"), _TTL)
async def test_the_cache_ttl_is_placed_on_the_breakpoints_it_names(
    fake_anthropic: FakeAnthropicAPI, ttl: CacheTTL, prefix: str | None, newest: str | None
) -> None:
    fake_anthropic.script(
        Reply(
            [text("ok")], usage=WireUsage(10, 5, 3_000, 500, cache_creation_1h_input_tokens=2_000)
        )
    )
    request = Request(
        messages=(Message("user", (Text("first"),)),),
        system=SystemPrompt(("base", "environment", "project")),
        cache_ttl=ttl,
    )

    response = completed(await collect(provider(fake_anthropic), request)).response

    body = fake_anthropic.requests[0].body
    marks = [b.get("cache_control") for b in body["system"]]
    newest_mark = body["messages"][-1]["content"][-1]["cache_control"]

    def control(ttl: str | None) -> dict[str, str]:
        return {"type": "ephemeral"} if ttl is None else {"type": "ephemeral", "ttl": ttl}

    assert marks == [control(prefix), None, control(prefix)]
    assert newest_mark == control(newest)
    # The fake took it (an hour's breakpoint after five minutes' is refused).
    assert fake_anthropic.pending == 0
    assert response.usage == Usage(10, 5, 3_000, 500, cache_creation_1h_input_tokens=2_000)


def test_the_fake_refuses_an_hours_breakpoint_after_five_minutes() -> None:
    system: list[dict[str, Any]] = [
        {"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}
    ]
    body = {
        "model": "claude-sonnet-5-5",
        "max_tokens": 100,
        "system": system,
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "u",
                        "cache_control": {"type": "ephemeral", "ttl": "1h"},
                    }
                ],
            }
        ],
    }
    problem = validate_request(body)
    assert problem is not None
    assert "ttl='1h' cannot come after one with ttl='5m'" in problem
    system[0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    assert validate_request(body) is None


async def test_overloaded_twice_then_success_retries(fake_anthropic: FakeAnthropicAPI) -> None:
    overloaded = ErrorReply(529, "overloaded_error", "Overloaded")
    fake_anthropic.script(overloaded, overloaded, Reply([text("finally")]))
    sleeps = Sleeps()

    events = await collect(provider(fake_anthropic, sleeps))

    assert len(fake_anthropic.requests) == 3
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [r.attempt for r in retries] == [1, 2]
    assert retries[0].reason == (
        "anthropic 529 overloaded_error: Overloaded"
        " (overloaded: try again later, or add a --fallback provider)"
    )
    assert len(sleeps.delays) == 2
    assert completed(events).response.text == "finally"


async def test_retry_after_is_honoured(fake_anthropic: FakeAnthropicAPI) -> None:
    limited = ErrorReply(429, "rate_limit_error", "slow down", headers={"retry-after": "7"})
    fake_anthropic.script(limited, Reply([text("ok")]))
    sleeps = Sleeps()

    await collect(provider(fake_anthropic, sleeps))

    assert sleeps.delays == [7.0]


async def test_401_is_one_line_after_one_request(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(Reply([text("never sent")]))

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(provider(fake_anthropic, api_key="wrong-key"))

    assert str(caught.value) == (
        "anthropic 401 authentication_error: invalid x-api-key (check ANTHROPIC_API_KEY)"
    )
    assert caught.value.kind == "provider_http_error"
    assert len(fake_anthropic.requests) == 1
    assert "wrong-key" not in str(caught.value)


async def test_raw_error_body_goes_to_debug_log_only(
    fake_anthropic: FakeAnthropicAPI, caplog: pytest.LogCaptureFixture
) -> None:
    fake_anthropic.script(ErrorReply(400, "invalid_request_error", "max_tokens: too large"))

    with caplog.at_level(logging.DEBUG, logger="neo.llm"), pytest.raises(ProviderHTTPError) as e:
        await collect(provider(fake_anthropic))

    assert str(e.value) == "anthropic 400 invalid_request_error: max_tokens: too large"
    assert "request_id" not in str(e.value)
    assert any("request_id" in record.getMessage() for record in caplog.records)
    assert len(fake_anthropic.requests) == 1


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(BrokenStream(after_events=4), id="stream-breaks-midway"),
        pytest.param(StreamError("overloaded_error", after_events=4), id="error-event-in-stream"),
        pytest.param(Disconnect(), id="dropped-before-headers"),
        pytest.param(ErrorReply(500, "api_error", "Internal server error"), id="500"),
    ],
)
async def test_transient_failures_are_retried(
    fake_anthropic: FakeAnthropicAPI, failure: object
) -> None:
    fake_anthropic.script(failure, Reply([text("recovered")]))  # type: ignore[arg-type]

    events = await collect(provider(fake_anthropic))

    assert len(fake_anthropic.requests) == 2
    assert sum(isinstance(e, Retrying) for e in events) == 1
    assert completed(events).response.text == "recovered"


async def test_error_event_in_stream_is_named_as_such(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(StreamError("overloaded_error", after_events=2, message="Overloaded"))

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(provider(fake_anthropic, max_retries=0))

    assert str(caught.value) == (
        "anthropic stream overloaded_error: Overloaded"
        " (overloaded: try again later, or add a --fallback provider)"
    )


async def test_idle_stream_is_cancelled_and_retried(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(Stall(seconds=30, after_events=3), Reply([text("awake")]))

    events = await collect(provider(fake_anthropic, idle_timeout=0.3))

    retry = next(e for e in events if isinstance(e, Retrying))
    assert "idle" in retry.reason
    assert completed(events).response.text == "awake"
    assert len(fake_anthropic.requests) == 2


async def test_gives_up_after_max_retries_with_the_last_error(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.script(*[BrokenStream(after_events=2)] * 3)

    with pytest.raises(ProviderConnectionError) as caught:
        await collect(provider(fake_anthropic, max_retries=2))

    assert len(fake_anthropic.requests) == 3
    assert caught.value.kind == "provider_connection_error"
    assert str(caught.value).startswith("anthropic: ")


async def test_callers_deadline_is_not_retried(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(Stall(seconds=30, after_events=3), Reply([text("unused")]))

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.5):
            await collect(provider(fake_anthropic))

    assert len(fake_anthropic.requests) == 1
    assert fake_anthropic.pending == 1


async def test_unknown_stop_reason_passes_through(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(Reply([text("hm")], stop_reason="weird_reason"))

    response = completed(await collect(provider(fake_anthropic))).response

    assert response.stop_reason == "weird_reason"


async def test_an_idle_stream_is_retried_once_not_eight_times(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.script(*[Stall(seconds=30, after_events=3)] * 3, Reply([text("unused")]))

    with pytest.raises(ProviderConnectionError) as caught:
        await collect(provider(fake_anthropic, idle_timeout=0.3))

    assert "idle timeout" in str(caught.value)
    assert len(fake_anthropic.requests) == 2


_MALFORMED = [
    pytest.param("event: message_start\ndata: {not json\n\n", id="data-not-json"),
    pytest.param(
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m"}}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"text"}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
        id="events-of-the-wrong-shape",
    ),
    pytest.param(
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"text_delta","text":"hi"}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
        id="a-delta-before-the-message",
    ),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("body", _MALFORMED)
async def test_a_malformed_stream_is_one_line_and_not_retried(
    fake_anthropic: FakeAnthropicAPI, body: str
) -> None:
    fake_anthropic.script(RawStream(body), Reply([text("unused")]))

    with pytest.raises(ProviderConnectionError) as caught:
        await collect(provider(fake_anthropic))

    assert str(caught.value).startswith("anthropic: the response stream was malformed (")
    assert "\n" not in str(caught.value)
    assert len(fake_anthropic.requests) == 1


async def test_no_credentials_at_all_is_a_config_error_naming_the_variable(
    fake_anthropic: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    made = AnthropicProvider("claude-sonnet-5-5", base_url=fake_anthropic.base_url)
    opened(made)

    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        await collect(made)
    assert fake_anthropic.requests == []


async def test_a_prompt_that_is_too_long_is_a_context_overflow(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.context_window = 10

    with pytest.raises(ContextOverflow) as caught:
        await collect(provider(fake_anthropic))

    assert caught.value.kind == "context_window_exceeded"
    assert str(caught.value).startswith("anthropic 400 invalid_request_error: prompt is too long")
    assert len(fake_anthropic.requests) == 1


_THINKING = [
    pytest.param(
        "claude-sonnet-5-5",
        "medium",
        32_000,
        {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}},
        id="adaptive",
    ),
    pytest.param(
        "claude-opus-4-7",
        "high",
        32_000,
        {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}},
        id="opus-4-7-adaptive-only",
    ),
    pytest.param(
        "claude-haiku-4-5-20251001",
        "low",
        32_000,
        {"thinking": {"type": "enabled", "budget_tokens": 4_000}},
        id="budget",
    ),
    pytest.param(
        "claude-haiku-4-5",
        "high",
        16_000,
        {"thinking": {"type": "enabled", "budget_tokens": 24_000}},
        id="interleaved-budget-passes-max-tokens",
    ),
    pytest.param(
        "claude-3-7-sonnet-latest",
        "high",
        16_000,
        {"thinking": {"type": "enabled", "budget_tokens": 11_904}},
        id="budget-leaves-room-to-answer",
    ),
    pytest.param("claude-3-7-sonnet-latest", "low", 4_096, {}, id="no-room-no-thinking"),
    pytest.param("claude-3-5-haiku-latest", "high", 8_000, {}, id="cannot-think"),
    pytest.param("claude-sonnet-5-5", None, 32_000, {}, id="not-asked"),
]


@pytest.mark.parametrize(("model", "effort", "max_tokens", "expected"), _THINKING)
def test_thinking_parameters_by_model(
    model: str, effort: Effort | None, max_tokens: int, expected: dict[str, object]
) -> None:
    params = build_params(
        model, Request(messages=HELLO.messages, max_tokens=max_tokens, effort=effort)
    )
    got = {key: params[key] for key in ("thinking", "output_config") if key in params}
    assert got == expected


_BETA = [
    pytest.param("claude-opus-4-1", INTERLEAVED_THINKING, id="opus-4-1"),
    # Deprecated (served until 2027-01-22), and still a budget model: the
    # SDK's warning on naming it is expected here, and only here.
    pytest.param(
        "claude-opus-4-5",
        INTERLEAVED_THINKING,
        id="opus-4-5",
        marks=pytest.mark.filterwarnings(
            "ignore:The model 'claude-opus-4-5' is deprecated:DeprecationWarning"
        ),
    ),
    pytest.param("claude-haiku-4-5-20251001", INTERLEAVED_THINKING, id="haiku-4-5"),
    pytest.param("claude-sonnet-4-6", None, id="adaptive-sonnet-4-6"),
    pytest.param("claude-sonnet-5-5", None, id="adaptive-sonnet-5-5"),
    pytest.param("claude-3-7-sonnet-latest", None, id="3-7-cannot-interleave"),
]


@pytest.mark.parametrize(("model", "beta"), _BETA)
async def test_budget_models_think_between_tool_calls_under_the_beta(
    fake_anthropic: FakeAnthropicAPI, model: str, beta: str | None
) -> None:
    # max_tokens under the high budget: the API takes that only under the beta.
    fake_anthropic.script(Reply([text("done")]))
    request = Request(messages=HELLO.messages, max_tokens=20_000, effort="high")

    await collect(Adapter(AnthropicProvider, model)(fake_anthropic), request)

    sent = fake_anthropic.requests[-1]
    assert sent.headers.get("anthropic-beta") == beta
    assert fake_anthropic.pending == 0  # accepted, not refused


def test_the_fake_refuses_a_budget_past_max_tokens_without_the_beta() -> None:
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 2_000,
        "thinking": {"type": "enabled", "budget_tokens": 4_000},
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert validate_thinking(body, "") is not None
    assert validate_thinking(body, f"other-beta,{INTERLEAVED_THINKING}") is None
    assert validate_thinking({**body, "max_tokens": 8_000}, "") is None


async def test_thinking_blocks_come_back_on_the_next_request_as_sent(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.script(
        Reply(
            [
                thinking("Check the date parsing first.", "sig-1"),
                tool_use("t1", "echo", {"v": "x"}),
            ],
            "tool_use",
        ),
        Reply([text("done")]),
    )
    p = provider(fake_anthropic)
    first = completed(await collect(p, Request(messages=HELLO.messages, effort="high"))).response
    follow = Request(
        messages=(
            *HELLO.messages,
            Message("assistant", first.content),
            Message("user", (ToolResult("t1", (Text("x"),)),)),
        ),
        effort="high",
    )
    await collect(p, follow)

    sent = fake_anthropic.requests[1].body
    assert sent["thinking"] == {"type": "adaptive"}
    assert sent["output_config"] == {"effort": "high"}
    replayed = sent["messages"][1]["content"][0]
    assert replayed["type"] == "thinking"
    assert (replayed["thinking"], replayed["signature"]) == (
        "Check the date parsing first.",
        "sig-1",
    )
    # What the model thought is not what it said.
    assert first.text == ""
