"""A wire-level fake of the Anthropic Messages API, for tests.

The real `anthropic` SDK talks to it over HTTP on 127.0.0.1, so every byte it
parses is what the real API would send: `POST /v1/messages` answers a JSON
Message, or `text/event-stream` server-sent events when `"stream": true`.

    with FakeAnthropicAPI() as server:
        server.script(Reply([tool_use("toolu_1", "bash", {"cmd": "ls"})], stop_reason="tool_use"))
        client = anthropic.Anthropic(api_key=server.api_key, base_url=server.base_url)
        hello = [{"role": "user", "content": "hi"}]
        client.messages.create(model="m", max_tokens=64, messages=hello)
        assert server.requests[0].body["model"] == "m"

Each request consumes the next scripted reply (first in, first out):

- `Reply`: a message; content is given as API-shaped dicts (see `text`,
  `tool_use`, `thinking`).
- `ErrorReply`: an HTTP error with the real error body.
- `BrokenStream`, `StreamError`, `Stall`, `Disconnect`: transport trouble.
- a callable `(request_body) -> reply` computes the reply from the request.

Requests the real API would reject (auth, schema, turn order, tool pairing,
cache_control count, a thinking budget of max_tokens or more without the
interleaved-thinking beta) get its 400/401 answer and consume nothing. Every
request, rejected or not, is appended to `server.requests`. With
`prompt_cache = True`, replies without scripted usage report cache reads and
writes from the breakpoints sent (see `tests.fakes.prompt_cache`).
"""

from __future__ import annotations

import itertools
import json
import secrets
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope, Send

from tests.fakes.prompt_cache import TTL_SECONDS, BreakpointCache, breakpoint_ttls
from tests.fakes.scripted_server import Disconnect, RawStream, RecordedRequest, ScriptedServer
from tests.fakes.watched import WatchedResponse

__all__ = [
    "BrokenStream",
    "Disconnect",
    "ErrorReply",
    "FakeAnthropicAPI",
    "RawStream",
    "RecordedRequest",
    "Reply",
    "ReplyFactory",
    "ScriptItem",
    "ScriptedReply",
    "Stall",
    "StreamError",
    "Usage",
    "error_body",
    "sse_events",
    "text",
    "thinking",
    "tool_use",
    "validate_request",
    "validate_thinking",
]

Block: TypeAlias = Mapping[str, Any]

MAX_CACHE_CONTROL_BLOCKS = 4


# The status the real API answers with for each error type.
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


# --- what a test scripts -----------------------------------------------------


def text(text: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": text}


def tool_use(id: str, name: str, input: Mapping[str, Any]) -> dict[str, Any]:
    """A tool_use content block; `input` is streamed as a few partial_json chunks."""
    return {"type": "tool_use", "id": id, "name": name, "input": dict(input)}


def thinking(thinking: str, signature: str = "sig") -> dict[str, Any]:
    """A thinking content block; the signature arrives in a signature_delta."""
    return {"type": "thinking", "thinking": thinking, "signature": signature}


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts reported for a reply (message_start and message_delta carry them)."""

    input_tokens: int = 100
    output_tokens: int = 20
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    # Of the cache writes, those to one-hour entries.
    cache_creation_1h_input_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        hour = self.cache_creation_1h_input_tokens
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.cache_creation_input_tokens - hour,
                "ephemeral_1h_input_tokens": hour,
            },
            "output_tokens": self.output_tokens,
        }


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful message.

    `stop_reason` is passed through as is (None and unknown strings included).
    `usage=None` estimates tokens from sizes (about 4 characters a token), so a
    growing conversation reports growing input_tokens. `model=None` echoes the
    request's model.
    """

    content: Sequence[Block] = ()
    stop_reason: str | None = "end_turn"
    usage: Usage | None = None
    stop_sequence: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An HTTP error: `{"type":"error","error":{"type":..,"message":..},"request_id":..}`."""

    status: int
    error_type: str
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)


_PARTIAL = Reply(content=(text("This answer is cut short by a failure in the middle of it."),))


@dataclass(frozen=True, slots=True)
class BrokenStream:
    """Stream `reply`, then close the connection after `after_events` SSE events
    (counted in wire order, ping included), with no message_stop.

    For a non-streamed request: send the headers and half the JSON body, then close.
    """

    after_events: int = 3
    reply: Reply = _PARTIAL


@dataclass(frozen=True, slots=True)
class StreamError:
    """Stream `reply` for `after_events` SSE events, then an `event: error` (the
    status is already 200) and end the response, as the real API does.

    For a non-streamed request: answer the error with its HTTP status instead.
    """

    error_type: str = "overloaded_error"
    after_events: int = 3
    message: str = "Overloaded"
    reply: Reply = _PARTIAL


@dataclass(frozen=True, slots=True)
class Stall:
    """Stream `after_events` SSE events of `reply`, go silent for `seconds`, then
    send the rest. For a non-streamed request: wait `seconds` before answering.

    A stall ends early when the client disconnects or the server stops.
    """

    seconds: float
    after_events: int = 3
    reply: Reply = Reply(content=(text("A slow answer."),))


ScriptedReply: TypeAlias = (
    Reply | ErrorReply | BrokenStream | StreamError | Stall | Disconnect | RawStream
)
ReplyFactory: TypeAlias = Callable[[dict[str, Any]], ScriptedReply]
ScriptItem: TypeAlias = ScriptedReply | ReplyFactory


# --- the pure core: validation, messages, events ------------------------------


def _blocks(content: object) -> list[Mapping[str, Any]]:
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _ids(message: Mapping[str, Any], block_type: str, key: str) -> list[str]:
    blocks = _blocks(message.get("content"))
    return [b[key] for b in blocks if b.get("type") == block_type and key in b]


def _count_cache_control(body: Mapping[str, Any]) -> int:
    """Blocks carrying cache_control across tools, system and messages."""
    count = 0

    def visit(blocks: list[Mapping[str, Any]]) -> None:
        nonlocal count
        for block in blocks:
            if block.get("cache_control") is not None:
                count += 1
            if block.get("type") == "tool_result":
                visit(_blocks(block.get("content")))

    visit(_blocks(body.get("tools")))
    visit(_blocks(body.get("system")))
    for message in body.get("messages", []):
        visit(_blocks(message.get("content")))
    return count


def _check_ttl_order(body: Mapping[str, Any]) -> str | None:
    """The API's refusal of a one-hour breakpoint after a five-minute one, else None."""
    shortest: float | None = None
    for ttl in breakpoint_ttls(body):
        if ttl not in TTL_SECONDS.values():
            return "cache_control.ttl: Input should be '5m' or '1h'"
        if shortest is not None and ttl > shortest:
            return (
                "a cache_control block with ttl='1h' cannot come after one with ttl='5m':"
                " longer-lived cache entries must come first (tools, system, messages)"
            )
        shortest = ttl if shortest is None else min(shortest, ttl)
    return None


def _check_message_shape(i: int, message: object, is_last: bool) -> str | None:
    if not isinstance(message, Mapping):
        return f"messages.{i}: Input should be a valid dictionary"
    role = message.get("role")
    if role not in ("user", "assistant"):
        return f"messages.{i}.role: Input should be 'user' or 'assistant'"
    if "content" not in message:
        return f"messages.{i}.content: Field required"
    content = message["content"]
    if not isinstance(content, str | list):
        return f"messages.{i}.content: Input should be a valid list"
    # The API lets the final assistant message (a prefill) be empty, nothing else.
    if not content and not (is_last and role == "assistant"):
        return (
            f"messages.{i}: all messages must have non-empty content except for the "
            "optional final assistant message"
        )
    for j, block in enumerate(content if isinstance(content, list) else []):
        where = f"messages.{i}.content.{j}"
        if not isinstance(block, Mapping):
            return f"{where}: Input should be a valid dictionary"
        if not isinstance(block.get("type"), str):
            return f"{where}.type: Field required"
        required = {"tool_use": ("id", "name", "input"), "tool_result": ("tool_use_id",)}
        for key in required.get(block["type"], ()):
            if key not in block:
                return f"{where}.{block['type']}.{key}: Field required"
        if block["type"] == "tool_result" and role != "user":
            return f"{where}: `tool_result` blocks can only be in `user` messages"
    return None


def _check_tool_pairing(messages: list[Mapping[str, Any]]) -> str | None:
    for i, message in enumerate(messages):
        if message["role"] == "user":
            previous = messages[i - 1] if i > 0 else {}
            used = set(_ids(previous, "tool_use", "id"))
            for j, block in enumerate(_blocks(message["content"])):
                if block["type"] == "tool_result" and block["tool_use_id"] not in used:
                    return (
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {block['tool_use_id']}. Each `tool_result` block "
                        "must have a corresponding `tool_use` block in the previous message."
                    )
            continue
        use_ids = _ids(message, "tool_use", "id")
        if not use_ids:
            continue
        following = messages[i + 1] if i + 1 < len(messages) else {}
        answered = set(_ids(following, "tool_result", "tool_use_id"))
        missing = [tool_id for tool_id in use_ids if tool_id not in answered]
        if missing:
            return (
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(map(str, missing))}. Each `tool_use` block "
                "must have a corresponding `tool_result` block in the next message."
            )
        kinds = [block["type"] for block in _blocks(following["content"])]
        leading = next((n for n, kind in enumerate(kinds) if kind != "tool_result"), len(kinds))
        if leading < kinds.count("tool_result"):
            return (
                f"messages.{i + 1}: Did not find {len(use_ids)} `tool_result` block(s) at the "
                "beginning of this message. Messages following `tool_use` blocks must begin "
                "with a matching number of `tool_result` blocks."
            )
    return None


def validate_request(body: object) -> str | None:
    """The real API's 400 message for a request body it would reject, else None."""
    if not isinstance(body, Mapping):
        return "Input should be a valid dictionary"
    if "model" not in body:
        return "model: Field required"
    if not isinstance(body["model"], str):
        return "model: Input should be a valid string"
    if "max_tokens" not in body:
        return "max_tokens: Field required"
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        return "max_tokens: Input should be a valid integer"
    if max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    if not isinstance(body.get("stream", False), bool):
        return "stream: Input should be a valid boolean"
    if not isinstance(body.get("system", ""), str | list):
        return "system: Input should be a valid list"
    if not isinstance(body.get("tools", []), list):
        return "tools: Input should be a valid list"
    if "messages" not in body:
        return "messages: Field required"
    messages = body["messages"]
    if not isinstance(messages, list):
        return "messages: Input should be a valid list"
    if not messages:
        return "messages: at least one message is required"
    for i, message in enumerate(messages):
        if problem := _check_message_shape(i, message, is_last=i == len(messages) - 1):
            return problem
    if messages[0]["role"] != "user":
        return 'messages: first message must use the "user" role'
    for previous, message in itertools.pairwise(messages):
        if previous["role"] == message["role"]:
            return (
                'messages: roles must alternate between "user" and "assistant", '
                f'but found multiple "{message["role"]}" roles in a row'
            )
    if problem := _check_tool_pairing(messages):
        return problem
    if problem := _check_ttl_order(body):
        return problem
    found = _count_cache_control(body)
    if found > MAX_CACHE_CONTROL_BLOCKS:
        return (
            f"A maximum of {MAX_CACHE_CONTROL_BLOCKS} blocks with cache_control may be "
            f"provided. Found {found}."
        )
    return None


# The beta under which a thinking budget may pass max_tokens (it then spans
# the whole tool-using turn).
INTERLEAVED_THINKING = "interleaved-thinking-2025-05-14"


def validate_thinking(body: Mapping[str, Any], betas: str) -> str | None:
    """The real API's 400 message for a thinking budget it would refuse, else None.

    `betas` is the request's `anthropic-beta` header (comma-separated).
    """
    thinking = body.get("thinking")
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1_024:
        return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    interleaved = INTERLEAVED_THINKING in [b.strip() for b in betas.split(",")]
    if budget >= body["max_tokens"] and not interleaved:
        return (
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our"
            " documentation at https://docs.claude.com/en/docs/build-with-claude/"
            "extended-thinking#max-tokens-and-context-window-size"
        )
    return None


def _random_id(prefix: str, length: int = 24) -> str:
    alphabet = string.ascii_letters + string.digits
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


def error_body(error_type: str, message: str, request_id: str) -> dict[str, Any]:
    """The JSON body of an API error response."""
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": request_id,
    }


def prompt_tokens(request: Mapping[str, Any]) -> int:
    """The fake's count of a request's prompt tokens: about 4 characters a token."""
    prompt = {key: request.get(key) for key in ("system", "tools", "messages")}
    return max(1, len(json.dumps(prompt)) // 4)


def _estimate_usage(request: Mapping[str, Any], content: Sequence[Block]) -> Usage:
    # About 4 characters a token: plausible magnitudes that grow with the conversation.
    return Usage(
        input_tokens=max(1, len(json.dumps(request)) // 4),
        output_tokens=max(1, len(json.dumps(list(content))) // 4),
    )


def _message(reply: Reply, request: Mapping[str, Any]) -> dict[str, Any]:
    """The complete Message object a reply stands for."""
    usage = reply.usage or _estimate_usage(request, reply.content)
    return {
        "id": _random_id("msg_01"),
        "type": "message",
        "role": "assistant",
        "model": reply.model or request.get("model", "claude-fake"),
        "content": [dict(block) for block in reply.content],
        "stop_reason": reply.stop_reason,
        "stop_sequence": reply.stop_sequence,
        "usage": usage.to_json(),
    }


def _pieces(value: str, count: int = 3) -> list[str]:
    """`value` split into up to `count` non-empty consecutive pieces."""
    if not value:
        return []
    size = max(1, -(-len(value) // count))
    return [value[start : start + size] for start in range(0, len(value), size)]


def _block_events(index: int, block: Block) -> list[tuple[str, dict[str, Any]]]:
    def delta(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "content_block_delta", {
            "type": "content_block_delta",
            "index": index,
            "delta": payload,
        }

    kind = block.get("type")
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [delta({"type": "text_delta", "text": p}) for p in _pieces(block["text"])]
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        # The API opens every tool input with an empty partial_json.
        chunks = ["", *_pieces(json.dumps(block["input"]))]
        deltas = [delta({"type": "input_json_delta", "partial_json": c}) for c in chunks]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            delta({"type": "thinking_delta", "thinking": p}) for p in _pieces(block["thinking"])
        ]
        deltas.append(delta({"type": "signature_delta", "signature": block["signature"]}))
    else:  # redacted_thinking and the like arrive whole
        start, deltas = dict(block), []
    started = {"type": "content_block_start", "index": index, "content_block": start}
    stopped = {"type": "content_block_stop", "index": index}
    return [("content_block_start", started), *deltas, ("content_block_stop", stopped)]


def sse_events(message: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The (event name, data) sequence the API streams for a complete Message."""
    usage = message["usage"]
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": min(1, usage["output_tokens"])},
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(message["content"]):
        block_events = _block_events(index, block)
        if index == 0:  # where the API sends its ping
            block_events.insert(1, ("ping", {"type": "ping"}))
        events += block_events
    if not message["content"]:
        events.append(("ping", {"type": "ping"}))
    # message_delta usage holds cumulative totals, as the API sends them today.
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _encode_sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


# --- what goes on the wire: a plan of steps, run by one ASGI response ---------


@dataclass(frozen=True, slots=True)
class _Start:
    status: int
    headers: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class _Body:
    data: bytes


@dataclass(frozen=True, slots=True)
class _Pause:
    seconds: float


@dataclass(frozen=True, slots=True)
class _Finish:
    pass


@dataclass(frozen=True, slots=True)
class _Drop:
    pass


_Step: TypeAlias = _Start | _Body | _Pause | _Finish | _Drop

_SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}


def _json_plan(status: int, body: Mapping[str, Any], headers: Mapping[str, str]) -> list[_Step]:
    data = json.dumps(body).encode()
    all_headers = {"content-type": "application/json", "content-length": str(len(data))}
    return [_Start(status, {**all_headers, **headers}), _Body(data), _Finish()]


def _error_plan(status: int, error_type: str, message: str, request_id: str) -> list[_Step]:
    body = error_body(error_type, message, request_id)
    return _json_plan(status, body, {"request-id": request_id})


def _plan(reply: ScriptedReply, request: Mapping[str, Any], request_id: str) -> list[_Step]:
    """The wire steps that answer `request` with `reply`."""
    streamed = request.get("stream") is True
    ids = {"request-id": request_id}
    if isinstance(reply, ErrorReply):
        return _json_plan(
            reply.status,
            error_body(reply.error_type, reply.message, request_id),
            {**ids, **reply.headers},
        )
    if isinstance(reply, Disconnect):
        return [_Drop()]
    if isinstance(reply, RawStream):
        return [_Start(200, {**_SSE_HEADERS, **ids}), _Body(reply.body.encode()), _Finish()]
    if isinstance(reply, StreamError) and not streamed:
        status = ERROR_STATUS.get(reply.error_type, 500)
        return _error_plan(status, reply.error_type, reply.message, request_id)
    message = _message(reply if isinstance(reply, Reply) else reply.reply, request)
    if not streamed:
        plan = _json_plan(200, message, ids)
        if isinstance(reply, BrokenStream):
            body = plan[1]
            assert isinstance(body, _Body)
            return [plan[0], _Body(body.data[: len(body.data) // 2]), _Drop()]
        if isinstance(reply, Stall):
            return [_Pause(reply.seconds), *plan]
        return plan
    chunks = [_Body(_encode_sse(name, data)) for name, data in sse_events(message)]
    start = _Start(200, {**_SSE_HEADERS, **ids})
    if isinstance(reply, BrokenStream):
        return [start, *chunks[: min(reply.after_events, len(chunks) - 1)], _Drop()]
    if isinstance(reply, StreamError):
        error = {"type": "error", "error": {"type": reply.error_type, "message": reply.message}}
        cut = min(reply.after_events, len(chunks) - 1)
        return [start, *chunks[:cut], _Body(_encode_sse("error", error)), _Finish()]
    if isinstance(reply, Stall):
        cut = min(reply.after_events, len(chunks))
        return [start, *chunks[:cut], _Pause(reply.seconds), *chunks[cut:], _Finish()]
    return [start, *chunks, _Finish()]


class _PlannedResponse(WatchedResponse):
    """Runs a plan on the ASGI connection, watching for the client going away."""

    def __init__(self, steps: Sequence[_Step], api: FakeAnthropicAPI) -> None:
        super().__init__()
        self._steps = steps
        self._api = api
        self.hangups = api.hangups

    async def _run(self, scope: Scope, send: Send, gone: anyio.Event) -> None:
        for step in self._steps:
            if gone.is_set():
                return None
            if isinstance(step, _Start):
                headers = [(k.encode(), v.encode()) for k, v in step.headers.items()]
                await send(
                    {"type": "http.response.start", "status": step.status, "headers": headers}
                )
            elif isinstance(step, _Body):
                await send({"type": "http.response.body", "body": step.data, "more_body": True})
            elif isinstance(step, _Finish):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            elif isinstance(step, _Pause):
                await self._api.pause(step.seconds, gone)
                if self._api.stopping:
                    return await self._api.hang_up(scope, gone)
            else:
                return await self._api.hang_up(scope, gone)
        return None


# --- the server ----------------------------------------------------------------


class FakeAnthropicAPI(ScriptedServer[ScriptItem]):
    """The fake API served on 127.0.0.1 in a background thread; a context manager.

    `api_key=None` accepts any key (or none).
    """

    _thread_name = "fake-anthropic"
    _label = "the fake Anthropic API"
    _methods = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")

    def __init__(self, *, api_key: str | None = "test-key") -> None:
        super().__init__()
        self.api_key = api_key
        # A request whose estimated prompt (about 4 characters a token) is
        # over this many tokens is refused as the real API refuses one over
        # the model's window, before it takes a scripted reply.
        self.context_window: int | None = None
        # Model prompt caching in the usage of replies that script none.
        self.prompt_cache = False
        # What the cache's entries expire by; None: they never do.
        self.clock: Callable[[], float] | None = None
        self._cache = BreakpointCache(clock=lambda: self.clock() if self.clock else 0.0)

    @property
    def base_url(self) -> str:
        return self.origin

    @property
    def env(self) -> dict[str, str]:
        """The SDK's own variables pointing at this server, for subprocesses."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": self.api_key or ""}

    def _respond(self, request: Request, raw: bytes, body: Any) -> Response:
        request_id = _random_id("req_011")
        return _PlannedResponse(self._answer(request, raw, body, request_id), self)

    def _authorized(self, request: Request) -> bool:
        # SDK 2.x sends the key as a bearer token; older clients send x-api-key.
        if self.api_key is None:
            return True
        return (
            request.headers.get("x-api-key") == self.api_key
            or request.headers.get("authorization") == f"Bearer {self.api_key}"
        )

    def _answer(self, request: Request, raw: bytes, body: Any, request_id: str) -> list[_Step]:
        def reject(status: int, error_type: str, message: str) -> list[_Step]:
            return _error_plan(status, error_type, message, request_id)

        if request.url.path != "/v1/messages" or request.method != "POST":
            return reject(404, "not_found_error", "Not Found")
        if not self._authorized(request):
            return reject(401, "authentication_error", "invalid x-api-key")
        if body is None and raw:
            return reject(400, "invalid_request_error", "There was an error parsing the body")
        if problem := validate_request(body) or validate_thinking(
            body, request.headers.get("anthropic-beta", "")
        ):
            return reject(400, "invalid_request_error", problem)
        if self.context_window is not None:
            prompt = prompt_tokens(body)
            if prompt > self.context_window:
                return reject(
                    400,
                    "invalid_request_error",
                    f"prompt is too long: {prompt} tokens > {self.context_window} maximum",
                )
        item = self._next()
        if item is None:
            return reject(500, "api_error", "fake: no scripted reply left")
        if callable(item):
            try:
                item = item(body)
            except Exception as exc:  # the test's own reply factory failed
                return reject(500, "api_error", f"fake: reply factory raised {exc!r}")
        if self.prompt_cache and isinstance(item, Reply) and item.usage is None:
            use = self._cache.use(str(body.get("model")), body)
            item = replace(
                item,
                usage=Usage(
                    input_tokens=use.uncached,
                    output_tokens=_estimate_usage(body, item.content).output_tokens,
                    cache_creation_input_tokens=use.written,
                    cache_read_input_tokens=use.read,
                    cache_creation_1h_input_tokens=use.written_1h,
                ),
            )
        return _plan(item, body, request_id)
