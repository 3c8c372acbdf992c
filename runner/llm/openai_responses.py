"""The OpenAI Responses API adapter, over the official SDK with streaming.

Stateless: every request carries the whole transcript (`store=False`), and
reasoning items come back encrypted and are replayed as opaque blocks. Retries
and the idle guard work as in the Anthropic adapter: the SDK's own retries are
off, the whole streamed response is retried, `retry-after` is honoured, and a
stream silent for `idle_timeout` seconds is cut and tried once more.

Besides an API key, a `RequestAuth` can sign each request: expiring
credentials (a ChatGPT sign-in) that are renewed once when refused.

GPT-5-class models take a tool with a grammar (apply_patch) as a custom tool,
as they were trained to call it: the model writes the text itself, a
`custom_tool_call` comes back, and it is replayed with its
`custom_tool_call_output` as it came. Other models get the JSON schema.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, cast

import httpx2
import openai
from openai.types.responses import Response as APIResponse

from runner.connection import CONNECT_TIMEOUT, Endpoint, check_api_key, check_base_url
from runner.errors import ConfigError, NeoError
from runner.llm import types as llm
from runner.llm.errors import (
    ContextOverflow,
    ProviderConnectionError,
    ProviderError,
    ProviderHTTPError,
    body_excerpt,
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
    "OpenAIResponsesProvider",
    "RequestAuth",
    "build_params",
    "cache_key",
    "parse_response",
    "stop_reason",
    "takes_custom_tools",
]

log = logging.getLogger("neo.llm.openai")

PROVIDER = "openai"
DEFAULT_MODEL = "gpt-5"
IDLE_TIMEOUT = 180.0
_TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
# Codes sent in a `response.failed` or `error` event that another attempt may fix.
_TRANSIENT_CODES = frozenset({"server_error", "rate_limit_exceeded", "server_is_overloaded"})
# A 429 that no wait will fix: the account is out of credit.
_NO_QUOTA = "insufficient_quota"
_OVERFLOW = "context_length_exceeded"
_HINTS = {401: "check OPENAI_API_KEY", 403: "check OPENAI_API_KEY and its permissions"}
ENDPOINT = Endpoint(PROVIDER, "OPENAI_BASE_URL", "OPENAI_API_KEY")
# The API quotes a masked form of a rejected key ("sk-ab***yz"); even that
# stays out of what a user sees.
_KEYLIKE = re.compile(r"\b(sk|sess)-[\w*\-]+")
# Each message's input items, encoded once for all the turns that resend it.
_ITEMS: Memo[list[dict[str, Any]]] = Memo()
# A ChatGPT sign-in's tokens are JWTs, should a message ever quote one.
_JWTLIKE = re.compile(r"\beyJ[\w-]*\.[\w-]+\.[\w-]*")
# The GPT-5 family (gpt-5, gpt-5-codex, gpt-5.1, ...; a provider prefix may come
# first) takes custom tools with grammars; its chat snapshots do not.
_CUSTOM_TOOLS = re.compile(r"(?:^|/)gpt-5(?!\S*-chat)", re.IGNORECASE)


class RequestAuth(Protocol):
    """Headers that authorize one request; `renew` after the last ones were refused."""

    async def headers(self, *, renew: bool = False) -> Mapping[str, str]: ...


class OpenAIResponsesProvider:
    name = PROVIDER

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        auth: RequestAuth | None = None,
        default_headers: Mapping[str, str] | None = None,
        cap_output: bool = True,
        hints: Mapping[int, str] | None = None,
        endpoint: Endpoint = ENDPOINT,
        idle_timeout: float = IDLE_TIMEOUT,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._model = model
        self._auth = auth
        # Some backends refuse `max_output_tokens`; the request then goes without.
        self._cap_output = cap_output
        self._hints = _HINTS if hints is None else hints
        self._endpoint = endpoint
        # A value no request could use is refused here, before any attempt.
        check_base_url(PROVIDER, endpoint.base_variable, base_url or _env(endpoint.base_variable))
        if auth is None:
            check_api_key(PROVIDER, endpoint.key_variable, api_key or _env(endpoint.key_variable))
        try:
            # The SDK reads OPENAI_API_KEY and OPENAI_BASE_URL itself; with
            # `auth` the key is a placeholder its headers replace per request.
            timeout = httpx2.Timeout(
                connect=CONNECT_TIMEOUT, read=idle_timeout, write=60.0, pool=60.0
            )
            self._client = openai.AsyncOpenAI(
                api_key="unused" if auth is not None else api_key,
                base_url=base_url,
                default_headers=dict(default_headers) if default_headers else None,
                max_retries=0,
                timeout=timeout,
                # The SDK's own client, on the process's one TLS context.
                http_client=openai.DefaultAsyncHttpxClient(timeout=timeout, verify=tls_context()),
            )
        except openai.OpenAIError:
            raise ConfigError("OPENAI_API_KEY is not set (export your OpenAI API key)") from None
        self._retry = retry or RetryPolicy()
        self._sleep = sleep

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        await self._client.close()

    async def stream(self, request: llm.Request) -> AsyncIterator[StreamEvent]:
        params = build_params(self._model, request, cap_output=self._cap_output)
        async for event in retried(
            lambda: self._attempt(params), self._retry, self._sleep, self.name
        ):
            yield event

    async def _attempt(self, params: Mapping[str, Any]) -> AsyncIterator[StreamEvent]:
        final: APIResponse | None = None
        try:
            stream = await self._open(params)
            async with stream:
                async for event in stream:
                    if event.type == "response.output_text.delta":
                        yield TextDelta(event.delta)
                    elif event.type in ("response.completed", "response.incomplete"):
                        final = event.response
                    elif event.type == "response.failed":
                        error = event.response.error
                        code = error.code if error is not None else "server_error"
                        raise _stream_failure(code, error.message if error else "response failed")
                    elif event.type == "error":
                        raise _stream_failure(event.code or "server_error", event.message)
            if final is None:
                raise Transient(ProviderConnectionError("openai: the response stream ended early"))
        except openai.APIStatusError as error:
            raise _classify_status(error, self._hints) from None
        except (Transient, NeoError):
            # NeoError: also what `auth` raises when it cannot sign the request.
            raise
        except (openai.APIConnectionError, httpx2.TransportError) as error:
            # A timeout among them: the idle guard's when reading, else a
            # connection that could not be made.
            raise connection_failure(self._endpoint, error) from None
        except Exception as error:
            # Data that is not JSON, events of the wrong shape: the same next time.
            raise _malformed(error) from None
        try:
            response = parse_response(final)
        except Exception as error:
            raise _malformed(error) from None
        yield Completed(response)

    async def _open(self, params: Mapping[str, Any]) -> Any:
        if self._auth is None:
            return await self._client.responses.create(**params, stream=True)
        headers = await self._auth.headers()
        try:
            return await self._client.responses.create(
                **params, stream=True, extra_headers=dict(headers)
            )
        except openai.AuthenticationError:
            # Refused before it expired (revoked, or rotated elsewhere): renew once.
            headers = await self._auth.headers(renew=True)
        return await self._client.responses.create(
            **params, stream=True, extra_headers=dict(headers)
        )


def _malformed(error: Exception) -> ProviderConnectionError:
    log.debug("openai: malformed response", exc_info=error)
    return ProviderConnectionError(
        f"openai: the response stream was malformed ({type(error).__name__})"
    )


def _stream_failure(code: str, message: str) -> ProviderError | Transient:
    """An error reported inside a stream that had already answered 200."""
    kind = ContextOverflow if code == _OVERFLOW else ProviderHTTPError
    failure = kind(PROVIDER, 200, code, _redact(message), hint=overloaded_hint(200, code, message))
    return Transient(failure) if code in _TRANSIENT_CODES else failure


def _classify_status(
    error: openai.APIStatusError, hints: Mapping[int, str] = _HINTS
) -> ProviderError | Transient:
    log.debug("openai error body: %r", error.body)
    status = error.status_code
    body = error.body if isinstance(error.body, Mapping) else {}
    error_type = error.code or error.type or "http_error"
    # The ChatGPT backend answers some refusals as `{"detail": "..."}`.
    raw_message = body.get("message", body.get("detail"))
    message = raw_message if isinstance(raw_message, str) else body_excerpt(error.response)
    overflow = error.code == _OVERFLOW or status == 413
    failure = (ContextOverflow if overflow else ProviderHTTPError)(
        PROVIDER,
        status,
        error_type,
        _redact(message),
        hint=hints.get(status) or overloaded_hint(status, error_type, message),
        raw_body=repr(error.body),
    )
    if status in _TRANSIENT_STATUS and error.code != _NO_QUOTA:
        return Transient(failure, parse_retry_after(error.response.headers))
    return failure


def _redact(message: str) -> str:
    return " ".join(_JWTLIKE.sub("eyJ…", _KEYLIKE.sub(r"\1-…", message)).split())


# -- requests --------------------------------------------------------------


def build_params(model: str, request: llm.Request, *, cap_output: bool = True) -> dict[str, Any]:
    """The Responses API parameters for `request` (all but `stream`)."""
    params: dict[str, Any] = {
        "model": model,
        "input": _input(request.messages),
        "store": False,
    }
    if cap_output:
        params["max_output_tokens"] = request.max_tokens
    if request.system.text:
        params["instructions"] = request.system.text
    if request.tools:
        custom = takes_custom_tools(model)
        params["tools"] = [_tool(t, custom=custom) for t in request.tools]
        params["tool_choice"] = request.tool_choice
    if limits_for(model).thinking != "none":
        # Without the encrypted reasoning a stateless transcript loses it
        # between turns; the API refuses the include on models that cannot think.
        params["include"] = ["reasoning.encrypted_content"]
        if request.effort is not None:
            params["reasoning"] = {"effort": request.effort}
    key = cache_key(request)
    if key is not None:
        params["prompt_cache_key"] = key
    return params


def takes_custom_tools(model: str) -> bool:
    """Whether `model` is offered tools with a grammar as custom (free-form) tools."""
    return _CUSTOM_TOOLS.search(model) is not None


def _tool(spec: llm.ToolSpec, *, custom: bool) -> dict[str, Any]:
    if custom and spec.grammar is not None:
        grammar = spec.grammar
        return {
            "type": "custom",
            "name": spec.name,
            "description": spec.description,
            "format": {
                "type": "grammar",
                "syntax": grammar.syntax,
                "definition": grammar.definition,
            },
        }
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": dict(spec.input_schema),
        # Our schemas are not written for strict mode's rules.
        "strict": False,
    }


def cache_key(request: llm.Request) -> str | None:
    """A prompt-cache routing key that stays the same for a whole session.

    Requests carry no session id, so it is derived from what a session never
    changes: its instructions and first message. Requests that share it land
    on the same cache, which is where their common prefix lives.
    """
    if not request.messages:
        return None
    head = json.dumps(
        [request.system.text, _input(request.messages[:1])], sort_keys=True, separators=(",", ":")
    )
    return "neo-" + hashlib.sha256(head.encode()).hexdigest()[:32]


def _input(messages: Sequence[llm.Message]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    # Calls made free-form are answered in kind; a user message is encoded
    # alone (and remembered), so its outputs are retyped here.
    custom: set[str] = set()
    for message in messages:
        encoded = _ITEMS.get(message, _items)
        if message.role == "assistant":
            custom.update(i["call_id"] for i in encoded if i["type"] == "custom_tool_call")
        elif custom:
            encoded = [_answered_in_kind(item, custom) for item in encoded]
        items.extend(encoded)
    return items


def _answered_in_kind(item: dict[str, Any], custom: set[str]) -> dict[str, Any]:
    if item["type"] == "function_call_output" and item["call_id"] in custom:
        return {**item, "type": "custom_tool_call_output"}
    return item


def _items(message: llm.Message) -> list[dict[str, Any]]:
    return _user_items(message) if message.role == "user" else _assistant_items(message)


def _user_items(message: llm.Message) -> list[dict[str, Any]]:
    # Tool outputs answer the calls of the previous turn, so they go first.
    items: list[dict[str, Any]] = [
        {"type": "function_call_output", "call_id": b.tool_use_id, "output": _output(b)}
        for b in message.content
        if isinstance(b, llm.ToolResult)
    ]
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, llm.Text) and block.text:
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, llm.Image):
            parts.append(_image(block))
    if parts:
        items.append({"type": "message", "role": "user", "content": parts})
    return items


def _output(result: llm.ToolResult) -> str | list[dict[str, Any]]:
    if all(isinstance(part, llm.Text) for part in result.content):
        return result.text
    return [
        {"type": "input_text", "text": p.text} if isinstance(p, llm.Text) else _image(p)
        for p in result.content
    ]


def _image(image: llm.Image) -> dict[str, Any]:
    return {"type": "input_image", "image_url": f"data:{image.media_type};base64,{image.data}"}


def _assistant_items(message: llm.Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []

    def flush() -> None:
        if texts:
            items.append({"type": "message", "role": "assistant", "content": list(texts)})
            texts.clear()

    for block in message.content:
        if isinstance(block, llm.Text):
            if block.text:
                texts.append({"type": "output_text", "text": block.text})
            continue
        flush()
        if isinstance(block, llm.ToolUse) and block.freeform:
            text = block.input.get(llm.FREEFORM_INPUT)
            items.append(
                {
                    "type": "custom_tool_call",
                    "call_id": block.id,
                    "name": block.name,
                    "input": text if isinstance(text, str) else "",
                }
            )
        elif isinstance(block, llm.ToolUse):
            items.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": json.dumps(block.input),
                }
            )
        elif isinstance(block, llm.Opaque) and block.provider == PROVIDER:
            items.append(dict(block.data))
        # Another provider's replay data means nothing here.
    flush()
    return items


# -- responses -------------------------------------------------------------


def parse_response(response: APIResponse) -> llm.Response:
    content: list[llm.Block] = []
    for item in response.output:
        if item.type == "message":
            for part in item.content:
                text = part.text if part.type == "output_text" else part.refusal
                content.append(llm.Text(text))
        elif item.type == "function_call":
            content.append(llm.ToolUse(item.call_id, item.name, _arguments(item.arguments)))
        elif item.type == "custom_tool_call":
            freeform: llm.JSONObject = {llm.FREEFORM_INPUT: item.input}
            content.append(llm.ToolUse(item.call_id, item.name, freeform, freeform=True))
        else:
            # Reasoning (with its encrypted content) goes back unchanged.
            data = cast(llm.JSONObject, item.model_dump(mode="json", exclude_none=True))
            data.pop("status", None)
            content.append(llm.Opaque(PROVIDER, item.type, data))
    usage = response.usage
    cached = written = 0
    if usage is not None and usage.input_tokens_details is not None:
        cached = usage.input_tokens_details.cached_tokens or 0
        written = getattr(usage.input_tokens_details, "cache_write_tokens", 0) or 0
    return llm.Response(
        content=tuple(content),
        stop_reason=stop_reason(response),
        # Neutral input_tokens are the uncached ones, as Anthropic counts them.
        usage=llm.Usage(
            input_tokens=max(0, (usage.input_tokens if usage else 0) - cached - written),
            output_tokens=usage.output_tokens if usage else 0,
            cache_creation_input_tokens=written,
            cache_read_input_tokens=cached,
        ),
        model=response.model,
    )


def _arguments(raw: str) -> llm.JSONObject:
    # A call whose arguments are not a JSON object still needs its output;
    # the tool reports the bad input rather than the stream failing.
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {"_raw_arguments": raw}
    return cast(llm.JSONObject, value) if isinstance(value, dict) else {"_raw_arguments": raw}


def stop_reason(response: APIResponse) -> str:
    """The neutral stop reason; anything not understood is passed on to fail closed."""
    refused = any(
        part.type == "refusal"
        for item in response.output
        if item.type == "message"
        for part in item.content
    )
    if response.status == "completed":
        if any(item.type in ("function_call", "custom_tool_call") for item in response.output):
            return llm.TOOL_USE
        return llm.REFUSAL if refused else llm.END_TURN
    if response.status == "incomplete":
        details = response.incomplete_details
        reason = details.reason if details is not None else None
        if reason == "max_output_tokens":
            return llm.MAX_TOKENS
        if reason == "content_filter":
            return llm.REFUSAL
        return f"incomplete:{reason}"
    return f"status:{response.status}"


def _env(variable: str) -> str | None:
    return os.environ.get(variable) if variable else None
