"""A wire-level fake of the Gemini API's streaming endpoint, for tests.

The real `google-genai` SDK talks to it over HTTP on 127.0.0.1:
`POST /v1beta/models/{model}:streamGenerateContent?alt=sse` answers `data:`
lines of GenerateContentResponse JSON (camelCase), text split over several
chunks, the finish reason and usage on the last one.

    with FakeGemini() as server:
        server.script(Reply([call("read_file", {"path": "a"}, signed=True)]))

Each request takes the next scripted item (first in, first out): a `Reply`,
an `ErrorReply`, `Disconnect`, `Cut`, `Stall`, `RawStream`, or a callable
`(request_body) -> item`.

Requests the real API refuses get its 400 and consume nothing: a wrong key
(API_KEY_INVALID), a functionCall turn not followed by a turn of as many
functionResponse parts, a response with no call before it, and a call the fake
signed replayed without that thoughtSignature on its part. Every request is
appended to `server.requests`.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from starlette.requests import Request
from starlette.responses import Response

from tests.fakes.planned import Plan, PlannedResponse
from tests.fakes.prompt_cache import PrefixCache
from tests.fakes.scripted_server import Disconnect, RawStream, RecordedRequest, ScriptedServer

__all__ = [
    "Cut",
    "Disconnect",
    "ErrorReply",
    "FakeGemini",
    "RawStream",
    "RecordedRequest",
    "Reply",
    "Stall",
    "Usage",
    "call",
    "chunks_for",
    "prompt_text",
    "rate_limited",
    "text",
    "thought",
    "validate",
]

Part: TypeAlias = dict[str, Any]
# Marks a scripted part the fake signs when it sends it.
_SIGN = "_sign"


def text(value: str, *, signed: bool = False) -> Part:
    return {"text": value, _SIGN: signed}


def thought(value: str, *, signed: bool = False) -> Part:
    """A thought summary part (`thought: true`)."""
    return {"text": value, "thought": True, _SIGN: signed}


def call(
    name: str, args: Mapping[str, Any], *, id: str | None = None, signed: bool = False
) -> Part:
    function: dict[str, Any] = {"name": name, "args": dict(args)}
    if id is not None:
        function["id"] = id
    return {"functionCall": function, _SIGN: signed}


@dataclass(frozen=True, slots=True)
class Usage:
    prompt: int = 100
    candidates: int = 20
    thoughts: int = 0
    cached: int = 0

    def to_json(self) -> dict[str, Any]:
        meta = {
            "promptTokenCount": self.prompt,
            "candidatesTokenCount": self.candidates,
            "totalTokenCount": self.prompt + self.candidates + self.thoughts,
        }
        if self.thoughts:
            meta["thoughtsTokenCount"] = self.thoughts
        if self.cached:
            meta["cachedContentTokenCount"] = self.cached
        return meta


@dataclass(frozen=True, slots=True)
class Reply:
    """A streamed answer. `block_reason`: the prompt is refused, no candidate."""

    parts: Sequence[Part] = ()
    finish_reason: str = "STOP"
    usage: Usage = field(default_factory=Usage)
    block_reason: str | None = None


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An HTTP error: `{"error": {"code", "message", "status", "details"}}`."""

    status: int
    code: str
    message: str
    details: Sequence[Mapping[str, Any]] = ()
    headers: Mapping[str, str] = field(default_factory=dict)


def rate_limited(seconds: float) -> ErrorReply:
    """A 429 whose RetryInfo asks for `seconds`, as the API sends it."""
    return ErrorReply(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details.",
        [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{seconds:g}s"}],
    )


@dataclass(frozen=True, slots=True)
class Cut:
    """Send `after_chunks` chunks of `reply`, then close the connection."""

    after_chunks: int = 1
    reply: Reply = Reply([text("A cut answer, never finished.")])


@dataclass(frozen=True, slots=True)
class Stall:
    """Send `after_chunks` chunks of `reply`, go silent for `seconds`, then the rest."""

    seconds: float
    after_chunks: int = 1
    reply: Reply = Reply([text("A slow answer.")])


Scripted: TypeAlias = Reply | ErrorReply | Disconnect | Cut | Stall | RawStream
ScriptItem: TypeAlias = Scripted | Callable[[dict[str, Any]], Scripted]


# --- the pure core: validation and chunks -------------------------------------


def _call_key(function: Mapping[str, Any]) -> str:
    return json.dumps(
        [function.get("id"), function.get("name"), function.get("args") or {}], sort_keys=True
    )


def _signature_bytes(value: object) -> bytes | None:
    # Protobuf's JSON form takes bytes in standard or URL-safe base64 alike.
    if not isinstance(value, str):
        return None
    try:
        return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_"))
    except ValueError:
        return None


def validate(body: object, signed: Mapping[str, str]) -> str | None:
    """The real API's 400 message for a body it would refuse, else None.

    `signed`: the signature the fake sent with each call, by `_call_key`.
    """
    if not isinstance(body, Mapping):
        return "Invalid JSON payload received."
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return "* GenerateContentRequest.contents: contents is not specified"
    pending = 0
    for n, content in enumerate(contents):
        if not isinstance(content, Mapping):
            return f"Invalid value at 'contents[{n}]'."
        role = content.get("role")
        if role not in ("user", "model"):
            return f"Please use a valid role: user, model. (contents[{n}])"
        parts = content.get("parts") or []
        calls = [p for p in parts if isinstance(p, Mapping) and "functionCall" in p]
        responses = [p for p in parts if isinstance(p, Mapping) and "functionResponse" in p]
        if pending and len(responses) != pending:
            return (
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn."
            )
        if responses and not pending:
            return (
                "Please ensure that function response turn comes immediately after a "
                "function call turn."
            )
        pending = len(calls) if role == "model" else 0
        for position, part in enumerate(parts):
            if not isinstance(part, Mapping) or "functionCall" not in part:
                continue
            sent = signed.get(_call_key(part["functionCall"]))
            given = part.get("thoughtSignature", part.get("thought_signature"))
            if sent is not None and _signature_bytes(given) != _signature_bytes(sent):
                name = part["functionCall"].get("name")
                return (
                    "Function call is missing a thought_signature in functionCall parts. "
                    "This is required for tools to work correctly, and missing "
                    "thought_signature may lead to degraded model performance. Additional "
                    f"data, function call `default_api:{name}` , position {position + 1}. "
                    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures "
                    "for more details."
                )
    if pending:
        return (
            "Please ensure that function call turn comes immediately after a user turn "
            "or after a function response turn."
        )
    return None


def _pieces(value: str, count: int = 3) -> list[str]:
    if not value:
        return [""]
    size = max(1, -(-len(value) // count))
    return [value[start : start + size] for start in range(0, len(value), size)]


def chunks_for(reply: Reply, parts: Sequence[Part], model: str) -> list[dict[str, Any]]:
    """The GenerateContentResponse chunks the API streams for `reply`, sent `parts`."""
    base: dict[str, Any] = {"modelVersion": model, "responseId": "fake-" + secrets.token_hex(6)}
    if reply.block_reason is not None:
        return [
            {
                **base,
                "promptFeedback": {"blockReason": reply.block_reason},
                "usageMetadata": reply.usage.to_json(),
            }
        ]
    pieces: list[Part] = []
    for part in parts:
        if "text" in part:
            split = _pieces(part["text"])
            for n, piece in enumerate(split):
                # The signature comes with the last piece of its part.
                last = n == len(split) - 1
                pieces.append(
                    {k: v for k, v in part.items() if k != "thoughtSignature" or last}
                    | {"text": piece}
                )
        else:
            pieces.append(part)
    chunks: list[dict[str, Any]] = [
        {**base, "candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}]}
        for p in pieces
    ]
    if not chunks:
        chunks = [{**base, "candidates": [{"content": {"role": "model", "parts": []}, "index": 0}]}]
    chunks[-1]["candidates"][0]["finishReason"] = reply.finish_reason
    chunks[-1]["usageMetadata"] = reply.usage.to_json()
    return chunks


def _tokens(body: Mapping[str, Any]) -> int:
    return len(json.dumps([body.get("systemInstruction"), body.get("contents")])) // 4


def prompt_text(body: Mapping[str, Any]) -> str:
    """The whole prompt, tools included, in the order it is cached."""
    return json.dumps([body.get("tools"), body.get("systemInstruction"), body.get("contents")])


# --- the wire -------------------------------------------------------------------

_SSE_HEADERS = [(b"content-type", b"text/event-stream")]


def _sse(chunk: Mapping[str, Any]) -> bytes:
    return f"data: {json.dumps(chunk, separators=(',', ':'))}\r\n\r\n".encode()


def _error_plan(
    status: int,
    code: str,
    message: str,
    details: Sequence[Mapping[str, Any]] = (),
    headers: Mapping[str, str] | None = None,
) -> Plan:
    error: dict[str, Any] = {"code": status, "message": message, "status": code}
    if details:
        error["details"] = list(details)
    extra = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    return Plan(
        status,
        [(b"content-type", b"application/json; charset=UTF-8"), *extra],
        [json.dumps({"error": error}, indent=2).encode()],
    )


class FakeGemini(ScriptedServer[ScriptItem]):
    """The fake API served on 127.0.0.1 in a background thread; a context manager.

    `context_window`: a request whose estimated prompt (4 characters a token)
    is larger is refused as the real API refuses it.
    """

    _thread_name = "fake-gemini"
    _label = "the fake Gemini API"

    def __init__(self, *, api_key: str = "AIzaSyFakeTestKey-0123456789abcdefghij") -> None:
        super().__init__()
        self.api_key = api_key
        self.context_window: int | None = None
        # Model implicit caching (per model): replies then report their prompt
        # from its size and the cached part of it, in place of scripted counts.
        self.prompt_cache = False
        self._cache = PrefixCache()
        self._signed: dict[str, str] = {}

    @property
    def base_url(self) -> str:
        return self.origin

    @property
    def env(self) -> dict[str, str]:
        """The SDK's own variables pointing at this server, for subprocesses."""
        return {"GOOGLE_GEMINI_BASE_URL": self.base_url, "GEMINI_API_KEY": self.api_key}

    def _respond(self, request: Request, raw: bytes, body: Any) -> Response:
        return PlannedResponse(self._answer(request, body), self)

    def _answer(self, request: Request, body: Any) -> Plan:
        path = request.url.path
        prefix, _, action = path.rpartition(":")
        if (
            request.method != "POST"
            or not prefix.startswith("/v1beta/models/")
            or action != "streamGenerateContent"
            or request.query_params.get("alt") != "sse"
        ):
            return _error_plan(404, "NOT_FOUND", f"Not found: {path}")
        key = request.headers.get("x-goog-api-key") or request.query_params.get("key")
        if key != self.api_key:
            return _error_plan(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "API_KEY_INVALID",
                        "domain": "googleapis.com",
                        "metadata": {"service": "generativelanguage.googleapis.com"},
                    }
                ],
            )
        with self._lock:
            problem = validate(body, self._signed)
        if problem:
            return _error_plan(400, "INVALID_ARGUMENT", problem)
        if self.context_window is not None and _tokens(body) > self.context_window:
            return _error_plan(
                400,
                "INVALID_ARGUMENT",
                f"The input token count ({_tokens(body)}) exceeds the maximum number of "
                f"tokens allowed ({self.context_window}).",
            )
        item = self._next()
        if item is None:
            return _error_plan(500, "INTERNAL", "fake: no scripted reply left")
        if callable(item):
            item = item(body)
        model = prefix.removeprefix("/v1beta/models/")
        if self.prompt_cache and isinstance(item, Reply):
            prompt = prompt_text(body)
            usage = replace(
                item.usage, prompt=len(prompt) // 4, cached=self._cache.read(model, prompt)
            )
            item = replace(item, usage=usage)
        return self._plan(item, model)

    def _plan(self, item: Scripted, model: str) -> Plan:
        if isinstance(item, ErrorReply):
            return _error_plan(item.status, item.code, item.message, item.details, item.headers)
        if isinstance(item, Disconnect):
            return Plan(0, [], [], drop=True)
        if isinstance(item, RawStream):
            return Plan(200, _SSE_HEADERS, [item.body.encode()])
        reply = item.reply if isinstance(item, Cut | Stall) else item
        chunks = [_sse(c) for c in chunks_for(reply, self._issue(reply.parts), model)]
        if isinstance(item, Stall):
            return Plan(
                200, _SSE_HEADERS, chunks, pause_after=item.after_chunks, pause=item.seconds
            )
        if isinstance(item, Cut):
            return Plan(200, _SSE_HEADERS, chunks, cut_after=item.after_chunks)
        return Plan(200, _SSE_HEADERS, chunks)

    def _issue(self, parts: Sequence[Part]) -> list[Part]:
        """The parts as sent, signing those scripted so and remembering the signatures."""
        sent: list[Part] = []
        with self._lock:
            for part in parts:
                wire = {k: v for k, v in part.items() if k != _SIGN}
                if part.get(_SIGN):
                    signature = base64.b64encode(secrets.token_bytes(24)).decode()
                    wire["thoughtSignature"] = signature
                    if "functionCall" in wire:
                        self._signed[_call_key(wire["functionCall"])] = signature
                sent.append(wire)
        return sent
