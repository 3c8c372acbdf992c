"""The Chat Completions and OpenRouter adapters, driving the real `openai` SDK
against the wire-level fake."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.agent import Agent, UnexpectedStopReason
from runner.errors import ConfigError
from runner.llm.chat_completions import (
    CHAT_COMPLETIONS,
    ChatCompletionsProvider,
    Dialect,
    build_params,
    is_local_url,
    preflight_problem,
)
from runner.llm.errors import ContextOverflow, ProviderConnectionError, ProviderHTTPError
from runner.llm.openrouter import OPENROUTER
from runner.llm.pricing import cost_usd
from runner.llm.provider import Retrying, TextDelta
from runner.llm.registry import make_provider
from runner.llm.retry import RetryPolicy
from runner.llm.types import Message, Opaque, Request, SystemPrompt, Text, ToolResult, ToolUse
from runner.llm.types import Usage as LlmUsage
from runner.sandbox.local import LocalSandbox
from runner.tools.read_file import ReadFileTool
from tests.fakes.chat_completions import (
    BrokenStream,
    ErrorReply,
    FakeChatCompletions,
    ModelInfo,
    OllamaModel,
    Reply,
    call,
    validate_messages,
)
from tests.runner.llm.streams import HELLO, Sleeps, collect, completed, opened


@pytest.fixture
def fake() -> Iterator[FakeChatCompletions]:
    with FakeChatCompletions() as server:
        yield server


def provider(
    fake: FakeChatCompletions,
    sleeps: Sleeps | None = None,
    *,
    model: str = "fake-model",
    api_key: str | None = None,
    dialect: Dialect = CHAT_COMPLETIONS,
    max_retries: int = 8,
) -> ChatCompletionsProvider:
    made = ChatCompletionsProvider(
        model,
        api_key=api_key if api_key is not None else fake.api_key,
        base_url=fake.base_url,
        retry=RetryPolicy(max_retries=max_retries, base_delay=0.01, max_delay=0.05),
        sleep=sleeps or Sleeps(),
        dialect=dialect,
    )
    opened(made)
    return made


# -- text, usage, stop reasons ---------------------------------------------------


async def test_streams_text_with_usage_from_the_final_chunk(fake: FakeChatCompletions) -> None:
    fake.script(
        Reply(
            text="Hello there, friend", prompt_tokens=120, completion_tokens=30, cached_tokens=100
        )
    )
    request = Request(HELLO.messages, system=SystemPrompt(("You are Neo.", "Repo notes.")))

    events = await collect(provider(fake), request)

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there, friend"
    response = completed(events).response
    assert response.content == (Text("Hello there, friend"),)
    assert response.stop_reason == "end_turn"
    assert response.usage == LlmUsage(
        input_tokens=20, output_tokens=30, cache_read_input_tokens=100
    )
    body = fake.completions[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "You are Neo.\n\nRepo notes."}


@pytest.mark.parametrize(
    ("finish", "calls", "expected"),
    [
        ("stop", False, "end_turn"),
        ("tool_calls", True, "tool_use"),
        ("stop", True, "tool_use"),
        ("length", False, "max_tokens"),
        ("content_filter", False, "refusal"),
        ("function_call", False, "function_call"),
        ("end_turn", False, "unexpected"),
    ],
)
async def test_every_finish_reason_maps_to_the_loop_vocabulary(
    fake: FakeChatCompletions, finish: str, calls: bool, expected: str
) -> None:
    tool_calls = [call("call_1", "read_file", {"path": "a"})] if calls else []
    fake.script(Reply(text="partial", tool_calls=tool_calls, finish_reason=finish))

    response = completed(await collect(provider(fake))).response

    assert response.stop_reason == expected


async def test_a_stream_without_a_finish_reason_is_retried_then_fails(
    fake: FakeChatCompletions,
) -> None:
    fake.script(Reply(text="cut", finish_reason=None), Reply(text="cut", finish_reason=None))

    with pytest.raises(ProviderConnectionError, match="ended early"):
        await collect(provider(fake, max_retries=1))
    assert len(fake.completions) == 2


async def test_a_refusal_part_is_a_refusal(fake: FakeChatCompletions) -> None:
    fake.script(Reply(refusal="I can't help with that."))

    response = completed(await collect(provider(fake))).response

    assert response.stop_reason == "refusal"
    assert response.text == "I can't help with that."


# -- tool calls ------------------------------------------------------------------


async def test_parallel_tool_calls_are_assembled_by_index(fake: FakeChatCompletions) -> None:
    fake.script(
        Reply(
            text="Reading both.",
            tool_calls=[
                call("call_a", "read_file", {"path": "one.txt", "limit": 5}),
                call("call_b", "grep", {"pattern": "def \\w+", "path": "."}),
            ],
        )
    )

    response = completed(await collect(provider(fake))).response

    assert response.stop_reason == "tool_use"
    assert response.tool_uses == (
        ToolUse("call_a", "read_file", {"path": "one.txt", "limit": 5}),
        ToolUse("call_b", "grep", {"pattern": "def \\w+", "path": "."}),
    )


async def test_arguments_that_are_not_json_reach_the_tool_as_text(
    fake: FakeChatCompletions,
) -> None:
    fake.script(Reply(tool_calls=[call("call_1", "read_file", '{"path": ')]))

    response = completed(await collect(provider(fake))).response

    assert response.tool_uses == (ToolUse("call_1", "read_file", {"arguments": '{"path": '}),)


async def test_the_agent_loop_runs_one_then_parallel_calls_with_a_real_tool(
    fake: FakeChatCompletions, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    fake.script(
        Reply(tool_calls=[call("call_1", "read_file", {"path": "a.txt"})]),
        Reply(
            tool_calls=[
                call("call_2", "read_file", {"path": "b.txt"}),
                call("call_3", "read_file", {"path": "missing.txt"}),
            ]
        ),
        Reply(text="a says alpha, b says beta"),
    )
    agent = Agent(provider(fake), tools=[ReadFileTool(LocalSandbox(tmp_path))])

    result = await agent.send("read the files")

    assert result.text == "a says alpha, b says beta"
    assert result.turns == 3
    second, third = fake.completions[1].body["messages"], fake.completions[2].body["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "call_1"
    assert second[-1]["role"] == "tool"
    assert second[-1]["tool_call_id"] == "call_1"
    assert "alpha" in second[-1]["content"]
    answers = {m["tool_call_id"]: m["content"] for m in third if m["role"] == "tool"}
    assert "beta" in answers["call_2"]
    assert answers["call_3"].startswith("Error: ")


async def test_an_unknown_finish_reason_fails_the_turn_closed(
    fake: FakeChatCompletions, tmp_path: Path
) -> None:
    fake.script(Reply(text="hm", finish_reason="function_call"))
    agent = Agent(provider(fake), tools=[ReadFileTool(LocalSandbox(tmp_path))])

    with pytest.raises(UnexpectedStopReason, match="function_call"):
        await agent.send("go")


def test_the_fake_rejects_transcripts_the_real_api_rejects() -> None:
    asked = {"role": "assistant", "content": None, "tool_calls": [call("c1", "t", {})]}
    user = {"role": "user", "content": "hi"}

    assert (
        validate_messages([user, asked, {"role": "tool", "tool_call_id": "c1", "content": "x"}])
        is None
    )
    assert "did not have response messages: c1" in str(validate_messages([user, asked, user]))
    assert "did not have response messages: c1" in str(validate_messages([user, asked]))
    stray = [user, {"role": "tool", "tool_call_id": "c9", "content": "x"}]
    assert "must be a response to a preceeding message" in str(validate_messages(stray))


async def test_an_unanswered_call_in_our_transcript_would_be_a_400(
    fake: FakeChatCompletions,
) -> None:
    broken = Request(
        messages=(
            *HELLO.messages,
            Message("assistant", (ToolUse("call_1", "read_file", {"path": "a"}),)),
            Message("user", (Text("never mind"),)),
        )
    )

    with pytest.raises(ProviderHTTPError, match=r"400 .*call_1"):
        await collect(provider(fake), broken)


def test_tool_results_become_tool_messages_before_other_user_content() -> None:
    request = Request(
        messages=(
            Message("user", (Text("go"),)),
            Message("assistant", (Text("Looking."), ToolUse("c1", "bash", {"command": "ls"}))),
            Message(
                "user",
                (ToolResult("c1", (Text("boom"),), is_error=True), Text("also, hurry")),
            ),
        ),
        tool_choice="none",
    )

    params = build_params("m", request, official=False)

    assert params["messages"][1:] == [
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Error: boom"},
        {"role": "user", "content": "also, hurry"},
    ]
    assert params["max_tokens"] == request.max_tokens
    assert "max_completion_tokens" not in params
    assert "tools" not in params


# -- errors and retries ------------------------------------------------------------


async def test_429_and_500_are_retried_honouring_retry_after(fake: FakeChatCompletions) -> None:
    fake.script(
        ErrorReply(
            429,
            "Rate limit reached",
            "requests",
            "rate_limit_exceeded",
            headers={"retry-after": "7"},
        ),
        ErrorReply(500, "The server had an error", "server_error"),
        BrokenStream(after=2),
        Reply(text="finally"),
    )
    sleeps = Sleeps()

    events = await collect(provider(fake, sleeps))

    retries = [e for e in events if isinstance(e, Retrying)]
    assert [r.attempt for r in retries] == [1, 2, 3]
    assert sleeps.delays[0] == 7.0
    assert "429 rate_limit_exceeded" in retries[0].reason
    assert completed(events).response.text == "finally"


async def test_retries_give_up_with_the_last_error(fake: FakeChatCompletions) -> None:
    fake.script(*[ErrorReply(503, "overloaded", "server_error")] * 3)

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(provider(fake, max_retries=2))

    assert str(caught.value) == (
        "chat-completions 503 server_error: overloaded"
        " (overloaded: try again later, or add a --fallback provider)"
    )


async def test_401_is_one_line_naming_the_variable_without_the_key(
    fake: FakeChatCompletions,
) -> None:
    secret = "sk-live-abcdefghijklmnopqrstuvwxyz"

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(provider(fake, api_key=secret))

    line = str(caught.value)
    assert line.startswith("chat-completions 401 invalid_api_key: Incorrect API key provided")
    assert line.endswith("(check OPENAI_API_KEY)")
    assert "\n" not in line
    assert secret not in line
    assert len(fake.completions) == 1


@pytest.mark.parametrize(
    "reply",
    [
        ErrorReply(
            400,
            "This model's maximum context length is 8192 tokens.",
            code="context_length_exceeded",
        ),
        # vLLM: no code, only the message.
        ErrorReply(
            400,
            "This model's maximum context length is 4096 tokens. However, you "
            "requested 4348 tokens.",
        ),
    ],
)
async def test_context_overflow_of_each_dialect_is_typed(
    fake: FakeChatCompletions, reply: ErrorReply
) -> None:
    fake.script(reply)

    with pytest.raises(ContextOverflow) as caught:
        await collect(provider(fake))

    assert caught.value.kind == "context_window_exceeded"


async def test_the_fakes_own_window_refusal_is_typed(fake: FakeChatCompletions) -> None:
    fake.context_window = 5
    with pytest.raises(ContextOverflow, match="context_length_exceeded"):
        await collect(provider(fake))


async def test_an_unreachable_server_names_the_base_url_variable() -> None:
    made = ChatCompletionsProvider(
        "m",
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        retry=RetryPolicy(max_retries=1),
        sleep=Sleeps(),
    )
    opened(made)

    with pytest.raises(ProviderConnectionError) as caught:
        await collect(made)

    assert str(caught.value) == (
        "chat-completions: cannot connect to 127.0.0.1:9: connection refused"
        " (check OPENAI_BASE_URL and the network)"
    )


# -- configuration and the local-server preflight -----------------------------------


def test_a_missing_key_is_fine_only_for_a_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.example.com/v1")
    with pytest.raises(ConfigError, match=r"^OPENAI_API_KEY is not set"):
        make_provider("chat-completions", "gpt-4.1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    assert make_provider("chat-completions", "llama3.1").name == "chat-completions"
    with pytest.raises(ConfigError, match=r"needs a model: pass --model"):
        make_provider("chat-completions")
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"^OPENROUTER_API_KEY is not set"):
        make_provider("openrouter")


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://192.168.1.20:8000/v1", True),
        ("http://vllm:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://openrouter.ai/api/v1", False),
        ("http://8.8.8.8/v1", False),
    ],
)
def test_local_addresses(url: str, local: bool) -> None:
    assert is_local_url(url) is local


async def test_a_keyless_local_server_gets_a_placeholder_key() -> None:
    with FakeChatCompletions(api_key=None) as server:
        server.script(Reply(text="hi"))
        made = ChatCompletionsProvider("fake-model", base_url=server.base_url)
        opened(made)

        completed(await collect(made))

        assert server.completions[0].headers["authorization"].startswith("Bearer ")


async def test_preflight_refuses_a_small_ollama_window_in_one_line(
    fake: FakeChatCompletions,
) -> None:
    fake.ollama["llama3.2"] = OllamaModel(num_ctx=2048)
    fake.script(Reply(text="never sent"))

    with pytest.raises(ConfigError) as caught:
        await collect(provider(fake, model="llama3.2"))

    assert str(caught.value) == (
        f"llama3.2 at {fake.base_url} has a 2,048-token context window; Neo needs at least "
        "16,384: set num_ctx (PARAMETER num_ctx 32768 in a Modelfile, or OLLAMA_CONTEXT_LENGTH)"
    )
    assert fake.completions == []
    assert fake.pending == 1


async def test_preflight_loads_an_ollama_model_without_num_ctx_to_learn_its_window(
    fake: FakeChatCompletions,
) -> None:
    # The server's default (4,096 tokens on a small GPU) is the window it runs with.
    fake.ollama["qwen3"] = OllamaModel(server_ctx=4096)
    fake.script(Reply(text="never sent"))

    with pytest.raises(ConfigError, match=r"has a 4,096-token context window"):
        await collect(provider(fake, model="qwen3"))

    paths = [r.path for r in fake.requests]
    assert paths == ["/v1/models", "/api/show", "/api/ps", "/api/generate", "/api/ps"]
    assert fake.completions == []


async def test_preflight_accepts_an_ollama_server_run_with_a_large_context_length(
    fake: FakeChatCompletions,
) -> None:
    # OLLAMA_CONTEXT_LENGTH=32768 on the server, and the model already loaded.
    fake.ollama["qwen3"] = OllamaModel(server_ctx=32768)
    fake.loaded.add("qwen3")
    fake.script(Reply(text="ok"))

    completed(await collect(provider(fake, model="qwen3")))

    assert "/api/generate" not in [r.path for r in fake.requests]
    assert fake.completions[0].body["max_tokens"] == 32768 // 4


async def test_preflight_refuses_a_model_without_tools(fake: FakeChatCompletions) -> None:
    fake.ollama["gemma"] = OllamaModel(num_ctx=32768, capabilities=("completion", "vision"))

    with pytest.raises(ConfigError, match="does not support tools"):
        await collect(provider(fake, model="gemma"))


async def test_preflight_reads_vllm_max_model_len_and_caps_the_output(
    fake: FakeChatCompletions,
) -> None:
    fake.models = [ModelInfo("small", max_model_len=4096), ModelInfo("big", max_model_len=32768)]
    with pytest.raises(ConfigError, match=r"4,096-token context window.*--max-model-len"):
        await collect(provider(fake, model="small"))

    fake.script(Reply(text="ok"), Reply(text="again"))
    big = provider(fake, model="big")
    completed(await collect(big))
    completed(await collect(big))

    assert [r.path for r in fake.requests].count("/v1/models") == 2  # once per provider
    assert fake.completions[-1].body["max_tokens"] == 32768 // 4


def test_preflight_passes_when_nothing_is_known() -> None:
    assert preflight_problem("m", "http://x/v1", None, None) == (None, None)
    listing = {"data": [{"id": "m", "object": "model"}]}
    assert preflight_problem("m", "http://x/v1", listing, None) == (None, None)


# -- OpenRouter ----------------------------------------------------------------------


async def test_openrouter_headers_usage_accounting_cost_and_reasoning_replay(
    fake: FakeChatCompletions,
) -> None:
    detail = {
        "type": "reasoning.text",
        "text": "think it through",
        "signature": "sig-1",
        "format": "anthropic-claude-v1",
        "index": 0,
    }
    fake.script(
        Reply(
            tool_calls=[call("call_1", "read_file", {"path": "a"})],
            cost=0.0125,
            reasoning_details=[detail],
        ),
        Reply(text="done", cost=0.0025),
    )
    p = provider(fake, model="anthropic/claude-sonnet-5.5", dialect=OPENROUTER)

    first = completed(await collect(p)).response
    opaque = first.content[0]
    assert isinstance(opaque, Opaque)
    assert opaque.data == {"reasoning_details": [detail]}
    follow_up = Request(
        messages=(
            *HELLO.messages,
            Message("assistant", first.content),
            Message("user", (ToolResult("call_1", (Text("contents"),)),)),
        )
    )
    second = completed(await collect(p, follow_up)).response

    sent = fake.completions[0]
    assert "http-referer" not in sent.headers
    assert sent.headers["x-title"] == "Neo"
    assert sent.body["usage"] == {"include": True}
    assert fake.completions[1].body["messages"][1]["reasoning_details"] == [detail]
    assert p.name == "openrouter"
    total = first.usage + second.usage
    assert cost_usd("anthropic/claude-sonnet-5.5", total) == 0.015
