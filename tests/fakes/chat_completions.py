"""A wire-level fake of an OpenAI-compatible Chat Completions server, for tests.

The real `openai` SDK talks to it over HTTP on 127.0.0.1. `POST
/v1/chat/completions` with `"stream": true` answers server-sent events as the
real API streams them: `data: {chunk}` lines, the first delta carrying the
role, tool calls split into deltas by `index` (id and name first, then the
arguments in pieces), a chunk with the `finish_reason`, a usage-only chunk
with empty `choices` when `stream_options.include_usage` is set, and `data:
[DONE]`. `GET /v1/models` lists `models`; `POST /api/show` answers as Ollama
does for the models in `ollama` (404 otherwise, as other servers do).

    with FakeChatCompletions() as server:
        server.script(Reply(tool_calls=[call("call_1", "bash", {"command": "ls"})]))

Each completion request takes the next scripted `Reply`, `ErrorReply`,
`BrokenStream`, `Stall`, or a callable `(request_body) -> reply`. Requests the real API
would reject (a bad key, a malformed transcript, an unanswered tool call, a
tool message for an unknown id, a prompt over `context_window`) get its 4xx
answer and consume nothing. Every request is appended to `requests`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.fakes.planned import Plan, PlannedResponse
from tests.fakes.prompt_cache import PrefixCache
from tests.fakes.scripted_server import RecordedRequest, ScriptedServer

__all__ = [
    "BrokenStream",
    "ErrorReply",
    "FakeChatCompletions",
    "ModelInfo",
    "OllamaModel",
    "RecordedRequest",
    "Reply",
    "Stall",
    "call",
    "chunks",
    "prompt_text",
    "prompt_tokens",
    "validate_messages",
]


def call(id: str, name: str, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
    """A tool call; dict arguments are sent as JSON text, split into pieces."""
    text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return {"id": id, "type": "function", "function": {"name": name, "arguments": text}}


@dataclass(frozen=True, slots=True)
class Reply:
    """A streamed completion. `finish_reason="auto"` is tool_calls when there
    are calls, else stop; None sends no finish_reason at all (a broken server).

    `usage=None` estimates tokens from sizes; `cost` adds OpenRouter's billed
    cost to the usage chunk; `reasoning_details` are streamed as OpenRouter does.
    """

    text: str = ""
    tool_calls: Sequence[Mapping[str, Any]] = ()
    finish_reason: str | None = "auto"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost: float | None = None
    refusal: str | None = None
    reasoning_details: Sequence[Mapping[str, Any]] = ()

    @property
    def finish(self) -> str | None:
        if self.finish_reason == "auto":
            return "tool_calls" if self.tool_calls else "stop"
        return self.finish_reason


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An HTTP error with OpenAI's body: `{"error": {message, type, param, code}}`."""

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BrokenStream:
    """Stream `after` chunks of `reply`, then drop the connection mid-body."""

    after: int = 2
    reply: Reply = Reply(text="This answer is cut short by a failure.")


@dataclass(frozen=True, slots=True)
class Stall:
    """Stream `after` chunks of `reply`, go silent for `seconds`, then the rest.

    The silence ends early when the client hangs up or the server stops.
    """

    seconds: float
    after: int = 2
    reply: Reply = Reply(text="A slow answer, in several pieces.")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """An entry of `GET /v1/models`; `max_model_len` as vLLM reports it."""

    id: str
    max_model_len: int | None = None


@dataclass(frozen=True, slots=True)
class OllamaModel:
    """What Ollama's `/api/show` reports: `num_ctx` among its parameters.

    Without `num_ctx` the server loads the model with `server_ctx` tokens
    (its `OLLAMA_CONTEXT_LENGTH`, else what the GPU's memory allows), which
    only `/api/ps` tells, once the model is loaded.
    """

    num_ctx: int | None = None
    capabilities: Sequence[str] = ("completion", "tools")
    server_ctx: int = 4096


ScriptedReply: TypeAlias = Reply | ErrorReply | BrokenStream | Stall
ScriptItem: TypeAlias = ScriptedReply | Callable[[dict[str, Any]], ScriptedReply]


# --- the pure core ------------------------------------------------------------


def _error(message: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


def validate_messages(messages: object) -> str | None:
    """The real API's 400 message for a transcript it would reject, else None."""
    if not isinstance(messages, list) or not messages:
        return "[] is too short - 'messages'"
    pending: list[str] = []
    answerable: set[str] = set()
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in (
            "system",
            "developer",
            "user",
            "assistant",
            "tool",
        ):
            return f"Invalid value for 'messages[{i}].role'"
        role = message["role"]
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in answerable:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            if not isinstance(message.get("content"), str | list):
                return f"Missing required parameter: 'messages[{i}].content'."
            pending = [p for p in pending if p != call_id]
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}"
            )
        answerable = set()
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not calls and message.get("content") in (None, ""):
                return f"Invalid value for 'messages[{i}].content': expected a string, got null."
            for j, tool_call in enumerate(calls):
                function = tool_call.get("function") if isinstance(tool_call, Mapping) else None
                if not isinstance(function, Mapping) or not isinstance(tool_call.get("id"), str):
                    return f"Missing required parameter: 'messages[{i}].tool_calls[{j}].id'."
                try:
                    json.loads(function.get("arguments", ""))
                except ValueError:
                    return f"Invalid 'messages[{i}].tool_calls[{j}].function.arguments'."
            pending = [c["id"] for c in calls]
            answerable = set(pending)
        elif message.get("content") in (None, "", []):
            return f"Missing required parameter: 'messages[{i}].content'."
    if pending:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(pending)}"
        )
    return None


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """The fake's count of a request's prompt: about 4 characters a token."""
    return max(1, len(prompt_text(body)) // 4)


def prompt_text(body: Mapping[str, Any]) -> str:
    """The prompt as the fake counts it, tools first as servers cache it."""
    return json.dumps([body.get("tools"), body.get("messages")])


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def chunks(reply: Reply, body: Mapping[str, Any], completion_id: str) -> Iterator[dict[str, Any]]:
    """The chunks that stream `reply`, as the real API orders them."""
    model = body.get("model", "fake-model")
    base = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_fake",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        out = {**base, "choices": [choice]}
        if body.get("stream_options", {}).get("include_usage"):
            out["usage"] = None
        return out

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for detail in reply.reasoning_details:
        # Streamed in two halves to exercise the client's merge by index.
        text = str(detail.get("text", ""))
        half = len(text) // 2
        yield chunk({"content": None, "reasoning_details": [{**detail, "text": text[:half]}]})
        yield chunk({"content": None, "reasoning_details": [{**detail, "text": text[half:]}]})
    for piece in _pieces(reply.text) if reply.text else ():
        yield chunk({"content": piece})
    if reply.refusal:
        yield chunk({"refusal": reply.refusal})
    for index, tool_call in enumerate(reply.tool_calls):
        function = tool_call["function"]
        first = {
            "index": index,
            "id": tool_call["id"],
            "type": "function",
            "function": {"name": function["name"], "arguments": ""},
        }
        yield chunk({"tool_calls": [first]})
        for piece in _pieces(function["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    if reply.finish is not None:
        yield chunk({}, reply.finish)
    if body.get("stream_options", {}).get("include_usage"):
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_tokens(body)
        completion = reply.completion_tokens
        if completion is None:
            completion = max(1, len(reply.text + json.dumps(list(reply.tool_calls))) // 4)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens or 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }
        if reply.cost is not None:
            usage["cost"] = reply.cost
        yield {**base, "choices": [], "usage": usage}


def _sse(data: Mapping[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"data: {text}\n\n".encode()


_SSE_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8")]


# --- the server ----------------------------------------------------------------


class FakeChatCompletions(ScriptedServer[ScriptItem]):
    """The fake served on 127.0.0.1 in a background thread; a context manager.

    `api_key=None` accepts any key or none (a local server).
    """

    _thread_name = "fake-chat-completions"
    _label = "the fake Chat Completions server"

    def __init__(self, *, api_key: str | None = "test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.models: list[ModelInfo] = [ModelInfo("fake-model")]
        self.ollama: dict[str, OllamaModel] = {}
        # Ollama models loaded into memory, as `/api/ps` lists them.
        self.loaded: set[str] = set()
        self.context_window: int | None = None
        # Model prompt caching (per model) in the usage of replies that script none.
        self.prompt_cache = False
        self._cache = PrefixCache()
        self._count = 0

    @property
    def completions(self) -> list[RecordedRequest]:
        """The chat completion requests received, in order."""
        return [r for r in self.requests if r.path == "/v1/chat/completions"]

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def _respond(self, request: Request, raw: bytes, body: Any) -> Response:
        path = request.url.path
        if path == "/api/show" and request.method == "POST":
            return self._show(body)
        if path == "/api/generate" and request.method == "POST":
            return self._load(body)
        if path == "/api/ps" and request.method == "GET":
            return self._running()
        auth = request.headers.get("authorization")
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            shown = (auth or "").removeprefix("Bearer ")
            message = f"Incorrect API key provided: {shown[:3]}***{shown[-4:]}."
            return JSONResponse(_error(message, "invalid_api_key"), status_code=401)
        if path == "/v1/models" and request.method == "GET":
            data = [
                {"id": m.id, "object": "model", "created": 0, "owned_by": "fake"}
                | ({"max_model_len": m.max_model_len} if m.max_model_len else {})
                for m in self.models
            ]
            return JSONResponse({"object": "list", "data": data})
        if path != "/v1/chat/completions" or request.method != "POST":
            return JSONResponse(_error(f"Invalid URL ({request.method} {path})"), status_code=404)
        return self._complete(body)

    def _show(self, body: Any) -> Response:
        name = body.get("model") if isinstance(body, Mapping) else None
        model = self.ollama.get(name) if isinstance(name, str) else None
        if model is None:
            return JSONResponse({"error": f"model '{name}' not found"}, status_code=404)
        parameters = f"num_ctx {model.num_ctx}\ntemperature 0.7" if model.num_ctx else ""
        return JSONResponse(
            {
                "parameters": parameters,
                "details": {"format": "gguf", "family": "llama"},
                "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
                "capabilities": list(model.capabilities),
            }
        )

    def _load(self, body: Any) -> Response:
        # Ollama's /api/generate with no prompt loads the model and returns.
        name = body.get("model") if isinstance(body, Mapping) else None
        if not isinstance(name, str) or name not in self.ollama:
            return JSONResponse({"error": f"model '{name}' not found"}, status_code=404)
        self.loaded.add(name)
        return JSONResponse({"model": name, "response": "", "done": True, "done_reason": "load"})

    def _running(self) -> Response:
        models = []
        for name in sorted(self.loaded):
            model = self.ollama[name]
            window = model.num_ctx or model.server_ctx
            models.append({"name": name, "model": name, "context_length": window})
        return JSONResponse({"models": models})

    def _complete(self, body: Any) -> Response:
        if not isinstance(body, Mapping) or not isinstance(body.get("model"), str):
            return JSONResponse(_error("you must provide a model parameter"), status_code=400)
        if body.get("stream") is not True:
            return JSONResponse(_error("fake: only streamed requests are served"), status_code=400)
        if problem := validate_messages(body.get("messages")):
            return JSONResponse(_error(problem, param="messages"), status_code=400)
        if self.context_window is not None and prompt_tokens(body) > self.context_window:
            message = (
                f"This model's maximum context length is {self.context_window} tokens. However, "
                f"your messages resulted in {prompt_tokens(body)} tokens. Please reduce the "
                "length of the messages."
            )
            return JSONResponse(
                _error(message, "context_length_exceeded", "messages"), status_code=400
            )
        item = self._next()
        with self._lock:
            self._count += 1
            completion_id = f"chatcmpl-fake{self._count}"
        if item is None:
            return JSONResponse(
                {"error": {"message": "fake: no scripted reply left", "type": "server_error"}},
                status_code=500,
            )
        reply = item(dict(body)) if callable(item) else item
        if self.prompt_cache and isinstance(reply, Reply) and reply.cached_tokens is None:
            cached = self._cache.read(str(body["model"]), prompt_text(body))
            reply = replace(reply, cached_tokens=cached)
        if isinstance(reply, ErrorReply):
            error = {"message": reply.message, "type": reply.type, "param": None}
            error["code"] = reply.code
            return JSONResponse(
                {"error": error}, status_code=reply.status, headers=dict(reply.headers)
            )
        streamed = reply if isinstance(reply, Reply) else reply.reply
        data = [_sse(c) for c in chunks(streamed, body, completion_id)]
        plan = Plan(200, _SSE_HEADERS, [*data, _sse("[DONE]")])
        if isinstance(reply, Stall):
            plan = replace(plan, pause_after=reply.after, pause=reply.seconds)
        # A cut past the last chunk is no cut: the stream ends whole.
        if isinstance(reply, BrokenStream) and reply.after < len(data):
            plan = replace(plan, cut_after=reply.after)
        return PlannedResponse(plan, self)
