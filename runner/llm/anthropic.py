"""The Anthropic Messages API adapter, over the official SDK with streaming.

The SDK's own retries are off: this adapter retries the whole streamed
response, which the SDK cannot do once a stream has started, and it honours
`retry-after`. An idle stream is cut by the HTTP read timeout (nothing
received for `idle_timeout` seconds) and retried; there is no total timeout,
the caller's cancellation is the overall bound.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, cast

import anthropic
import httpx2
from anthropic.types import Message as APIMessage

from runner.connection import CONNECT_TIMEOUT, Endpoint, check_api_key, check_base_url
from runner.errors import ConfigError
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
from runner.llm.provider import Completed, StreamEvent, TextDelta
from runner.llm.retry import RetryPolicy, parse_retry_after
from runner.llm.retrying import Transient, connection_failure, retried

log = logging.getLogger("neo.llm.anthropic")

DEFAULT_MODEL = "claude-sonnet-5-5"
IDLE_TIMEOUT = 180.0
_CACHE = {"type": "ephemeral"}
# The one-hour cache: a write costs 2x the input rate (5 minutes': 1.25x), a
# read 0.1x either way. Entries of an hour must come before those of five
# minutes in the prompt, which the stable prefix always does.
_CACHE_1H = {"type": "ephemeral", "ttl": "1h"}
# Statuses worth another attempt; everything else (400, 401, 403, 404, 413,
# ...) fails the same way every time.
_TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
# Error types the API sends inside an already-started stream.
_TRANSIENT_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
# How the API says a request does not fit the window ("prompt is too long:
# 210000 tokens > 200000 maximum"); 413 is a request over its byte limit.
_TOO_LONG = "prompt is too long"
# Thinking tokens by effort, for models that take a budget (at least 1,024).
_THINKING_BUDGET: dict[str, int] = {"low": 4_000, "medium": 12_000, "high": 24_000}
_MIN_BUDGET = 1_024
_ANSWER_ROOM = 4_096
# The beta that lets a budget model (Claude 4 to 4.5) think between tool calls,
# not only before its first; adaptive models (4.6 and later) do so unasked.
# With it the budget spans the whole tool-using turn and may pass max_tokens.
INTERLEAVED_THINKING = "interleaved-thinking-2025-05-14"
_HINTS = {401: "check ANTHROPIC_API_KEY", 403: "check ANTHROPIC_API_KEY and its permissions"}
KEY_VARIABLE = "ANTHROPIC_API_KEY"
TOKEN_VARIABLE = "ANTHROPIC_AUTH_TOKEN"  # noqa: S105 - a variable's name
BASE_VARIABLE = "ANTHROPIC_BASE_URL"
ENDPOINT = Endpoint("anthropic", BASE_VARIABLE, KEY_VARIABLE)


class AnthropicProvider:
    name = "anthropic"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        idle_timeout: float = IDLE_TIMEOUT,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._model = model
        # The SDK reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL itself; a
        # value no request could use is refused here, before any attempt.
        check_base_url(self.name, BASE_VARIABLE, base_url or os.environ.get(BASE_VARIABLE))
        check_api_key(self.name, KEY_VARIABLE, api_key or os.environ.get(KEY_VARIABLE))
        check_api_key(self.name, TOKEN_VARIABLE, os.environ.get(TOKEN_VARIABLE))
        timeout = httpx2.Timeout(connect=CONNECT_TIMEOUT, read=idle_timeout, write=60.0, pool=60.0)
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=timeout,
            # The SDK's own client, on the process's one TLS context.
            http_client=anthropic.DefaultAsyncHttpxClient(timeout=timeout, verify=tls_context()),
        )
        self._retry = retry or RetryPolicy()
        self._sleep = sleep

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        await self._client.close()

    async def stream(self, request: llm.Request) -> AsyncIterator[StreamEvent]:
        params = build_params(self._model, request)
        async for event in retried(
            lambda: self._attempt(params), self._retry, self._sleep, self.name
        ):
            yield event

    async def _attempt(self, params: Mapping[str, Any]) -> AsyncIterator[StreamEvent]:
        try:
            async with self._client.messages.stream(**params) as stream:
                finished = False
                async for event in stream:
                    if event.type == "text":
                        yield TextDelta(event.text)
                    elif event.type == "message_stop":
                        finished = True
                if not finished:
                    raise Transient(
                        ProviderConnectionError("anthropic: the response stream ended early")
                    )
                message = await stream.get_final_message()
        except anthropic.APIStatusError as error:
            raise _classify_status(error) from None
        except Transient:
            raise
        except (anthropic.APIConnectionError, httpx2.TransportError) as error:
            # A timeout among them: the idle guard's when reading, else a
            # connection that could not be made.
            raise connection_failure(ENDPOINT, error) from None
        except TypeError as error:
            if "authentication" in str(error):
                raise ConfigError(
                    "anthropic: no API key (set ANTHROPIC_API_KEY, or ANTHROPIC_AUTH_TOKEN)"
                ) from None
            raise _malformed(error) from None
        except Exception as error:
            # The SDK fails in its own ways on a stream no API should send (data
            # that is not JSON, events of the wrong shape): the same next time.
            raise _malformed(error) from None
        try:
            response = parse_message(message)
        except Exception as error:
            raise _malformed(error) from None
        yield Completed(response)


def _malformed(error: Exception) -> ProviderConnectionError:
    log.debug("anthropic: malformed response", exc_info=error)
    return ProviderConnectionError(
        f"anthropic: the response stream was malformed ({type(error).__name__})"
    )


def _classify_status(error: anthropic.APIStatusError) -> ProviderError | Transient:
    log.debug("anthropic error body: %r", error.body)
    status = error.status_code
    error_type = error.type or "http_error"
    message = error.api_message or body_excerpt(error.response)
    overflow = status == 413 or (status == 400 and _TOO_LONG in message.lower())
    failure = (ContextOverflow if overflow else ProviderHTTPError)(
        "anthropic",
        status,
        error_type,
        message,
        hint=_HINTS.get(status) or overloaded_hint(status, error_type, message),
        raw_body=repr(error.body),
    )
    if status in _TRANSIENT_STATUS or error_type in _TRANSIENT_TYPES:
        return Transient(failure, parse_retry_after(error.response.headers))
    return failure


# -- requests --------------------------------------------------------------


def build_params(model: str, request: llm.Request) -> dict[str, Any]:
    """The Messages API parameters for `request`.

    Cache breakpoints sit after the base system segment, after the last
    system segment (together the stable prefix with the tools) and on the
    newest message, so each call reuses everything the previous one sent.
    `request.cache_ttl` moves the prefix's, or all of them, to the one-hour
    cache (see runner/llm/cache_ttl.py for when).
    """
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": [_message(m) for m in request.messages],
    }
    prefix = _CACHE if request.cache_ttl == "short" else _CACHE_1H
    segments = [s for s in request.system.segments if s]
    if segments:
        system: list[dict[str, Any]] = [{"type": "text", "text": s} for s in segments]
        system[0]["cache_control"] = prefix
        system[-1]["cache_control"] = prefix
        params["system"] = system
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
            for t in request.tools
        ]
        if request.tool_choice == "none":
            params["tool_choice"] = {"type": "none"}
    if params["messages"]:
        _mark_newest(params["messages"][-1], _CACHE_1H if request.cache_ttl == "long" else _CACHE)
    if request.effort is not None:
        params.update(_thinking(model, request.effort, request.max_tokens))
    return params


def _thinking(model: str, effort: llm.Effort, max_tokens: int) -> dict[str, Any]:
    """The thinking parameters `model` takes for `effort`; none when it cannot think."""
    mode = limits_for(model).thinking
    if mode == "adaptive":
        return {"thinking": {"type": "adaptive"}, "output_config": {"effort": effort}}
    if mode != "budget":
        return {}
    if _interleaves(model):
        return {
            "thinking": {"type": "enabled", "budget_tokens": _THINKING_BUDGET[effort]},
            "extra_headers": {"anthropic-beta": INTERLEAVED_THINKING},
        }
    # Thinking counts against max_tokens: leave room for the answer.
    budget = min(_THINKING_BUDGET[effort], max_tokens - _ANSWER_ROOM)
    if budget >= _MIN_BUDGET:
        return {"thinking": {"type": "enabled", "budget_tokens": budget}}
    return {}


def _interleaves(model: str) -> bool:
    """Whether budget model `model` can think between tool calls: Claude 4 can, 3.7 cannot."""
    return not model.rsplit("/", 1)[-1].lower().startswith("claude-3")


def _mark_newest(message: dict[str, Any], cache: dict[str, str]) -> None:
    for block in reversed(message["content"]):
        # Thinking blocks cannot carry a breakpoint.
        if block["type"] not in ("thinking", "redacted_thinking"):
            block["cache_control"] = cache
            return


def _message(message: llm.Message) -> dict[str, Any]:
    content = [b for b in (_block(block) for block in message.content) if b is not None]
    return {"role": message.role, "content": content}


def _block(block: llm.Block) -> dict[str, Any] | None:
    if isinstance(block, llm.Text):
        # The API rejects empty text blocks.
        return {"type": "text", "text": block.text} if block.text else None
    if isinstance(block, llm.Image):
        return _image(block)
    if isinstance(block, llm.ToolUse):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, llm.ToolResult):
        parts = [
            {"type": "text", "text": p.text} if isinstance(p, llm.Text) else _image(p)
            for p in block.content
            if not isinstance(p, llm.Text) or p.text
        ]
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id}
        if parts:
            result["content"] = parts
        if block.is_error:
            result["is_error"] = True
        return result
    # Replay data from another provider means nothing here.
    return dict(block.data) if block.provider == "anthropic" else None


def _image(image: llm.Image) -> dict[str, Any]:
    source = {"type": "base64", "media_type": image.media_type, "data": image.data}
    return {"type": "image", "source": source}


# -- responses -------------------------------------------------------------


def parse_message(message: APIMessage) -> llm.Response:
    content: list[llm.Block] = []
    for block in message.content:
        if block.type == "text":
            content.append(llm.Text(block.text))
        elif block.type == "tool_use":
            content.append(llm.ToolUse(block.id, block.name, cast(llm.JSONObject, block.input)))
        else:
            # Thinking (with its signature), redacted thinking and server
            # tool blocks go back to the API unchanged.
            data = cast(llm.JSONObject, block.model_dump(mode="json", exclude_none=True))
            content.append(llm.Opaque("anthropic", block.type, data))
    usage = message.usage
    created = usage.cache_creation
    return llm.Response(
        content=tuple(content),
        stop_reason=message.stop_reason,
        usage=llm.Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
            cache_read_input_tokens=usage.cache_read_input_tokens or 0,
            cache_creation_1h_input_tokens=(created.ephemeral_1h_input_tokens or 0)
            if created is not None
            else 0,
        ),
        model=message.model,
    )
