"""The OpenAI Responses adapter, driving the real SDK against the fake Responses API."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from runner.agent import Agent, MaxOutputTokens, UnexpectedStopReason
from runner.errors import ConfigError
from runner.llm import codec
from runner.llm.errors import ContextOverflow, ProviderConnectionError, ProviderHTTPError
from runner.llm.openai_responses import OpenAIResponsesProvider, build_params, cache_key
from runner.llm.pricing import PricedProvider, cost_usd
from runner.llm.provider import Retrying, TextDelta
from runner.llm.registry import make_provider
from runner.llm.types import (
    MAX_TOKENS,
    REFUSAL,
    TOOL_USE,
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
from runner.sandbox.local import LocalSandbox
from runner.tools.read_file import ReadFileTool
from runner.tools.write_file import WriteFileTool
from tests.fakes.openai_responses import (
    Disconnect,
    ErrorReply,
    FakeOpenAIResponses,
    RawStream,
    Reply,
    Stall,
    function_call,
    message,
    reasoning,
    refusal,
)
from tests.fakes.openai_responses import Usage as WireUsage
from tests.runner.llm.streams import HELLO, Adapter, Sleeps, collect, completed, opened, sent_body

provider = Adapter(OpenAIResponsesProvider, "gpt-5")


# -- one call ---------------------------------------------------------------


async def test_streams_text_and_reports_usage_with_cached_tokens(
    fake_openai: FakeOpenAIResponses,
) -> None:
    usage = WireUsage(input_tokens=1_000, output_tokens=30, cached_tokens=800)
    fake_openai.script(Reply([message("Hello there, friend")], usage=usage))

    events = await collect(provider(fake_openai))

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there, friend"
    response = completed(events).response
    assert response.content == (Text("Hello there, friend"),)
    assert response.stop_reason == "end_turn"
    # Neutral input tokens are the uncached ones, so prices apply to each part once.
    assert response.usage == Usage(200, 30, 0, 800)
    assert response.model == "gpt-5"
    assert cost_usd("gpt-5", response.usage) == pytest.approx(
        (200 * 1.25 + 30 * 10.0 + 800 * 0.125) / 1e6
    )
    sent = sent_body(fake_openai, 0)
    assert sent["stream"] is True
    assert sent["store"] is False
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert sent["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}
    ]


def test_request_carries_instructions_tools_effort_and_cache_key() -> None:
    spec = ToolSpec("bash", "Run a command.", {"type": "object", "properties": {}})
    request = Request(
        messages=HELLO.messages,
        system=SystemPrompt(("base", "", "project")),
        tools=(spec,),
        max_tokens=4_000,
        effort="high",
        tool_choice="none",
    )

    params = build_params("gpt-5", request)

    assert params["instructions"] == "base\n\nproject"
    assert params["tools"] == [
        {
            "type": "function",
            "name": "bash",
            "description": "Run a command.",
            "parameters": spec.input_schema,
            "strict": False,
        }
    ]
    assert params["tool_choice"] == "none"
    assert params["reasoning"] == {"effort": "high"}
    assert params["max_output_tokens"] == 4_000
    assert params["prompt_cache_key"].startswith("neo-")


def test_a_model_that_cannot_think_gets_no_reasoning_parameters() -> None:
    params = build_params("gpt-4.1", Request(messages=HELLO.messages, effort="high"))

    assert "reasoning" not in params
    assert "include" not in params
    assert "reasoning" not in build_params("gpt-5", HELLO)


def test_the_cache_key_is_stable_across_a_session_and_differs_between_sessions() -> None:
    later = Request(
        messages=(
            *HELLO.messages,
            Message("assistant", (Text("hi"),)),
            Message("user", (Text("more"),)),
        )
    )
    other = Request(messages=(Message("user", (Text("a different task"),)),))

    assert cache_key(HELLO) == cache_key(later)
    assert cache_key(HELLO) != cache_key(other)
    assert cache_key(Request(messages=())) is None
    assert "prompt_cache_key" not in build_params("gpt-5", Request(messages=()))


# -- stop reasons -----------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        pytest.param(Reply([message("done")]), "end_turn", id="completed"),
        pytest.param(
            Reply([message("let me look"), function_call("call_1", "bash", {})]),
            TOOL_USE,
            id="completed-with-calls",
        ),
        pytest.param(
            Reply([message("cut")], "incomplete", "max_output_tokens"), MAX_TOKENS, id="max-output"
        ),
        pytest.param(
            Reply([message("")], "incomplete", "content_filter"), REFUSAL, id="content-filter"
        ),
        pytest.param(Reply([refusal("I can't help with that.")]), REFUSAL, id="refusal-part"),
        pytest.param(
            Reply([message("x")], "incomplete", "max_messages"),
            "incomplete:max_messages",
            id="other-incomplete",
        ),
        pytest.param(Reply([message("x")], "cancelled"), "status:cancelled", id="other-status"),
    ],
)
async def test_stop_reasons_map_to_the_neutral_ones(
    fake_openai: FakeOpenAIResponses, reply: Reply, expected: str
) -> None:
    fake_openai.script(reply)

    response = completed(await collect(provider(fake_openai))).response

    assert response.stop_reason == expected


async def test_a_refusal_is_kept_as_text(fake_openai: FakeOpenAIResponses) -> None:
    fake_openai.script(Reply([refusal("I can't help with that.")]))

    response = completed(await collect(provider(fake_openai))).response

    assert response.text == "I can't help with that."


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply([message("cut")], "incomplete", "max_output_tokens"), MaxOutputTokens),
        (Reply([message("x")], "incomplete", "max_messages"), UnexpectedStopReason),
        (Reply([message("x")], "cancelled"), UnexpectedStopReason),
    ],
)
async def test_the_loop_fails_closed_on_what_is_not_a_finished_turn(
    fake_openai: FakeOpenAIResponses, tmp_path: Path, reply: Reply, error: type[Exception]
) -> None:
    fake_openai.script(reply)
    agent = Agent(
        provider(fake_openai, max_retries=0), tools=[ReadFileTool(LocalSandbox(tmp_path))]
    )

    with pytest.raises(error):
        await agent.send("go")


# -- tools and reasoning through the real loop ------------------------------


async def test_one_and_parallel_tool_calls_through_the_loop_with_reasoning_replayed(
    fake_openai: FakeOpenAIResponses, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")

    def last_outputs(request_body: dict[str, Any]) -> Reply:
        outputs = [i for i in request_body["input"] if i.get("type") == "function_call_output"]
        seen = " | ".join(str(o["output"]) for o in outputs[-2:])
        return Reply([message(f"Read: {seen}")])

    fake_openai.script(
        Reply(
            [reasoning(), function_call("call_1", "read_file", {"path": "a.txt"})],
            usage=WireUsage(500, 10, cached_tokens=0),
        ),
        Reply(
            [
                reasoning("two at once"),
                message("Both now."),
                function_call("call_2", "read_file", {"path": "b.txt"}),
                function_call("call_3", "write_file", {"path": "c.txt", "content": "gamma\n"}),
            ],
            usage=WireUsage(900, 10, cached_tokens=480),
        ),
        last_outputs,
    )
    box = LocalSandbox(tmp_path)
    agent = Agent(
        provider(fake_openai, max_retries=0),
        tools=[ReadFileTool(box), WriteFileTool(box)],
        effort="medium",
    )

    result = await agent.send("read a, then b, and write c")

    assert result.stop_reason == "end_turn"
    assert result.turns == 3
    assert (tmp_path / "c.txt").read_text() == "gamma\n"
    assert "beta" in result.text
    # Every follow-up passed the fake's checks: calls answered, reasoning replayed.
    assert len(fake_openai.requests) == 3
    third = sent_body(fake_openai, 2)["input"]
    kinds = [item.get("type") for item in third]
    assert kinds == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "reasoning",
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert [item["call_id"] for item in third if item["type"] == "function_call_output"] == [
        "call_1",
        "call_2",
        "call_3",
    ]
    assert third[4]["encrypted_content"].startswith("gAAAA")
    assert third[4]["summary"] == [{"type": "summary_text", "text": "two at once"}]
    assert all(sent_body(fake_openai, n)["reasoning"] == {"effort": "medium"} for n in range(3))
    keys = {sent_body(fake_openai, n)["prompt_cache_key"] for n in range(3)}
    assert len(keys) == 1
    assert result.usage.cache_read_input_tokens >= 480


async def test_reasoning_survives_a_saved_session(fake_openai: FakeOpenAIResponses) -> None:
    fake_openai.script(Reply([reasoning(), function_call("call_1", "bash", {"command": "ls"})]))
    p = provider(fake_openai)
    first = completed(await collect(p)).response
    assert isinstance(first.content[0], Opaque)

    # Through the session codec and back, as a resumed run replays it.
    saved = codec.message_from_json(codec.message_to_json(Message("assistant", first.content)))
    fake_openai.script(Reply([message("listed")]))
    follow = Request(
        messages=(
            *HELLO.messages,
            saved,
            Message("user", (ToolResult("call_1", (Text("a.txt"),)),)),
        )
    )

    assert completed(await collect(p, follow)).response.text == "listed"


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        pytest.param("drop", "without its required 'reasoning' item", id="reasoning-dropped"),
        pytest.param("strip", "Items are not persisted when `store` is set to false", id="no-blob"),
        pytest.param("alter", "could not be verified", id="blob-altered"),
    ],
)
async def test_the_fake_refuses_a_transcript_without_its_reasoning(
    fake_openai: FakeOpenAIResponses, tamper: str, problem: str
) -> None:
    fake_openai.script(Reply([reasoning(), function_call("call_1", "bash", {})]))
    p = provider(fake_openai)
    first = completed(await collect(p)).response
    opaque = first.content[0]
    assert isinstance(opaque, Opaque)
    data = dict(opaque.data)
    if tamper == "strip":
        del data["encrypted_content"]
    elif tamper == "alter":
        data["encrypted_content"] = "gAAAAforged"
    content = first.content[1:] if tamper == "drop" else (Opaque("openai", "reasoning", data),)
    if tamper != "drop":
        content += first.content[1:]
    follow = Request(
        messages=(
            *HELLO.messages,
            Message("assistant", content),
            Message("user", (ToolResult("call_1", (Text("ok"),)),)),
        )
    )

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(p, follow)

    assert problem in str(caught.value)
    assert str(caught.value).startswith("openai 400 invalid_request_error: ")


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        pytest.param(
            (Message("assistant", (ToolUse("call_9", "bash", {}),)),),
            "No tool output found for function call call_9.",
            id="unanswered-call",
        ),
        pytest.param(
            (Message("user", (ToolResult("call_404", (Text("?"),)),)),),
            "No tool call found for function call output with call_id call_404.",
            id="unknown-call-id",
        ),
    ],
)
async def test_the_fake_refuses_unpaired_calls(
    fake_openai: FakeOpenAIResponses, messages: tuple[Message, ...], problem: str
) -> None:
    request = Request(messages=(*HELLO.messages, *messages))

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(provider(fake_openai), request)

    assert str(caught.value) == f"openai 400 invalid_request_error: {problem}"


async def test_another_providers_opaque_blocks_are_not_sent(
    fake_openai: FakeOpenAIResponses,
) -> None:
    fake_openai.script(Reply([message("ok")]))
    thought = Opaque("anthropic", "thinking", {"type": "thinking", "thinking": "hm"})
    request = Request(
        messages=(
            *HELLO.messages,
            Message("assistant", (thought, Text("hi"))),
            Message("user", (Text("again"),)),
        )
    )

    await collect(provider(fake_openai), request)

    sent = sent_body(fake_openai, 0)["input"]
    assert [item.get("type") for item in sent] == ["message", "message", "message"]
    assert sent[1]["content"] == [{"type": "output_text", "text": "hi"}]


# -- failures ---------------------------------------------------------------


async def test_429_waits_as_retry_after_asks_then_succeeds(
    fake_openai: FakeOpenAIResponses,
) -> None:
    limited = ErrorReply(
        429, "rate_limit_exceeded", "Rate limit reached.", "tokens", {"retry-after": "7"}
    )
    fake_openai.script(limited, Reply([message("ok")]))
    sleeps = Sleeps()

    events = await collect(provider(fake_openai, sleeps))

    assert sleeps.delays == [7.0]
    retry = next(e for e in events if isinstance(e, Retrying))
    assert retry.reason == "openai 429 rate_limit_exceeded: Rate limit reached."
    assert completed(events).response.text == "ok"


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(ErrorReply(500, None, "The server had an error.", "server_error"), id="500"),
        pytest.param(ErrorReply(503, None, "Slow down.", "server_error"), id="503"),
        pytest.param(Disconnect(), id="dropped"),
        pytest.param(
            RawStream(
                'event: response.created\ndata: {"type":"response.created","sequence_number":0,'
                '"response":{"id":"r","status":"in_progress","output":[]}}\n\n'
            ),
            id="ended-before-completed",
        ),
        pytest.param(
            RawStream(
                'event: error\ndata: {"type":"error","code":"server_error",'
                '"message":"An error occurred.","sequence_number":1}\n\n'
            ),
            id="error-event",
        ),
    ],
)
async def test_transient_failures_are_retried(
    fake_openai: FakeOpenAIResponses, failure: Any
) -> None:
    fake_openai.script(failure, Reply([message("recovered")]))

    events = await collect(provider(fake_openai))

    assert len(fake_openai.requests) == 2
    assert sum(isinstance(e, Retrying) for e in events) == 1
    assert completed(events).response.text == "recovered"


async def test_out_of_quota_is_not_retried(fake_openai: FakeOpenAIResponses) -> None:
    fake_openai.script(
        ErrorReply(429, "insufficient_quota", "You exceeded your current quota.", "quota")
    )

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(provider(fake_openai))

    assert str(caught.value) == "openai 429 insufficient_quota: You exceeded your current quota."
    assert len(fake_openai.requests) == 1


async def test_a_bad_key_is_one_line_without_the_key(
    fake_openai: FakeOpenAIResponses, caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-proj-wrongsecret9876"

    with caplog.at_level(logging.DEBUG, logger="neo.llm"), pytest.raises(ProviderHTTPError) as e:
        await collect(provider(fake_openai, api_key=key))

    line = str(e.value)
    assert line.startswith("openai 401 invalid_api_key: Incorrect API key provided: sk-…")
    assert line.endswith("(check OPENAI_API_KEY)")
    assert "\n" not in line
    assert "9876" not in line
    assert "wrongsecret" not in line
    assert e.value.kind == "provider_http_error"
    assert len(fake_openai.requests) == 1
    assert any("openai error body" in r.getMessage() for r in caplog.records)


async def test_context_overflow_is_typed_for_compaction(fake_openai: FakeOpenAIResponses) -> None:
    fake_openai.context_window = 5
    long = Request(messages=(Message("user", (Text("a long prompt " * 20),)),))

    with pytest.raises(ContextOverflow) as caught:
        await collect(provider(fake_openai), long)

    assert caught.value.kind == "context_window_exceeded"
    assert str(caught.value).startswith("openai 400 context_length_exceeded: Your input exceeds")
    assert len(fake_openai.requests) == 1


async def test_an_idle_stream_is_cut_and_retried_once(fake_openai: FakeOpenAIResponses) -> None:
    fake_openai.script(*[Stall(seconds=30)] * 2, Reply([message("unused")]))

    with pytest.raises(ProviderConnectionError) as caught:
        await collect(provider(fake_openai, idle_timeout=0.3))

    assert str(caught.value) == "openai: no data received within the idle timeout"
    assert len(fake_openai.requests) == 2


async def test_a_malformed_stream_is_one_line_and_not_retried(
    fake_openai: FakeOpenAIResponses,
) -> None:
    fake_openai.script(RawStream("event: response.created\ndata: {not json\n\n"), Reply())

    with pytest.raises(ProviderConnectionError) as caught:
        await collect(provider(fake_openai))

    assert str(caught.value).startswith("openai: the response stream was malformed (")
    assert len(fake_openai.requests) == 1


def test_the_registry_names_the_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(ConfigError, match=r"^OPENAI_API_KEY is not set"):
        make_provider("openai")


async def test_the_registry_builds_it_from_the_sdks_variables(
    fake_openai: FakeOpenAIResponses, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in fake_openai.env.items():
        monkeypatch.setenv(name, value)
    fake_openai.script(Reply([message("from the environment")]))

    made = make_provider("openai")
    assert isinstance(made, PricedProvider)
    assert isinstance(made.inner, OpenAIResponsesProvider)
    opened(made.inner)

    assert made.model == "gpt-5"
    assert completed(await collect(made.inner)).response.text == "from the environment"
