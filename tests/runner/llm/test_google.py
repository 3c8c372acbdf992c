"""The Gemini adapter, driving the real google-genai SDK against the fake Gemini API."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from runner.agent import Agent, MaxOutputTokens, UnexpectedStopReason
from runner.errors import ConfigError
from runner.llm import codec
from runner.llm.errors import ContextOverflow, ProviderConnectionError, ProviderHTTPError
from runner.llm.google import GoogleProvider, build_params
from runner.llm.pricing import PricedProvider, cost_usd
from runner.llm.provider import Retrying, TextDelta
from runner.llm.registry import make_provider
from runner.llm.types import (
    END_TURN,
    MAX_TOKENS,
    REFUSAL,
    TOOL_USE,
    JSONObject,
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
from tests.fakes.gemini_api import (
    Cut,
    Disconnect,
    ErrorReply,
    FakeGemini,
    RawStream,
    Reply,
    Stall,
    call,
    rate_limited,
    text,
    thought,
)
from tests.fakes.gemini_api import Usage as WireUsage
from tests.runner.llm.streams import HELLO, Adapter, Sleeps, collect, completed, opened, sent_body

provider = Adapter(GoogleProvider, "gemini-2.5-pro")


# -- one call ---------------------------------------------------------------


async def test_streams_text_and_reports_usage_with_cached_and_thinking_tokens(
    fake_gemini: FakeGemini,
) -> None:
    usage = WireUsage(prompt=1_000, candidates=30, thoughts=12, cached=800)
    fake_gemini.script(Reply([thought("let me think"), text("Hello there, friend")], usage=usage))

    events = await collect(provider(fake_gemini))

    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    # The thought is not shown.
    assert "".join(deltas) == "Hello there, friend"
    response = completed(events).response
    assert response.text == "Hello there, friend"
    assert response.content[0] == Opaque(
        "google", "thought", {"thought": True, "text": "let me think"}
    )
    assert response.stop_reason == END_TURN
    assert response.usage == Usage(200, 42, 0, 800)
    assert response.model == "gemini-2.5-pro"
    assert cost_usd("gemini-2.5-pro", response.usage) == pytest.approx(
        (200 * 1.25 + 42 * 10.0 + 800 * 0.125) / 1e6
    )
    assert fake_gemini.requests[0].path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert sent_body(fake_gemini, 0)["contents"] == [{"role": "user", "parts": [{"text": "hello"}]}]


async def test_request_carries_system_tools_tool_choice_and_a_thinking_budget(
    fake_gemini: FakeGemini,
) -> None:
    schema: JSONObject = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}
    spec = ToolSpec("count", "Count up.", schema)
    fake_gemini.script(Reply([text("ok")]))
    request = Request(
        messages=HELLO.messages,
        system=SystemPrompt(("base", "", "project")),
        tools=(spec,),
        max_tokens=60_000,
        effort="high",
        tool_choice="none",
    )

    await collect(provider(fake_gemini), request)

    sent = sent_body(fake_gemini, 0)
    assert sent["systemInstruction"]["parts"] == [{"text": "base\n\nproject"}]
    (declaration,) = sent["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "count"
    assert declaration["description"] == "Count up."
    # The schema goes as JSON Schema, keywords Gemini's own Schema lacks included.
    assert declaration["parameters_json_schema"] == schema
    assert sent["toolConfig"]["functionCallingConfig"]["mode"] == "NONE"
    assert sent["generationConfig"]["maxOutputTokens"] == 60_000
    assert sent["generationConfig"]["thinkingConfig"] == {"thinking_budget": 24_576}


def test_gemini_3_takes_a_thinking_level_and_no_effort_asks_for_nothing() -> None:
    config = build_params("gemini-3-pro-preview", Request(HELLO.messages, effort="low"))["config"]
    assert config.thinking_config.thinking_level.value == "LOW"
    assert config.thinking_config.thinking_budget is None
    assert build_params("gemini-2.5-flash", HELLO)["config"].thinking_config is None


def test_a_thinking_budget_leaves_half_the_output_for_the_answer() -> None:
    request = Request(HELLO.messages, max_tokens=6_000, effort="high")
    config = build_params("gemini-2.5-flash", request)["config"]
    assert config.thinking_config.thinking_budget == 3_000


# -- stop reasons -----------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        pytest.param(Reply([text("done")]), END_TURN, id="stop"),
        pytest.param(Reply([text("look"), call("bash", {})]), TOOL_USE, id="stop-with-calls"),
        pytest.param(Reply([text("cut")], "MAX_TOKENS"), MAX_TOKENS, id="max-tokens"),
        *(
            pytest.param(Reply([text("")], reason), REFUSAL, id=reason.lower())
            for reason in ("SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII")
        ),
        pytest.param(Reply(block_reason="SAFETY"), REFUSAL, id="prompt-blocked"),
        pytest.param(
            Reply([], "MALFORMED_FUNCTION_CALL"),
            "finish:MALFORMED_FUNCTION_CALL",
            id="malformed-call",
        ),
        pytest.param(Reply([text("x")], "OTHER"), "finish:OTHER", id="other"),
    ],
)
async def test_finish_reasons_map_to_the_neutral_ones(
    fake_gemini: FakeGemini, reply: Reply, expected: str
) -> None:
    fake_gemini.script(reply)

    response = completed(await collect(provider(fake_gemini))).response

    assert response.stop_reason == expected


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply([text("cut")], "MAX_TOKENS"), MaxOutputTokens),
        (Reply([], "MALFORMED_FUNCTION_CALL"), UnexpectedStopReason),
        (Reply([text("x")], "OTHER"), UnexpectedStopReason),
    ],
)
async def test_the_loop_fails_closed_on_what_is_not_a_finished_turn(
    fake_gemini: FakeGemini, tmp_path: Path, reply: Reply, error: type[Exception]
) -> None:
    fake_gemini.script(reply)
    agent = Agent(
        provider(fake_gemini, max_retries=0), tools=[ReadFileTool(LocalSandbox(tmp_path))]
    )

    with pytest.raises(error):
        await agent.send("go")


# -- tools and signatures through the real loop -----------------------------


async def test_one_and_parallel_calls_through_the_loop_with_signatures_replayed(
    fake_gemini: FakeGemini, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")

    def last_outputs(request_body: dict[str, Any]) -> Reply:
        parts = request_body["contents"][-1]["parts"]
        seen = " | ".join(p["functionResponse"]["response"]["output"] for p in parts)
        return Reply([text(f"Read: {seen}", signed=True)])

    fake_gemini.script(
        Reply([call("read_file", {"path": "a.txt"}, signed=True)]),
        Reply(
            [
                text("Both now."),
                call("read_file", {"path": "b.txt"}, signed=True),
                call("write_file", {"path": "c.txt", "content": "gamma\n"}),
            ],
            usage=WireUsage(900, 10, cached=480),
        ),
        last_outputs,
    )
    box = LocalSandbox(tmp_path)
    agent = Agent(
        provider(fake_gemini, max_retries=0),
        tools=[ReadFileTool(box), WriteFileTool(box)],
        effort="medium",
    )

    result = await agent.send("read a, then b, and write c")

    assert result.stop_reason == END_TURN
    assert result.turns == 3
    assert (tmp_path / "c.txt").read_text() == "gamma\n"
    assert "beta" in result.text
    # Every follow-up passed the fake's checks: calls answered, signatures replayed.
    assert len(fake_gemini.requests) == 3
    third = sent_body(fake_gemini, 2)["contents"]
    assert [c["role"] for c in third] == ["user", "model", "user", "model", "user"]
    second_turn = third[3]["parts"]
    assert [list(p) for p in second_turn] == [
        ["text"],
        ["functionCall", "thoughtSignature"],
        ["functionCall"],
    ]
    # No ids came from the API, so none are sent back; responses pair by name and order.
    assert all("id" not in p["functionCall"] for p in second_turn[1:])
    assert [p["functionResponse"]["name"] for p in third[4]["parts"]] == [
        "read_file",
        "write_file",
    ]
    assert all(
        sent_body(fake_gemini, n)["generationConfig"]["thinkingConfig"]
        == {"thinking_budget": 8_192}
        for n in range(3)
    )
    assert result.usage.cache_read_input_tokens == 480


async def test_ids_the_api_sends_are_kept_and_sent_back(fake_gemini: FakeGemini) -> None:
    fake_gemini.script(
        Reply([call("bash", {"command": "ls"}, id="fc-1"), call("bash", {}, id="fc-2")]),
        Reply([text("listed")]),
    )
    p = provider(fake_gemini)
    first = completed(await collect(p)).response
    assert [use.id for use in first.tool_uses] == ["fc-1", "fc-2"]

    follow = Request(
        messages=(
            *HELLO.messages,
            Message("assistant", first.content),
            Message(
                "user",
                (ToolResult("fc-1", (Text("a"),)), ToolResult("fc-2", (Text("b"),), True)),
            ),
        )
    )
    await collect(p, follow)

    responses = [
        part["functionResponse"] for part in sent_body(fake_gemini, 1)["contents"][2]["parts"]
    ]
    assert responses == [
        {"id": "fc-1", "name": "bash", "response": {"output": "a"}},
        {"id": "fc-2", "name": "bash", "response": {"error": "b"}},
    ]


async def test_synthesised_ids_are_stable_for_a_request_and_unique_across_turns(
    fake_gemini: FakeGemini,
) -> None:
    fake_gemini.script(*[Reply([call("bash", {}), call("bash", {"x": 1})])] * 3)
    p = provider(fake_gemini)
    later = Request(
        messages=(*HELLO.messages, Message("assistant", (Text("hi"),)), *HELLO.messages)
    )

    first = [u.id for u in completed(await collect(p)).response.tool_uses]
    again = [u.id for u in completed(await collect(p)).response.tool_uses]
    other = [u.id for u in completed(await collect(p, later)).response.tool_uses]

    assert first == again
    assert len(set(first)) == 2
    assert not set(first) & set(other)


async def test_signatures_survive_a_saved_session(fake_gemini: FakeGemini) -> None:
    fake_gemini.script(Reply([thought("plan", signed=True), call("bash", {"c": 1}, signed=True)]))
    p = provider(fake_gemini)
    first = completed(await collect(p)).response

    # Through the session codec and back, as a resumed run replays it.
    saved = codec.message_from_json(codec.message_to_json(Message("assistant", first.content)))
    fake_gemini.script(Reply([text("listed")]))
    follow = Request(
        messages=(
            *HELLO.messages,
            saved,
            Message("user", (ToolResult(first.tool_uses[0].id, (Text("a.txt"),)),)),
        )
    )

    assert completed(await collect(p, follow)).response.text == "listed"
    model_turn = sent_body(fake_gemini, 1)["contents"][1]["parts"]
    assert model_turn[0]["thought"] is True
    assert "thoughtSignature" in model_turn[0]


async def test_the_fake_refuses_a_call_replayed_without_its_signature(
    fake_gemini: FakeGemini,
) -> None:
    fake_gemini.script(Reply([call("bash", {}, signed=True)]))
    p = provider(fake_gemini)
    first = completed(await collect(p)).response
    stripped = tuple(b for b in first.content if not isinstance(b, Opaque))
    follow = Request(
        messages=(
            *HELLO.messages,
            Message("assistant", stripped),
            Message("user", (ToolResult(first.tool_uses[0].id, (Text("ok"),)),)),
        )
    )

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(p, follow)

    assert str(caught.value).startswith(
        "google 400 INVALID_ARGUMENT: Function call is missing a thought_signature"
    )


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        pytest.param(
            (Message("assistant", (ToolUse("call_9", "bash", {}),)),),
            "Please ensure that function call turn comes immediately after a user turn",
            id="unanswered-call",
        ),
        pytest.param(
            (
                Message("assistant", (ToolUse("c1", "bash", {}), ToolUse("c2", "bash", {}))),
                Message("user", (ToolResult("c1", (Text("?"),)),)),
            ),
            "Please ensure that the number of function response parts is equal",
            id="one-of-two-answered",
        ),
        pytest.param(
            (Message("user", (ToolResult("call_404", (Text("?"),)),)),),
            "Please ensure that function response turn comes immediately after",
            id="response-without-call",
        ),
    ],
)
async def test_the_fake_refuses_unpaired_calls(
    fake_gemini: FakeGemini, messages: tuple[Message, ...], problem: str
) -> None:
    request = Request(messages=(*HELLO.messages, *messages))

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(provider(fake_gemini), request)

    assert str(caught.value).startswith(f"google 400 INVALID_ARGUMENT: {problem}")
    assert "(check" not in str(caught.value)


async def test_another_providers_opaque_blocks_are_not_sent(fake_gemini: FakeGemini) -> None:
    fake_gemini.script(Reply([text("ok")]))
    thinking = Opaque("anthropic", "thinking", {"type": "thinking", "thinking": "hm"})
    request = Request(
        messages=(
            *HELLO.messages,
            Message("assistant", (thinking, Text("hi"))),
            Message("user", (Text("again"),)),
        )
    )

    await collect(provider(fake_gemini), request)

    assert sent_body(fake_gemini, 0)["contents"][1] == {"role": "model", "parts": [{"text": "hi"}]}


# -- failures ---------------------------------------------------------------


async def test_429_waits_as_its_retry_info_asks_then_succeeds(fake_gemini: FakeGemini) -> None:
    fake_gemini.script(rate_limited(7), Reply([text("ok")]))
    sleeps = Sleeps()

    events = await collect(provider(fake_gemini, sleeps))

    assert sleeps.delays == [7.0]
    retry = next(e for e in events if isinstance(e, Retrying))
    assert retry.reason.startswith("google 429 RESOURCE_EXHAUSTED: You exceeded your current quota")
    assert completed(events).response.text == "ok"


async def test_a_retry_after_header_is_honoured_without_retry_info(
    fake_gemini: FakeGemini,
) -> None:
    fake_gemini.script(
        ErrorReply(503, "UNAVAILABLE", "The model is overloaded.", headers={"retry-after": "3"}),
        Reply([text("ok")]),
    )
    sleeps = Sleeps()

    await collect(provider(fake_gemini, sleeps))

    assert sleeps.delays == [3.0]


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(ErrorReply(500, "INTERNAL", "An internal error has occurred."), id="500"),
        pytest.param(ErrorReply(503, "UNAVAILABLE", "The model is overloaded."), id="503"),
        pytest.param(Disconnect(), id="dropped"),
        pytest.param(Cut(after_chunks=1), id="cut-mid-stream"),
        pytest.param(
            RawStream(
                'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]}}]}\n\n'
            ),
            id="ended-before-finish",
        ),
        pytest.param(
            RawStream(
                'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]}}]}\n\n'
                'data: {"error":{"code":503,"message":"The model is overloaded.",'
                '"status":"UNAVAILABLE"}}\n\n'
            ),
            id="error-in-stream",
        ),
    ],
)
async def test_transient_failures_are_retried(fake_gemini: FakeGemini, failure: Any) -> None:
    fake_gemini.script(failure, Reply([text("recovered")]))

    events = await collect(provider(fake_gemini))

    assert len(fake_gemini.requests) == 2
    assert sum(isinstance(e, Retrying) for e in events) == 1
    assert completed(events).response.text == "recovered"


async def test_retries_give_up_with_the_last_error(fake_gemini: FakeGemini) -> None:
    fake_gemini.script(*[ErrorReply(500, "INTERNAL", "An internal error has occurred.")] * 3)

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(provider(fake_gemini, max_retries=2))

    assert str(caught.value) == "google 500 INTERNAL: An internal error has occurred."
    assert len(fake_gemini.requests) == 3


async def test_a_bad_key_is_one_line_without_the_key(
    fake_gemini: FakeGemini, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "AIzaSyWrongSecret-9876543210zyxwvu"

    with caplog.at_level(logging.DEBUG), pytest.raises(ProviderHTTPError) as e:
        await collect(provider(fake_gemini, api_key=key))

    line = str(e.value)
    assert line == (
        "google 400 INVALID_ARGUMENT: API key not valid. Please pass a valid API key. "
        "(check GEMINI_API_KEY)"
    )
    assert e.value.kind == "provider_http_error"
    assert len(fake_gemini.requests) == 1
    out = capsys.readouterr()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "WrongSecret" not in out.out + out.err + logged + e.value.raw_body


@pytest.mark.parametrize("status", [401, 403])
async def test_401_and_403_name_the_key_variable(fake_gemini: FakeGemini, status: int) -> None:
    fake_gemini.script(
        ErrorReply(status, "PERMISSION_DENIED", "Key AIzaSyLeaked0123456789abc is blocked.")
    )

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(provider(fake_gemini))

    assert str(caught.value) == (
        f"google {status} PERMISSION_DENIED: Key AIza… is blocked. (check GEMINI_API_KEY)"
    )


async def test_context_overflow_is_typed_for_compaction(fake_gemini: FakeGemini) -> None:
    fake_gemini.context_window = 5
    long = Request(messages=(Message("user", (Text("a long prompt " * 20),)),))

    with pytest.raises(ContextOverflow) as caught:
        await collect(provider(fake_gemini), long)

    assert caught.value.kind == "context_window_exceeded"
    assert str(caught.value).startswith("google 400 INVALID_ARGUMENT: The input token count (")
    assert len(fake_gemini.requests) == 1


async def test_an_idle_stream_is_cut_and_retried_once(fake_gemini: FakeGemini) -> None:
    fake_gemini.script(*[Stall(seconds=30)] * 2, Reply([text("unused")]))

    with pytest.raises(ProviderConnectionError) as caught:
        await collect(provider(fake_gemini, idle_timeout=0.3))

    assert str(caught.value) == "google: no data received within the idle timeout"
    assert len(fake_gemini.requests) == 2


async def test_a_malformed_stream_is_one_line_and_not_retried(fake_gemini: FakeGemini) -> None:
    fake_gemini.script(RawStream("data: {not json\n\n"), Reply())

    with pytest.raises(ProviderConnectionError) as caught:
        await collect(provider(fake_gemini))

    assert str(caught.value).startswith("google: the response stream was malformed (")
    assert len(fake_gemini.requests) == 1


# -- the registry -------------------------------------------------------------


def test_the_registry_names_the_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)

    with pytest.raises(ConfigError) as caught:
        make_provider("google")

    assert str(caught.value) == "GEMINI_API_KEY is not set (export your Gemini API key)"


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
async def test_the_registry_builds_it_from_the_sdks_variables(
    fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv(variable, fake_gemini.api_key)
    fake_gemini.script(Reply([text("from the environment")]))

    made = make_provider("google")
    assert isinstance(made, PricedProvider)
    assert isinstance(made.inner, GoogleProvider)
    opened(made.inner)

    assert made.model == "gemini-2.5-pro"
    assert completed(await collect(made.inner)).response.text == "from the environment"


async def test_a_bad_key_from_google_api_key_names_that_variable(
    fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaSyNotTheRightOne-000000")

    made = make_provider("google")
    assert isinstance(made, PricedProvider)
    assert isinstance(made.inner, GoogleProvider)
    opened(made.inner)

    with pytest.raises(ProviderHTTPError, match=r"\(check GOOGLE_API_KEY\)$"):
        await collect(made.inner)
