"""A wire-level fake of the OpenAI Responses API, for tests.

The real `openai` SDK talks to it over HTTP on 127.0.0.1: `POST /v1/responses`
with `"stream": true` answers the server-sent events the real API sends
(`response.created`, `response.output_item.added`, text and argument deltas,
`response.output_item.done`, then `response.completed` or
`response.incomplete`), each with its `sequence_number`.

    with FakeOpenAIResponses() as server:
        server.script(Reply([function_call("call_1", "bash", {"command": "ls"})]))
        client = openai.OpenAI(api_key=server.api_key, base_url=server.base_url)

Each request takes the next scripted item (first in, first out): a `Reply`,
an `ErrorReply`, `Disconnect`, `Stall`, `RawStream`, or a callable
`(request_body) -> item`.

Transcripts the real API refuses get its 400 and consume nothing: a
function_call without its function_call_output, an output for a call it never
saw, and, with `store: false`, a call replayed without the reasoning item
that came before it (or with that item's encrypted content missing or
altered). Every request is appended to `server.requests`.

Custom tools (`{"type": "custom", "format": {"type": "grammar", "syntax":
"lark", ...}}`) are taken by GPT-5-class models only, their Lark grammar
compiled (a grammar that does not compile is a 400); a scripted
`custom_tool_call` is streamed with `response.custom_tool_call_input` events
and must name a tool the request offered as custom and match its grammar, as
a grammar-bound model's would (else the fake answers 500, the test's mistake).
Replayed, a `custom_tool_call` is answered by a `custom_tool_call_output`, a
`function_call` by a `function_call_output`.

`FakeOpenAIResponses(chatgpt=auth)` is ChatGPT's Codex backend instead:
`POST /backend-api/codex/responses`, the bearer one of the access tokens the
fake sign-in service `auth` issued and has not revoked, `chatgpt-account-id`
its account, and the backend's own refusals (`{"detail": ...}`) of
`max_output_tokens`, of requests without instructions, stored or not streamed.
"""

from __future__ import annotations

import json
import re
import secrets
import string
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeAlias

import lark
from starlette.requests import Request
from starlette.responses import Response

from tests.fakes.planned import Plan, PlannedResponse
from tests.fakes.prompt_cache import PrefixCache
from tests.fakes.scripted_server import Disconnect, RawStream, RecordedRequest, ScriptedServer

if TYPE_CHECKING:
    from tests.fakes.chatgpt_auth import FakeChatGPTAuth

__all__ = [
    "Disconnect",
    "ErrorReply",
    "FakeOpenAIResponses",
    "RawStream",
    "RecordedRequest",
    "Reply",
    "Stall",
    "Usage",
    "custom_tool_call",
    "function_call",
    "message",
    "prompt_text",
    "reasoning",
    "refusal",
    "sse_events",
]

Item: TypeAlias = dict[str, Any]


def _random_id(prefix: str, length: int = 24) -> str:
    alphabet = string.ascii_letters + string.digits
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


# --- what a test scripts -----------------------------------------------------


def message(text: str) -> Item:
    """An assistant message with one output_text part."""
    return {
        "type": "message",
        "id": _random_id("msg_"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def refusal(text: str) -> Item:
    """An assistant message whose only part is a refusal."""
    return {
        "type": "message",
        "id": _random_id("msg_"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": text}],
    }


def function_call(call_id: str, name: str, arguments: Mapping[str, Any]) -> Item:
    return {
        "type": "function_call",
        "id": _random_id("fc_"),
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(dict(arguments)),
        "status": "completed",
    }


def custom_tool_call(call_id: str, name: str, text: str) -> Item:
    """A call to a custom (free-form) tool: `text` is its whole input."""
    return {
        "type": "custom_tool_call",
        "id": _random_id("ctc_"),
        "call_id": call_id,
        "name": name,
        "input": text,
        "status": "completed",
    }


def reasoning(summary: str = "") -> Item:
    """A reasoning item; its encrypted content is sent only when the request includes it."""
    return {
        "type": "reasoning",
        "id": _random_id("rs_"),
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
    }


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 100
    output_tokens: int = 20
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens, "cache_write_tokens": 0},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


@dataclass(frozen=True, slots=True)
class Reply:
    """A response. `status` is `completed` or `incomplete` (with `incomplete_reason`),
    or anything else to test failing closed. `usage=None` estimates tokens from
    sizes; `cached_share` then reports that fraction of them as cached."""

    output: Sequence[Item] = ()
    status: str = "completed"
    incomplete_reason: str | None = None
    usage: Usage | None = None
    cached_share: float = 0.0


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An HTTP error: `{"error": {"message", "type", "param", "code"}}`."""

    status: int
    code: str | None
    message: str
    error_type: str = "invalid_request_error"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Stall:
    """Stream `after_events` events of `reply`, go silent for `seconds`, then the rest."""

    seconds: float
    after_events: int = 3
    reply: Reply = Reply([message("A slow answer.")])


Scripted: TypeAlias = Reply | ErrorReply | Disconnect | Stall | RawStream
ScriptItem: TypeAlias = Scripted | Callable[[dict[str, Any]], Scripted]


# --- the pure core: validation and events -------------------------------------


@dataclass(slots=True)
class _Issued:
    """What the fake handed out: calls and the reasoning item each one followed."""

    calls: set[str] = field(default_factory=set)
    reasoning_before: dict[str, str] = field(default_factory=dict)
    encrypted: dict[str, str] = field(default_factory=dict)


def validate(body: object, issued: _Issued) -> str | None:
    """The real API's 400 message for a body it would refuse, else None."""
    if not isinstance(body, Mapping):
        return "Invalid body: expected an object."
    if not isinstance(body.get("model"), str):
        return "Missing required parameter: 'model'."
    problem = _tools_problem(body)
    if problem:
        return problem
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return "Invalid type for 'input': expected a string or an array of input items."
    stateless = body.get("store") is False
    calls: list[str] = []
    custom_calls: set[str] = set()
    outputs: set[str] = set()
    seen_reasoning: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            return f"Invalid type for 'input[{i}]': expected an object."
        kind = item.get("type", "message")
        if kind == "reasoning":
            rid = str(item.get("id"))
            if stateless and "encrypted_content" not in item:
                return (
                    f"Item with id '{rid}' not found. Items are not persisted when `store` "
                    "is set to false. Try again with `store` set to true, or remove this "
                    "item from your input."
                )
            if stateless and item["encrypted_content"] != issued.encrypted.get(rid):
                return f"The encrypted content for item {rid} could not be verified."
            seen_reasoning.add(rid)
        elif kind in ("function_call", "custom_tool_call"):
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                return f"Missing required parameter: 'input[{i}].call_id'."
            if kind == "custom_tool_call" and not isinstance(item.get("input"), str):
                return f"Missing required parameter: 'input[{i}].input'."
            needed = issued.reasoning_before.get(call_id)
            if stateless and needed is not None and needed not in seen_reasoning:
                return (
                    f"Item '{call_id}' of type '{kind}' was provided without its "
                    f"required 'reasoning' item: '{needed}'."
                )
            calls.append(call_id)
            if kind == "custom_tool_call":
                custom_calls.add(call_id)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = item.get("call_id")
            custom = kind == "custom_tool_call_output"
            if call_id not in calls or (call_id in custom_calls) != custom:
                what = "custom tool call output" if custom else "function call output"
                return f"No tool call found for {what} with call_id {call_id}."
            outputs.add(str(call_id))
        elif kind == "message" and item.get("role") not in (
            "user",
            "assistant",
            "system",
            "developer",
        ):
            return f"Invalid value for 'input[{i}].role'."
    for call_id in calls:
        if call_id not in outputs:
            return f"No tool output found for function call {call_id}."
    return None


# Models that take custom tools (and their chat snapshots, which do not).
_CUSTOM_TOOL_MODELS = re.compile(r"^gpt-5(?!\S*-chat)")


def _tools_problem(body: Mapping[str, Any]) -> str | None:
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        return "Invalid type for 'tools': expected an array."
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or tool.get("type") != "custom":
            continue
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            return f"Missing required parameter: 'tools[{i}].name'."
        if not _CUSTOM_TOOL_MODELS.match(str(body.get("model"))):
            return f"Custom tools are not supported with the model '{body.get('model')}'."
        grammar = tool.get("format")
        if grammar is None or grammar.get("type") == "text":
            continue
        if grammar.get("type") != "grammar" or grammar.get("syntax") not in ("lark", "regex"):
            return f"Invalid value for 'tools[{i}].format'."
        if not isinstance(grammar.get("definition"), str):
            return f"Missing required parameter: 'tools[{i}].format.definition'."
        try:
            _compiled(grammar["syntax"], grammar["definition"])
        except (lark.exceptions.LarkError, re.error) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else "invalid"
            return f"Invalid grammar for tool '{tool['name']}': {first}"
    return None


def _compiled(syntax: str, definition: str) -> Callable[[str], bool]:
    """Whether a text is in the grammar; raises when the grammar does not compile."""
    if syntax == "regex":
        pattern = re.compile(definition)
        return lambda text: pattern.fullmatch(text) is not None
    parser = lark.Lark(definition, parser="earley", lexer="dynamic")

    def matches(text: str) -> bool:
        try:
            parser.parse(text)
        except lark.exceptions.LarkError:
            return False
        return True

    return matches


def _custom_mismatch(output: Sequence[Item], body: Mapping[str, Any]) -> str | None:
    """Why a scripted custom call is one no model could make for this request."""
    offered = {
        t["name"]: t.get("format") or {"type": "text"}
        for t in body.get("tools") or []
        if isinstance(t, Mapping) and t.get("type") == "custom"
    }
    for item in output:
        if item["type"] == "function_call" and item["name"] in offered:
            return f"fake: {item['name']} was offered as a custom tool, not a function"
        if item["type"] != "custom_tool_call":
            continue
        grammar = offered.get(item["name"])
        if grammar is None:
            return f"fake: {item['name']} was not offered as a custom tool"
        if grammar.get("type") == "grammar" and not _compiled(
            grammar["syntax"], grammar["definition"]
        )(item["input"]):
            return f"fake: the scripted input of {item['name']} is not in its grammar"
    return None


def _pieces(value: str, count: int = 3) -> list[str]:
    if not value:
        return []
    size = max(1, -(-len(value) // count))
    return [value[start : start + size] for start in range(0, len(value), size)]


def _response(body: Mapping[str, Any], status: str, output: list[Item]) -> dict[str, Any]:
    return {
        "id": _random_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": body.get("model", "gpt-fake"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "store": body.get("store", True),
        "error": None,
        "incomplete_details": None,
        "usage": None,
    }


def _item_events(index: int, item: Item) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    base = {"output_index": index, "item_id": item["id"]}
    kind = item["type"]
    if kind == "message":
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress", "content": []},
            }
        )
        for c, part in enumerate(item["content"]):
            where = {**base, "content_index": c}
            if part["type"] == "output_text":
                empty = {**part, "text": ""}
                events.append({"type": "response.content_part.added", **where, "part": empty})
                for piece in _pieces(part["text"]):
                    events.append(
                        {
                            "type": "response.output_text.delta",
                            **where,
                            "delta": piece,
                            "logprobs": [],
                        }
                    )
                events.append(
                    {
                        "type": "response.output_text.done",
                        **where,
                        "text": part["text"],
                        "logprobs": [],
                    }
                )
            else:
                empty = {**part, "refusal": ""}
                events.append({"type": "response.content_part.added", **where, "part": empty})
                for piece in _pieces(part["refusal"]):
                    events.append({"type": "response.refusal.delta", **where, "delta": piece})
                events.append(
                    {"type": "response.refusal.done", **where, "refusal": part["refusal"]}
                )
            events.append({"type": "response.content_part.done", **where, "part": part})
    elif kind == "function_call":
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress", "arguments": ""},
            }
        )
        for piece in _pieces(item["arguments"]):
            events.append(
                {"type": "response.function_call_arguments.delta", **base, "delta": piece}
            )
        events.append(
            {
                "type": "response.function_call_arguments.done",
                **base,
                "arguments": item["arguments"],
            }
        )
    elif kind == "custom_tool_call":
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress", "input": ""},
            }
        )
        for piece in _pieces(item["input"]):
            events.append({"type": "response.custom_tool_call_input.delta", **base, "delta": piece})
        events.append(
            {"type": "response.custom_tool_call_input.done", **base, "input": item["input"]}
        )
    else:
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def sse_events(
    body: Mapping[str, Any], reply: Reply, output: list[Item], usage: Usage
) -> list[dict[str, Any]]:
    """The events the API streams for a finished response, numbered in order."""
    started = _response(body, "in_progress", [])
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(output):
        events += _item_events(index, item)
    final = _response(body, reply.status, output)
    final["usage"] = usage.to_json()
    if reply.status == "incomplete":
        final["incomplete_details"] = {"reason": reply.incomplete_reason}
    terminal = reply.status if reply.status in ("completed", "incomplete") else "completed"
    events.append({"type": f"response.{terminal}", "response": final})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def prompt_text(body: Mapping[str, Any]) -> str:
    """The prompt as the fake counts it, in the order the API caches it."""
    return json.dumps([body.get("instructions"), body.get("tools"), body.get("input")])


def _estimate(body: Mapping[str, Any], output: list[Item], cached_share: float) -> Usage:
    prompt = max(1, len(prompt_text(body)) // 4)
    return Usage(
        input_tokens=prompt,
        output_tokens=max(1, len(json.dumps(output)) // 4),
        cached_tokens=int(prompt * cached_share),
    )


# --- the wire -------------------------------------------------------------------

_SSE_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8")]


def _sse(event: Mapping[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


def _error_plan(status: int, error: ErrorReply | tuple[str | None, str, str]) -> Plan:
    if isinstance(error, ErrorReply):
        code, message, kind, extra = error.code, error.message, error.error_type, error.headers
    else:
        (code, message, kind), extra = error, {}
    body = json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})
    headers = [(b"content-type", b"application/json")]
    headers += [(k.encode(), v.encode()) for k, v in extra.items()]
    return Plan(status, headers, [body.encode()])


def _detail_plan(status: int, detail: str) -> Plan:
    body = json.dumps({"detail": detail}).encode()
    return Plan(status, [(b"content-type", b"application/json")], [body])


class FakeOpenAIResponses(ScriptedServer[ScriptItem]):
    """The fake API served on 127.0.0.1 in a background thread; a context manager.

    `context_window`: a request whose estimated prompt (4 characters a token)
    is larger is refused with `context_length_exceeded`, as the real API does.
    """

    _thread_name = "fake-openai"
    _label = "the fake OpenAI API"

    def __init__(
        self, *, api_key: str = "sk-test-fake-key-0123", chatgpt: FakeChatGPTAuth | None = None
    ) -> None:
        super().__init__()
        self.api_key = api_key
        self.chatgpt = chatgpt
        self.context_window: int | None = None
        # Model prompt caching (per model and prompt_cache_key) in the usage
        # of replies that script none.
        self.prompt_cache = False
        self._cache = PrefixCache()
        self._issued = _Issued()

    @property
    def base_url(self) -> str:
        prefix = "/backend-api/codex" if self.chatgpt is not None else "/v1"
        return f"{self.origin}{prefix}"

    @property
    def env(self) -> dict[str, str]:
        """The SDK's own variables pointing at this server, for subprocesses."""
        if self.chatgpt is not None:
            return {"NEO_CHATGPT_BASE_URL": self.base_url}
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self.api_key}

    def _respond(self, request: Request, raw: bytes, body: Any) -> Response:
        return PlannedResponse(self._answer(request, body), self)

    def _answer(self, request: Request, body: Any) -> Plan:
        if self.chatgpt is not None:
            refused = self._chatgpt_refusal(request, body)
            if refused is not None:
                return refused
        elif request.url.path != "/v1/responses" or request.method != "POST":
            return _error_plan(404, (None, "Not found", "invalid_request_error"))
        elif request.headers.get("authorization") != f"Bearer {self.api_key}":
            given = request.headers.get("authorization", "").removeprefix("Bearer ")
            masked = given[:3] + "*" * max(0, len(given) - 7) + given[-4:]
            return _error_plan(
                401,
                (
                    "invalid_api_key",
                    f"Incorrect API key provided: {masked}. You can find your API key at "
                    "https://platform.openai.com/account/api-keys.",
                    "invalid_request_error",
                ),
            )
        with self._lock:
            problem = validate(body, self._issued)
        if problem:
            return _error_plan(400, (None, problem, "invalid_request_error"))
        if self.context_window is not None:
            prompt = len(json.dumps([body.get("instructions"), body.get("input")])) // 4
            if prompt > self.context_window:
                return _error_plan(
                    400,
                    (
                        "context_length_exceeded",
                        "Your input exceeds the context window of this model. "
                        "Please adjust your input and try again.",
                        "invalid_request_error",
                    ),
                )
        item = self._next()
        if item is None:
            return _error_plan(
                500, ("server_error", "fake: no scripted reply left", "server_error")
            )
        if callable(item):
            item = item(body)
        return self._plan(item, body)

    def _chatgpt_refusal(self, request: Request, body: Any) -> Plan | None:
        assert self.chatgpt is not None
        if request.url.path != "/backend-api/codex/responses" or request.method != "POST":
            return _detail_plan(404, "Not Found")
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if bearer not in self.chatgpt.live_access_tokens:
            return _error_plan(
                401,
                (
                    "token_expired",
                    "Provided authentication token is expired. Please try signing in again.",
                    "invalid_request_error",
                ),
            )
        if request.headers.get("chatgpt-account-id") != self.chatgpt.account_id:
            return _detail_plan(403, "Workspace is not authorized in this account.")
        if not isinstance(body, Mapping):
            return _detail_plan(400, "Invalid body")
        if "max_output_tokens" in body:
            return _detail_plan(400, "Unsupported parameter: max_output_tokens")
        if not body.get("instructions"):
            return _detail_plan(400, "Instructions are required")
        if body.get("store") is not False:
            return _detail_plan(400, "Store must be set to false")
        if body.get("stream") is not True:
            return _detail_plan(400, "Stream must be set to true")
        return None

    def _plan(self, item: Scripted, body: Mapping[str, Any]) -> Plan:
        if isinstance(item, ErrorReply):
            return _error_plan(item.status, item)
        if isinstance(item, Disconnect):
            return Plan(0, [], [], drop=True)
        if isinstance(item, RawStream):
            return Plan(200, _SSE_HEADERS, [item.body.encode()])
        reply = item.reply if isinstance(item, Stall) else item
        mismatch = _custom_mismatch(reply.output, body)
        if mismatch:
            return _error_plan(500, ("server_error", mismatch, "server_error"))
        output = self._issue(reply.output, body)
        usage = reply.usage or _estimate(body, output, reply.cached_share)
        if self.prompt_cache and reply.usage is None:
            key = f"{body.get('model')}/{body.get('prompt_cache_key')}"
            usage = replace(usage, cached_tokens=self._cache.read(key, prompt_text(body)))
        chunks = [_sse(event) for event in sse_events(body, reply, output, usage)]
        if isinstance(item, Stall):
            return Plan(
                200, _SSE_HEADERS, chunks, pause_after=item.after_events, pause=item.seconds
            )
        return Plan(200, _SSE_HEADERS, chunks)

    def _issue(self, output: Sequence[Item], body: Mapping[str, Any]) -> list[Item]:
        """The output items as sent, remembering what a later transcript must replay."""
        include = body.get("include") or []
        sent: list[Item] = []
        last_reasoning: str | None = None
        with self._lock:
            for item in output:
                item = dict(item)
                if item["type"] == "reasoning":
                    last_reasoning = item["id"]
                    if "reasoning.encrypted_content" in include:
                        item["encrypted_content"] = _random_id("gAAAA", 64)
                        self._issued.encrypted[item["id"]] = item["encrypted_content"]
                elif item["type"] in ("function_call", "custom_tool_call"):
                    self._issued.calls.add(item["call_id"])
                    if last_reasoning is not None:
                        self._issued.reasoning_before[item["call_id"]] = last_reasoning
                sent.append(item)
        return sent
