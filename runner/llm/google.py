"""The Gemini API adapter, over the google-genai SDK with streaming.

Stateless: every request carries the whole transcript. Thought signatures come
back on the part they belong to and must be replayed on that same part, so
each one is kept as an opaque block just before the text or call it signs.
The SDK's own retries are off; the whole streamed response is retried as in
the other adapters, with the server's retry delay honoured and a stream silent
for `idle_timeout` seconds cut and tried once more.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gt

from runner.connection import CONNECT_TIMEOUT, Endpoint, check_api_key, check_base_url
from runner.errors import ConfigError
from runner.llm import types as llm
from runner.llm.errors import (
    ContextOverflow,
    ProviderConnectionError,
    ProviderError,
    ProviderHTTPError,
    overloaded_hint,
)
from runner.llm.http import tls_context
from runner.llm.limits import limits_for
from runner.llm.memo import Memo
from runner.llm.provider import Completed, StreamEvent, TextDelta
from runner.llm.retry import RetryPolicy, parse_retry_after
from runner.llm.retrying import Transient, connection_failure, retried

__all__ = [
    "DEFAULT_MODEL",
    "GoogleProvider",
    "StreamState",
    "build_params",
    "redact",
    "stop_reason",
    "usage_of",
]

log = logging.getLogger("neo.llm.google")

PROVIDER = "google"
BASE_VARIABLE = "GOOGLE_GEMINI_BASE_URL"
DEFAULT_MODEL = "gemini-2.5-pro"
IDLE_TIMEOUT = 180.0
_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_REFUSALS = frozenset({"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"})
# Ids Neo made up for calls the API sent without one; never sent back.
_SYNTHETIC = "neo-call-"
# Each message's contents, built once for all the turns that resend it.
_CONTENTS: Memo[gt.Content | None] = Memo()
# A session sends the same tools and settings every turn; the SDK copies
# the config it is given, so one can serve every call.
_CONFIGS: Memo[gt.GenerateContentConfig] = Memo()
# Thinking budgets (tokens) for the 2.5 family, which takes no effort level.
_BUDGETS: dict[llm.Effort, int] = {"low": 2_048, "medium": 8_192, "high": 24_576}
_KEYLIKE = re.compile(r"AIza[\w\-]{8,}")
_OVERFLOW = re.compile(r"input token count.*exceeds the maximum", re.IGNORECASE | re.DOTALL)
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


class GoogleProvider:
    name = PROVIDER

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        key_variable: str = "GEMINI_API_KEY",
        idle_timeout: float = IDLE_TIMEOUT,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._model = model
        self._key_variable = key_variable
        # No retry_options: the SDK tries once and this adapter retries. The
        # timeout (milliseconds) bounds each read, so it is the idle guard.
        # v1beta: where parametersJsonSchema and thinking levels are documented.
        # A value no request could use is refused here, before any attempt.
        check_base_url(PROVIDER, BASE_VARIABLE, base_url or os.environ.get(BASE_VARIABLE))
        check_api_key(PROVIDER, key_variable, api_key or os.environ.get(key_variable))
        self._endpoint = Endpoint(PROVIDER, BASE_VARIABLE, key_variable)
        options = gt.HttpOptions(
            base_url=base_url,
            api_version="v1beta",
            timeout=int(idle_timeout * 1000),
            # The SDK's one timeout is every phase's; connecting gets less.
            # Left without a context, the SDK builds three per client (sync,
            # async, websocket), ~110 ms of CPU for every job's provider.
            client_args={"verify": tls_context()},
            async_client_args={
                "event_hooks": {"request": [_bound_connect]},
                "verify": tls_context(),
                "ssl": tls_context(),
            },
        )
        try:
            # The SDK reads GOOGLE_API_KEY or GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL.
            self._client = genai.Client(api_key=api_key, http_options=options)
        except ValueError:
            raise ConfigError(f"{key_variable} is not set (export your Gemini API key)") from None
        self._retry = retry or RetryPolicy()
        self._sleep = sleep

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        await self._client.aio.aclose()

    async def stream(self, request: llm.Request) -> AsyncIterator[StreamEvent]:
        params = build_params(self._model, request)
        prefix = _call_prefix(request)
        async for event in retried(
            lambda: self._attempt(params, prefix), self._retry, self._sleep, self.name
        ):
            yield event

    async def _attempt(self, params: Mapping[str, Any], prefix: str) -> AsyncIterator[StreamEvent]:
        state = StreamState(prefix)
        try:
            stream = await self._client.aio.models.generate_content_stream(**params)
            async for chunk in stream:
                for text in state.add(chunk):
                    yield TextDelta(text)
        except genai_errors.APIError as error:
            raise self._classify(error) from None
        except (Transient, ProviderError):
            raise
        except httpx2.TransportError as error:
            raise connection_failure(self._endpoint, error) from None
        except Exception as error:
            # Data that is not JSON, chunks of the wrong shape: the same next time.
            raise _malformed(error) from None
        if not state.finished:
            raise Transient(ProviderConnectionError("google: the response stream ended early"))
        yield Completed(state.response(str(params["model"])))

    def _classify(self, error: genai_errors.APIError) -> ProviderError | Transient:
        log.debug("google error body: %r", error.details)
        status = int(error.code or 0)
        message = redact(error.message or "no error message")
        kind = error.status or "http_error"
        details = _details(error.details)
        reasons = {str(d.get("reason")) for d in details if "reason" in d}
        keyed = status in (401, 403) or bool(reasons & {"API_KEY_INVALID", "API_KEY_EXPIRED"})
        overflow = status == 400 and _OVERFLOW.search(message) is not None
        failure = (ContextOverflow if overflow else ProviderHTTPError)(
            PROVIDER,
            status,
            kind,
            message,
            hint=f"check {self._key_variable}" if keyed else overloaded_hint(status, kind, message),
            raw_body=redact(repr(error.details)),
        )
        if status in _TRANSIENT_STATUS:
            return Transient(failure, _retry_delay(details, error.response))
        return failure


async def _bound_connect(request: httpx2.Request) -> None:
    """Give the request's connection phase CONNECT_TIMEOUT at most."""
    timeout = dict(request.extensions.get("timeout") or {})
    connect = timeout.get("connect")
    timeout["connect"] = CONNECT_TIMEOUT if connect is None else min(connect, CONNECT_TIMEOUT)
    request.extensions["timeout"] = timeout


def _malformed(error: Exception) -> ProviderConnectionError:
    log.debug("google: malformed response", exc_info=error)
    return ProviderConnectionError(
        f"google: the response stream was malformed ({type(error).__name__})"
    )


def redact(text: str) -> str:
    """`text` on one line, with anything shaped like a Google API key cut to its prefix."""
    return " ".join(_KEYLIKE.sub("AIza…", text).split())


def _details(body: object) -> list[Mapping[str, Any]]:
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    error = body.get("error") if isinstance(body, Mapping) else None
    details = error.get("details") if isinstance(error, Mapping) else None
    if not isinstance(details, list):
        return []
    return [d for d in details if isinstance(d, Mapping)]


def _retry_delay(details: Sequence[Mapping[str, Any]], response: object) -> float | None:
    """The wait a RetryInfo detail asks for ("7s", "0.5s"), else the retry-after header."""
    for detail in details:
        delay = detail.get("retryDelay")
        if isinstance(delay, str) and (match := _DELAY.match(delay)):
            return float(match.group(1))
    headers = getattr(response, "headers", None)
    return parse_retry_after(headers) if headers is not None else None


def _call_prefix(request: llm.Request) -> str:
    # Stable for one request (a retry makes the same ids) and different for
    # each turn. The transcript grows (or is compacted into fewer messages),
    # so its length and newest message tell turns apart without hashing all
    # of it on every call.
    messages = request.messages
    digest = hashlib.sha256(str(len(messages)).encode())
    for block in messages[-1].content if messages else ():
        digest.update(_fingerprint(block).encode())
    return f"{_SYNTHETIC}{digest.hexdigest()[:10]}-"


def _fingerprint(block: llm.Block | llm.Image) -> str:
    if isinstance(block, llm.Text):
        return f"t{len(block.text)}:{block.text}"
    if isinstance(block, llm.ToolResult):
        return f"r{block.tool_use_id}:" + "".join(_fingerprint(p) for p in block.content)
    if isinstance(block, llm.ToolUse):
        return f"u{block.id}:{block.name}"
    if isinstance(block, llm.Image):
        return f"i{len(block.data)}"
    return f"o{block.kind}"


# -- requests --------------------------------------------------------------


def build_params(model: str, request: llm.Request) -> dict[str, Any]:
    """The keyword arguments of `generate_content_stream` for `request`."""
    settings = (model, request.system, request.max_tokens, request.tool_choice, request.effort)
    config = _CONFIGS.get(request.tools, lambda tools: _config(tools, *settings), settings)
    return {"model": model, "contents": _contents(request.messages), "config": config}


def _config(
    tools: Sequence[llm.ToolSpec],
    model: str,
    system: llm.SystemPrompt,
    max_tokens: int,
    tool_choice: str,
    effort: llm.Effort | None,
) -> gt.GenerateContentConfig:
    config = gt.GenerateContentConfig(
        max_output_tokens=max_tokens,
        # Calls come back to the loop, never run by the SDK.
        automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True),
    )
    if system.text:
        config.system_instruction = system.text
    if tools:
        config.tools = cast(Any, _tools(tools))
        if tool_choice == "none":
            config.tool_config = gt.ToolConfig(
                function_calling_config=gt.FunctionCallingConfig(
                    mode=gt.FunctionCallingConfigMode.NONE
                )
            )
    thinking = limits_for(model).thinking
    if effort is not None and thinking == "budget":
        # Thinking counts against the output ceiling: leave room for the answer.
        budget = min(_BUDGETS[effort], max_tokens // 2)
        config.thinking_config = gt.ThinkingConfig(thinking_budget=budget)
    elif effort is not None and thinking == "adaptive":
        config.thinking_config = gt.ThinkingConfig(thinking_level=gt.ThinkingLevel(effort.upper()))
    return config


def _tools(specs: Sequence[llm.ToolSpec]) -> list[gt.Tool]:
    declarations = [
        gt.FunctionDeclaration(
            name=t.name,
            description=t.description,
            # Taken as JSON Schema, so no keyword needs stripping.
            parameters_json_schema=dict(t.input_schema),
        )
        for t in specs
    ]
    return [gt.Tool(function_declarations=declarations)]


def _contents(messages: Sequence[llm.Message]) -> list[gt.Content]:
    names = {
        b.id: b.name
        for m in messages
        if m.role == "assistant"
        for b in m.content
        if isinstance(b, llm.ToolUse)
    }
    contents: list[gt.Content] = []
    for message in messages:
        if message.role == "user":
            # A user message's parts name the calls it answers, so they key it too.
            answered = tuple(
                [names.get(b.tool_use_id) for b in message.content if isinstance(b, llm.ToolResult)]
            )
            content = _CONTENTS.get(message, lambda m: _content(m, names), answered)
        else:
            content = _CONTENTS.get(message, lambda m: _content(m, names))
        if content is not None:
            contents.append(content)
    return contents


def _content(message: llm.Message, names: Mapping[str, str]) -> gt.Content | None:
    user = message.role == "user"
    parts = _user_parts(message, names) if user else _model_parts(message)
    if not parts:
        return None
    return gt.Content(role="user" if user else "model", parts=parts)


def _user_parts(message: llm.Message, names: Mapping[str, str]) -> list[gt.Part]:
    # Responses answer the calls of the previous turn, so they go first.
    parts: list[gt.Part] = []
    extra: list[gt.Part] = []
    for block in message.content:
        if isinstance(block, llm.ToolResult):
            key = "error" if block.is_error else "output"
            parts.append(
                gt.Part(
                    function_response=gt.FunctionResponse(
                        id=_wire_id(block.tool_use_id),
                        name=names.get(block.tool_use_id, "unknown"),
                        response={key: block.text},
                    )
                )
            )
            extra.extend(_image(p) for p in block.content if isinstance(p, llm.Image))
    for block in message.content:
        if isinstance(block, llm.Text) and block.text:
            extra.append(gt.Part(text=block.text))
        elif isinstance(block, llm.Image):
            extra.append(_image(block))
    return parts + extra


def _image(image: llm.Image) -> gt.Part:
    return gt.Part(
        inline_data=gt.Blob(mime_type=image.media_type, data=base64.b64decode(image.data))
    )


def _wire_id(call_id: str) -> str | None:
    return None if call_id.startswith(_SYNTHETIC) else call_id


def _model_parts(message: llm.Message) -> list[gt.Part]:
    parts: list[gt.Part] = []
    signature: bytes | None = None
    for block in message.content:
        if isinstance(block, llm.Opaque):
            if block.provider != PROVIDER:
                continue  # another provider's replay data means nothing here
            if block.kind == "signature":
                signature = base64.b64decode(str(block.data["thoughtSignature"]))
            else:
                parts.append(gt.Part.model_validate_json(json.dumps(block.data)))
            continue
        if isinstance(block, llm.Text):
            if block.text or signature is not None:
                parts.append(gt.Part(text=block.text, thought_signature=signature))
        elif isinstance(block, llm.ToolUse):
            call = gt.FunctionCall(id=_wire_id(block.id), name=block.name, args=dict(block.input))
            parts.append(gt.Part(function_call=call, thought_signature=signature))
        signature = None
    return parts


# -- responses -------------------------------------------------------------


@dataclass(slots=True)
class _Part:
    kind: str  # "text", "thought", "call" or "other"
    text: str = ""
    signature: str | None = None
    call: gt.FunctionCall | None = None
    raw: llm.JSONObject = field(default_factory=dict)


class StreamState:
    """Folds streamed chunks into one response: text pieces joined per part,
    each signature kept with the part it came on."""

    def __init__(self, call_prefix: str) -> None:
        self._prefix = call_prefix
        self._parts: list[_Part] = []
        self._finish: str | None = None
        self._blocked: str | None = None
        self._usage: gt.GenerateContentResponseUsageMetadata | None = None
        self._model = ""

    @property
    def finished(self) -> bool:
        return self._finish is not None or self._blocked is not None

    def add(self, chunk: gt.GenerateContentResponse) -> list[str]:
        """Take one chunk; return the visible text it added."""
        texts: list[str] = []
        if chunk.usage_metadata is not None:
            self._usage = chunk.usage_metadata
        if chunk.model_version:
            self._model = chunk.model_version
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            self._blocked = _name(feedback.block_reason)
        for candidate in (chunk.candidates or [])[:1]:
            content = candidate.content
            for part in (content.parts if content is not None else None) or []:
                text = self._add_part(part)
                if text:
                    texts.append(text)
            if candidate.finish_reason is not None:
                self._finish = _name(candidate.finish_reason)
        return texts

    def _add_part(self, part: gt.Part) -> str:
        signature = (
            base64.b64encode(part.thought_signature).decode() if part.thought_signature else None
        )
        last = self._parts[-1] if self._parts else None
        if part.function_call is not None:
            self._parts.append(_Part("call", signature=signature, call=part.function_call))
            return ""
        if part.text is not None:
            kind = "thought" if part.thought else "text"
            if last is not None and last.kind == kind and last.signature is None:
                last.text += part.text
                last.signature = signature
            else:
                self._parts.append(_Part(kind, part.text, signature))
            return "" if part.thought else part.text
        raw = cast(llm.JSONObject, part.model_dump(mode="json", by_alias=True, exclude_none=True))
        self._parts.append(_Part("other", raw=raw))
        return ""

    def response(self, requested_model: str) -> llm.Response:
        content: list[llm.Block] = []
        calls = 0
        for part in self._parts:
            if part.kind == "thought":
                # Not shown, but replayed: its signature may be what the API checks.
                data: llm.JSONObject = {"thought": True, "text": part.text}
                if part.signature is not None:
                    data["thoughtSignature"] = part.signature
                content.append(llm.Opaque(PROVIDER, "thought", data))
                continue
            if part.kind == "other":
                content.append(llm.Opaque(PROVIDER, "part", part.raw))
                continue
            if part.signature is not None:
                content.append(
                    llm.Opaque(PROVIDER, "signature", {"thoughtSignature": part.signature})
                )
            if part.kind == "text":
                if part.text or part.signature is not None:
                    content.append(llm.Text(part.text))
            elif part.call is not None:
                call_id = part.call.id or f"{self._prefix}{calls}"
                args = cast(llm.JSONObject, part.call.args or {})
                content.append(llm.ToolUse(call_id, part.call.name or "", args))
                calls += 1
        return llm.Response(
            content=tuple(content),
            stop_reason=stop_reason(self._finish, self._blocked, calls > 0),
            usage=usage_of(self._usage),
            model=self._model or requested_model,
        )


def _name(value: object) -> str:
    return str(getattr(value, "value", value))


def stop_reason(finish: str | None, blocked: str | None, has_calls: bool) -> str:
    """The neutral stop reason; anything not understood is passed on to fail closed."""
    if blocked is not None:
        return llm.REFUSAL
    if finish == "STOP":
        return llm.TOOL_USE if has_calls else llm.END_TURN
    if finish == "MAX_TOKENS":
        return llm.MAX_TOKENS
    if finish in _REFUSALS:
        return llm.REFUSAL
    return f"finish:{finish}"


def usage_of(meta: gt.GenerateContentResponseUsageMetadata | None) -> llm.Usage:
    """Neutral usage: input is the uncached prompt, output includes thinking."""
    if meta is None:
        return llm.Usage()
    prompt = (meta.prompt_token_count or 0) + (meta.tool_use_prompt_token_count or 0)
    cached = meta.cached_content_token_count or 0
    return llm.Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        cache_read_input_tokens=cached,
    )
