"""The fake Anthropic API, driven by the real `anthropic` SDK (and raw httpx2 for the wire)."""

import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import Message, TextBlock, ThinkingBlock, ToolUseBlock

from tests.fakes import (
    BrokenStream,
    Disconnect,
    ErrorReply,
    FakeAnthropicAPI,
    Reply,
    Stall,
    StreamError,
    Usage,
    sse_events,
    text,
    thinking,
    tool_use,
    validate_request,
)

MODEL = "claude-fake-1"
HELLO: list[Any] = [{"role": "user", "content": "hello"}]


def async_client(server: FakeAnthropicAPI, **options: Any) -> anthropic.AsyncAnthropic:
    options.setdefault("max_retries", 0)
    return anthropic.AsyncAnthropic(api_key=server.api_key, base_url=server.base_url, **options)


def sync_client(server: FakeAnthropicAPI, **options: Any) -> anthropic.Anthropic:
    options.setdefault("max_retries", 0)
    return anthropic.Anthropic(api_key=server.api_key, base_url=server.base_url, **options)


@pytest.fixture
def client(fake_anthropic: FakeAnthropicAPI) -> Iterator[anthropic.Anthropic]:
    with sync_client(fake_anthropic) as client:
        yield client


@pytest.fixture
async def aclient(fake_anthropic: FakeAnthropicAPI) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with async_client(fake_anthropic) as client:
        yield client


def raw_events(server: FakeAnthropicAPI, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events on the wire, parsed by hand rather than by the SDK."""
    response = httpx2.post(
        f"{server.base_url}/v1/messages",
        json={**body, "stream": True},
        headers={"x-api-key": "test-key"},
    )
    assert response.headers["content-type"].startswith("text/event-stream")
    events = []
    for frame in response.text.strip().split("\n\n"):
        name, data = frame.split("\n")
        events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


async def read_events(client: anthropic.AsyncAnthropic, seen: list[str]) -> None:
    """Stream a reply, noting each SDK event type until the stream ends or fails."""
    async with client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream:
        async for event in stream:
            seen.append(event.type)


# --- successful replies ----------------------------------------------------------


async def test_streamed_text_round_trips_content_stop_reason_and_usage(
    fake_anthropic: FakeAnthropicAPI,
    client: anthropic.Anthropic,
    aclient: anthropic.AsyncAnthropic,
) -> None:
    usage = Usage(
        input_tokens=1200,
        output_tokens=34,
        cache_creation_input_tokens=500,
        cache_read_input_tokens=7000,
    )
    fake_anthropic.script(Reply([text("Hello, world! How are you?")], usage=usage))

    async with aclient.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        deltas = [chunk async for chunk in stream.text_stream]
        message = await stream.get_final_message()

    assert len(deltas) > 1
    assert "".join(deltas) == "Hello, world! How are you?"
    assert [type(block) for block in message.content] == [anthropic.types.ParsedTextBlock]
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello, world! How are you?"
    assert message.stop_reason == "end_turn"
    assert message.model == MODEL
    assert message.id.startswith("msg_")
    assert message.usage.input_tokens == 1200
    assert message.usage.output_tokens == 34
    assert message.usage.cache_creation_input_tokens == 500
    assert message.usage.cache_read_input_tokens == 7000
    assert fake_anthropic.requests[0].body["stream"] is True


async def test_streamed_tool_use_yields_parsed_input(
    fake_anthropic: FakeAnthropicAPI, aclient: anthropic.AsyncAnthropic
) -> None:
    command = {"command": "grep -rn 'def main' .", "timeout": 30, "env": {"A": "1"}}
    fake_anthropic.script(
        Reply([text("Let me look."), tool_use("toolu_01", "bash", command)], stop_reason="tool_use")
    )

    async with aclient.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        message = await stream.get_final_message()

    assert message.stop_reason == "tool_use"
    call = message.content[1]
    assert isinstance(call, ToolUseBlock)
    assert (call.id, call.name, call.input) == ("toolu_01", "bash", command)


async def test_streamed_thinking_keeps_its_signature(
    fake_anthropic: FakeAnthropicAPI, aclient: anthropic.AsyncAnthropic
) -> None:
    fake_anthropic.script(Reply([thinking("First, read the file.", "EqQBCkYIARgC"), text("Done.")]))

    async with aclient.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        message = await stream.get_final_message()

    block = message.content[0]
    assert isinstance(block, ThinkingBlock)
    assert block.thinking == "First, read the file."
    assert block.signature == "EqQBCkYIARgC"
    assert message.content[1].type == "text"


def test_stream_wire_follows_the_api_event_order(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(
        Reply([text("abcdefghi"), tool_use("toolu_9", "read", {"path": "a.py"})], "tool_use")
    )

    events = raw_events(fake_anthropic, {"model": MODEL, "max_tokens": 10, "messages": HELLO})

    names = [name for name, _ in events]
    assert [name for name, data in events if data["type"] != name] == []
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert start["content"] == []
    assert start["stop_reason"] is None
    assert set(start["usage"]) >= {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    }
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert [d["text"] for d in deltas if d["type"] == "text_delta"] == ["abc", "def", "ghi"]
    chunks = [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]
    assert len(chunks) > 2
    assert json.loads("".join(chunks)) == {"path": "a.py"}
    assert events[-2][1]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}


def test_non_streamed_create_returns_the_message(
    fake_anthropic: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    fake_anthropic.script(
        Reply(
            [text("Hi there.")],
            stop_reason="stop_sequence",
            stop_sequence="END",
            usage=Usage(input_tokens=9, output_tokens=3),
        )
    )

    message = client.messages.create(model=MODEL, max_tokens=100, messages=HELLO)

    assert isinstance(message, Message)
    assert isinstance(message.content[0], TextBlock)
    assert message.content[0].text == "Hi there."
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "END")
    assert (message.usage.input_tokens, message.usage.output_tokens) == (9, 3)
    assert message.model == MODEL


async def test_unknown_stop_reason_passes_through(
    fake_anthropic: FakeAnthropicAPI, aclient: anthropic.AsyncAnthropic
) -> None:
    fake_anthropic.script(
        Reply([text("a")], stop_reason="weird_reason"), Reply([text("b")], stop_reason=None)
    )
    client = aclient

    async with client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream:
        streamed = await stream.get_final_message()
    created = await client.messages.create(model=MODEL, max_tokens=5, messages=HELLO)

    # The SDK types stop_reason as a Literal, yet passes unknown values through.
    unknown: str | None = streamed.stop_reason
    assert unknown == "weird_reason"
    assert created.stop_reason is None


def test_default_usage_grows_with_the_request(
    fake_anthropic: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    fake_anthropic.script(Reply([text("ok")]), Reply([text("ok")]))
    long: list[Any] = [{"role": "user", "content": "word " * 400}]

    short_usage = client.messages.create(model=MODEL, max_tokens=5, messages=HELLO).usage
    long_usage = client.messages.create(model=MODEL, max_tokens=5, messages=long).usage

    assert 0 < short_usage.input_tokens < long_usage.input_tokens
    assert short_usage.output_tokens > 0


# --- scripting and recording ------------------------------------------------------


def test_replies_are_consumed_in_order_and_requests_recorded(
    fake_anthropic: FakeAnthropicAPI,
    client: anthropic.Anthropic,
) -> None:
    fake_anthropic.script(Reply([text("one")]), Reply([text("two")]))

    first = client.messages.create(model=MODEL, max_tokens=5, messages=HELLO, system="Be brief.")
    second = client.messages.create(model=MODEL, max_tokens=7, messages=HELLO)

    assert [first.content[0], second.content[0]] == [
        TextBlock(type="text", text="one"),
        TextBlock(type="text", text="two"),
    ]
    assert fake_anthropic.pending == 0
    assert len(fake_anthropic.requests) == 2
    recorded = fake_anthropic.requests[0]
    assert (recorded.method, recorded.path) == ("POST", "/v1/messages")
    assert recorded.body == {
        "model": MODEL,
        "max_tokens": 5,
        "messages": HELLO,
        "system": "Be brief.",
    }
    assert "anthropic-version" in recorded.headers
    assert fake_anthropic.requests[1].body["max_tokens"] == 7


def test_a_callable_reply_is_computed_from_the_request(
    fake_anthropic: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    def echo_tool_output(request: dict[str, Any]) -> Reply:
        result = request["messages"][-1]["content"][0]
        return Reply([text(f"The file says: {result['content']}")])

    fake_anthropic.script(
        Reply([tool_use("toolu_7", "read", {"path": "x"})], stop_reason="tool_use"),
        echo_tool_output,
    )
    first = client.messages.create(model=MODEL, max_tokens=5, messages=HELLO)
    history: list[Any] = [
        *HELLO,
        first.to_param(),
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_7", "content": "42"}],
        },
    ]

    second = client.messages.create(model=MODEL, max_tokens=5, messages=history)

    assert second.content[0].type == "text"
    assert second.content[0].text == "The file says: 42"


def test_an_empty_script_fails_loudly(
    fake_anthropic: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    with pytest.raises(anthropic.InternalServerError) as caught:
        client.messages.create(model=MODEL, max_tokens=5, messages=HELLO)

    assert caught.value.status_code == 500
    assert caught.value.type == "api_error"
    assert caught.value.api_message == "fake: no scripted reply left"


def test_a_failing_reply_factory_answers_500(
    fake_anthropic: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    def broken(request: dict[str, Any]) -> Reply:
        raise KeyError("nope")

    fake_anthropic.script(broken)

    with pytest.raises(anthropic.InternalServerError) as caught:
        client.messages.create(model=MODEL, max_tokens=5, messages=HELLO)

    assert "KeyError" in (caught.value.api_message or "")


def test_unknown_paths_answer_404(fake_anthropic: FakeAnthropicAPI) -> None:
    response = httpx2.get(f"{fake_anthropic.base_url}/v1/models")

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"
    assert fake_anthropic.requests[0].path == "/v1/models"


# --- validation ----------------------------------------------------------------------


def tool_turns(result_blocks: list[Any], use_ids: tuple[str, ...] = ("toolu_1",)) -> list[Any]:
    return [
        *HELLO,
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": i, "name": "bash", "input": {}} for i in use_ids
            ],
        },
        {"role": "user", "content": result_blocks},
    ]


def result(tool_use_id: str = "toolu_1", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": "ok", **extra}


CACHED = {"cache_control": {"type": "ephemeral"}}
FIVE_CACHED: dict[str, Any] = {
    "tools": [{"name": "bash", "input_schema": {"type": "object"}, **CACHED}],
    "system": [{"type": "text", "text": "a", **CACHED}, {"type": "text", "text": "b", **CACHED}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "c", **CACHED}]},
        {"role": "assistant", "content": "d"},
        {"role": "user", "content": [{"type": "text", "text": "e", **CACHED}]},
    ],
}


def tool_result_with_cached_text() -> dict[str, Any]:
    return result(content=[{"type": "text", "text": "x", **CACHED}])


# Overrides of a valid request body; None removes the field.
INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "model missing": ({"model": None}, "model: Field required"),
    "max_tokens missing": ({"max_tokens": None}, "max_tokens: Field required"),
    "no messages": ({"messages": []}, "messages: at least one message is required"),
    "assistant first": (
        {"messages": [{"role": "assistant", "content": "hi"}, *HELLO]},
        'messages: first message must use the "user" role',
    ),
    "two user turns": (
        {"messages": [*HELLO, *HELLO]},
        'roles must alternate between "user" and "assistant", but found multiple "user" roles',
    ),
    "empty content list": (
        {"messages": [{"role": "user", "content": []}]},
        "messages.0: all messages must have non-empty content",
    ),
    "content not a list": (
        {"messages": [{"role": "user", "content": 3}]},
        "messages.0.content: Input should be a valid list",
    ),
    "unanswered tool_use": (
        {"messages": tool_turns([{"type": "text", "text": "go on"}])},
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_1.",
    ),
    "tool_use answered only later": (
        {"messages": [*tool_turns([{"type": "text", "text": "?"}]), *tool_turns([result()])[1:]]},
        "messages.1: `tool_use` ids were found without `tool_result` blocks",
    ),
    "final assistant tool_use": (
        {"messages": tool_turns([result()])[:2]},
        "messages.1: `tool_use` ids were found without `tool_result` blocks",
    ),
    "tool_result for another id": (
        {"messages": tool_turns([result(), result("toolu_2")])},
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_2.",
    ),
    "tool_result without tool_use": (
        {"messages": [{"role": "user", "content": [result()]}]},
        "messages.0.content.0: unexpected `tool_use_id`",
    ),
    "tool_result after text": (
        {"messages": tool_turns([{"type": "text", "text": "here:"}, result()])},
        "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message.",
    ),
    "five cache_control blocks": (
        FIVE_CACHED,
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
    "five cache_control blocks, one inside a tool_result": (
        {
            "tools": FIVE_CACHED["tools"] * 2,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "c", **CACHED}]},
                *tool_turns(
                    [tool_result_with_cached_text(), {"type": "text", "text": "t", **CACHED}]
                )[1:],
            ],
        },
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
}


@pytest.mark.parametrize(("overrides", "message"), INVALID.values(), ids=INVALID.keys())
def test_invalid_requests_get_400_and_consume_nothing(
    fake_anthropic: FakeAnthropicAPI,
    client: anthropic.Anthropic,
    overrides: dict[str, Any],
    message: str,
) -> None:
    fake_anthropic.script(Reply([text("never sent")]))
    fields = {"model": MODEL, "max_tokens": 5, "messages": HELLO, **overrides}
    body = {key: value for key, value in fields.items() if value is not None}

    with pytest.raises(anthropic.BadRequestError) as caught:
        client.post("/v1/messages", body=body, cast_to=Message)

    assert caught.value.status_code == 400
    assert caught.value.type == "invalid_request_error"
    assert message in (caught.value.api_message or "")
    assert caught.value.request_id is not None
    assert caught.value.request_id.startswith("req_")
    assert len(fake_anthropic.requests) == 1
    assert fake_anthropic.pending == 1


VALID = {
    "prefill": [*HELLO, {"role": "assistant", "content": "The answer is"}],
    "empty prefill": [*HELLO, {"role": "assistant", "content": ""}],
    "tool round trip": tool_turns([result(), {"type": "text", "text": "and go on"}]),
    "parallel tools": tool_turns([result("toolu_b"), result("toolu_a")], ("toolu_a", "toolu_b")),
}


@pytest.mark.parametrize("messages", VALID.values(), ids=VALID.keys())
def test_valid_conversations_are_accepted(
    fake_anthropic: FakeAnthropicAPI, client: anthropic.Anthropic, messages: list[Any]
) -> None:
    fake_anthropic.script(Reply([text("fine")]))

    message = client.messages.create(model=MODEL, max_tokens=5, messages=messages)

    assert message.content[0].type == "text"
    assert fake_anthropic.pending == 0


def test_four_cache_control_blocks_are_accepted(
    fake_anthropic: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    four = {**FIVE_CACHED, "system": FIVE_CACHED["system"][:1]}
    fake_anthropic.script(Reply([text("cached")]))

    client.messages.create(model=MODEL, max_tokens=5, **four)

    sent = fake_anthropic.requests[0].body
    assert sent["tools"][0]["cache_control"] == {"type": "ephemeral"}
    assert validate_request({"model": MODEL, "max_tokens": 5, **four}) is None


# --- auth and errors -------------------------------------------------------------------


def test_a_wrong_key_is_rejected_without_consuming_a_reply(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.script(Reply([text("secret")]))
    wrong = anthropic.Anthropic(api_key="wrong", base_url=fake_anthropic.base_url, max_retries=0)

    with wrong, pytest.raises(anthropic.AuthenticationError) as caught:
        wrong.messages.create(model=MODEL, max_tokens=5, messages=HELLO)

    assert caught.value.status_code == 401
    assert caught.value.api_message == "invalid x-api-key"
    assert len(fake_anthropic.requests) == 1
    assert fake_anthropic.pending == 1


def test_the_key_is_accepted_as_x_api_key_too(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(Reply([text("hi")]))
    body = {"model": MODEL, "max_tokens": 5, "messages": HELLO}
    url = f"{fake_anthropic.base_url}/v1/messages"

    refused = httpx2.post(url, json=body, headers={"x-api-key": "nope"})
    accepted = httpx2.post(url, json=body, headers={"x-api-key": "test-key"})

    assert refused.status_code == 401
    assert refused.json()["error"] == {
        "type": "authentication_error",
        "message": "invalid x-api-key",
    }
    assert accepted.status_code == 200
    assert accepted.json()["content"] == [{"type": "text", "text": "hi"}]


def test_529_overloaded_maps_to_overloaded_error(
    fake_anthropic: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    fake_anthropic.script(ErrorReply(529, "overloaded_error", "Overloaded"))

    with pytest.raises(anthropic.OverloadedError) as caught:
        client.messages.create(model=MODEL, max_tokens=5, messages=HELLO)

    assert isinstance(caught.value, anthropic.InternalServerError)
    assert caught.value.status_code == 529
    assert caught.value.type == "overloaded_error"
    assert caught.value.request_id is not None
    assert caught.value.request_id.startswith("req_")


async def test_error_reply_headers_reach_the_client(
    fake_anthropic: FakeAnthropicAPI, aclient: anthropic.AsyncAnthropic
) -> None:
    fake_anthropic.script(
        ErrorReply(429, "rate_limit_error", "Slow down", headers={"retry-after": "7"})
    )

    with pytest.raises(anthropic.RateLimitError) as caught:
        async with aclient.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream:
            await stream.get_final_message()

    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.api_message == "Slow down"


# --- transport trouble -------------------------------------------------------------------


async def test_broken_stream_raises_httpx2_remote_protocol_error(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.script(BrokenStream(after_events=4))
    seen: list[str] = []

    async with async_client(fake_anthropic, max_retries=2) as retrying:
        with pytest.raises(httpx2.RemoteProtocolError):
            await read_events(retrying, seen)

    # Four wire events (message_start, content_block_start, ping, one delta); the
    # SDK skips the ping and adds a `text` event for the delta.
    assert seen == ["message_start", "content_block_start", "content_block_delta", "text"]
    # The SDK never retries once the response has started.
    assert len(fake_anthropic.requests) == 1


def test_broken_stream_sync_raises_the_same(
    fake_anthropic: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    fake_anthropic.script(BrokenStream(after_events=1))

    with (
        pytest.raises(httpx2.RemoteProtocolError),
        client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream,
    ):
        stream.get_final_message()


def test_broken_non_streamed_body_is_a_connection_error(
    fake_anthropic: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    fake_anthropic.script(BrokenStream())

    with pytest.raises(anthropic.APIConnectionError):
        client.messages.create(model=MODEL, max_tokens=5, messages=HELLO)


def test_disconnect_before_headers_is_a_connection_error(
    fake_anthropic: FakeAnthropicAPI,
    client: anthropic.Anthropic,
) -> None:
    fake_anthropic.script(Disconnect(), Reply([text("second try")]))

    with pytest.raises(anthropic.APIConnectionError) as caught:
        client.messages.create(model=MODEL, max_tokens=5, messages=HELLO)

    assert not isinstance(caught.value, anthropic.APITimeoutError)
    assert isinstance(caught.value.__cause__, httpx2.RemoteProtocolError)
    # The server is fine afterwards.
    message = client.messages.create(model=MODEL, max_tokens=5, messages=HELLO)
    assert message.content[0].type == "text"


async def test_stream_error_event_raises_api_status_error(
    fake_anthropic: FakeAnthropicAPI,
    client: anthropic.Anthropic,
    aclient: anthropic.AsyncAnthropic,
) -> None:
    fake_anthropic.script(StreamError("overloaded_error", after_events=3))

    with pytest.raises(anthropic.APIStatusError) as caught:
        async with aclient.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream:
            await stream.get_final_message()

    assert caught.value.type == "overloaded_error"
    # The HTTP status was already 200 when the error event came.
    assert caught.value.status_code == 200
    assert not isinstance(caught.value, anthropic.InternalServerError)


def test_stream_error_on_a_non_streamed_request_is_an_http_error(
    fake_anthropic: FakeAnthropicAPI,
    client: anthropic.Anthropic,
) -> None:
    fake_anthropic.script(StreamError("overloaded_error"))

    with pytest.raises(anthropic.OverloadedError):
        client.messages.create(model=MODEL, max_tokens=5, messages=HELLO)


async def test_stall_trips_the_read_timeout(fake_anthropic: FakeAnthropicAPI) -> None:
    fake_anthropic.script(Stall(seconds=30, after_events=2))
    seen: list[str] = []

    async with async_client(fake_anthropic, timeout=anthropic.Timeout(5.0, read=0.3)) as client:
        with pytest.raises(httpx2.ReadTimeout):
            await read_events(client, seen)

    assert seen == ["message_start", "content_block_start"]


def test_stall_before_a_non_streamed_answer_is_an_api_timeout(
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.script(Stall(seconds=30))
    impatient = sync_client(fake_anthropic, timeout=anthropic.Timeout(5.0, read=0.3))

    with impatient, pytest.raises(anthropic.APITimeoutError):
        impatient.messages.create(model=MODEL, max_tokens=5, messages=HELLO)


async def test_a_short_stall_then_completes(
    fake_anthropic: FakeAnthropicAPI, aclient: anthropic.AsyncAnthropic
) -> None:
    fake_anthropic.script(Stall(seconds=0.05, after_events=3, reply=Reply([text("slow")])))

    async with aclient.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream:
        message = await stream.get_final_message()

    assert message.content[0].type == "text"
    assert message.content[0].text == "slow"


def test_stop_ends_a_stalled_reply() -> None:
    outcome: list[BaseException] = []
    server = FakeAnthropicAPI()
    server.start()
    server.script(Stall(seconds=600, after_events=1))
    client = sync_client(server, timeout=anthropic.Timeout(60.0))

    def consume() -> None:
        try:
            with client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream:
                stream.get_final_message()
        except Exception as exc:
            outcome.append(exc)

    reader = threading.Thread(target=consume)
    reader.start()
    while not server.requests:
        threading.Event().wait(0.01)
    server.stop()
    reader.join(10)
    client.close()

    assert not server.running
    assert not reader.is_alive()
    assert len(outcome) == 1
    assert isinstance(outcome[0], httpx2.RemoteProtocolError)


# --- the pure parts ------------------------------------------------------------------------


def test_sse_events_for_an_empty_message_still_frame_it() -> None:
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": Usage().to_json(),
    }

    names = [name for name, _ in sse_events(message)]

    assert names == ["message_start", "ping", "message_delta", "message_stop"]


def test_server_lifecycle() -> None:
    server = FakeAnthropicAPI(api_key=None)
    with pytest.raises(RuntimeError):
        _ = server.base_url

    with server:
        assert server.running
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.env["ANTHROPIC_BASE_URL"] == server.base_url
        server.script(Reply([text("anyone")]))
        response = httpx2.post(
            f"{server.base_url}/v1/messages",
            json={"model": MODEL, "max_tokens": 5, "messages": HELLO},
        )
        assert response.status_code == 200

    assert not server.running
