"""The Chat Completions adapter, over the official `openai` SDK with streaming.

One adapter for every OpenAI-compatible server: OpenAI itself, OpenRouter
(see `runner.llm.openrouter`), and local servers (vLLM, Ollama, llama.cpp,
LM Studio). A `Dialect` holds what differs between them. Retries, the idle
guard and the one-line errors follow the Anthropic adapter: the SDK's own
retries are off and the whole streamed response is retried.

A server other than api.openai.com is asked about the model before the first
request (`preflight`): one whose known context window is under
`MIN_CONTEXT_WINDOW`, or that says the model has no tool support, is refused
in one line instead of silently truncating the agent.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai
from openai.types.chat import ChatCompletionChunk

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
from runner.llm.memo import Memo
from runner.llm.provider import Completed, StreamEvent, TextDelta
from runner.llm.retry import RetryPolicy, parse_retry_after
from runner.llm.retrying import Transient, connection_failure, retried
from runner.text import one_line

__all__ = [
    "CHAT_COMPLETIONS",
    "MIN_CONTEXT_WINDOW",
    "ChatCompletionsProvider",
    "ChunkAssembly",
    "Dialect",
    "build_params",
    "is_local_url",
    "map_finish_reason",
    "preflight_problem",
]

log = logging.getLogger("neo.llm.chat_completions")

IDLE_TIMEOUT = 180.0
MIN_CONTEXT_WINDOW = 16_384
OPENAI_BASE_URL = "https://api.openai.com/v1"
# Sent as the key to a local server that needs none: the SDK insists on one.
PLACEHOLDER_KEY = "no-key-needed"
# 529: Anthropic's overloaded, which OpenRouter passes on.
_TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
# How each dialect says a prompt does not fit: OpenAI's code, vLLM's and
# OpenRouter's "maximum context length is N tokens", llama.cpp's
# exceed_context_size_error.
_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "exceed_context_size",
    "exceeds the available context size",
    "context window",
)
# Each message's chat messages, built once for all the turns that resend it.
_ENCODED: Memo[list[dict[str, Any]]] = Memo()
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)
_NEUTRAL_STOPS = frozenset(
    {
        llm.END_TURN,
        llm.STOP_SEQUENCE,
        llm.TOOL_USE,
        llm.MAX_TOKENS,
        llm.CONTEXT_WINDOW_EXCEEDED,
        llm.REFUSAL,
        llm.PAUSE_TURN,
    }
)


@dataclass(frozen=True, slots=True)
class Dialect:
    """What one OpenAI-compatible service needs beyond the common protocol."""

    name: str
    key_variable: str
    base_variable: str
    default_base_url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    # Merged into every request body (OpenRouter's usage accounting).
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    # The service streams `reasoning_details` to be sent back unchanged.
    replays_reasoning: bool = False
    # Ask a server other than OpenAI's about the model before the first call.
    preflight: bool = True


CHAT_COMPLETIONS = Dialect(
    name="chat-completions",
    key_variable="OPENAI_API_KEY",
    base_variable="OPENAI_BASE_URL",
    default_base_url=OPENAI_BASE_URL,
)


class ChatCompletionsProvider:
    def __init__(
        self,
        model: str,
        *,
        dialect: Dialect = CHAT_COMPLETIONS,
        api_key: str | None = None,
        base_url: str | None = None,
        idle_timeout: float = IDLE_TIMEOUT,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._model = model
        self._dialect = dialect
        self._endpoint = Endpoint(dialect.name, dialect.base_variable, dialect.key_variable)
        # A value no request could use is refused here, before any attempt.
        check_base_url(dialect.name, dialect.base_variable, base_url)
        check_api_key(dialect.name, dialect.key_variable, api_key)
        self._base_url = (base_url or dialect.default_base_url).rstrip("/")
        if not api_key:
            if not is_local_url(self._base_url):
                raise ConfigError(f"{dialect.key_variable} is not set (export your API key)")
            api_key = PLACEHOLDER_KEY
        self._api_key = api_key
        timeout = httpx2.Timeout(connect=CONNECT_TIMEOUT, read=idle_timeout, write=60.0, pool=60.0)
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=self._base_url,
            max_retries=0,
            timeout=timeout,
            default_headers=dict(dialect.headers),
            # The SDK's own client, on the process's one TLS context.
            http_client=openai.DefaultAsyncHttpxClient(timeout=timeout, verify=tls_context()),
        )
        self._official = urlsplit(self._base_url).hostname == "api.openai.com"
        self._checked = not dialect.preflight or self._official
        # Learnt by the preflight: output is capped so prompt and answer fit.
        self._window: int | None = None
        self._retry = retry or RetryPolicy()
        self._sleep = sleep

    @property
    def name(self) -> str:
        return self._dialect.name

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        await self._client.close()

    async def prepare(self) -> None:
        """Check the server before the run: raises ConfigError when it refuses the model."""
        if not self._checked:
            await self._preflight()
            self._checked = True

    async def stream(self, request: llm.Request) -> AsyncIterator[StreamEvent]:
        await self.prepare()
        params = build_params(
            self._model,
            request,
            dialect=self._dialect,
            official=self._official,
            window=self._window,
        )
        async for event in retried(
            lambda: self._attempt(params), self._retry, self._sleep, self.name
        ):
            yield event

    async def _attempt(self, params: Mapping[str, Any]) -> AsyncIterator[StreamEvent]:
        assembly = ChunkAssembly(self._dialect.name if self._dialect.replays_reasoning else None)
        try:
            stream = await self._client.chat.completions.create(**params)
            async with stream:
                async for chunk in stream:
                    delta = assembly.feed(chunk)
                    if delta:
                        yield TextDelta(delta)
        except openai.APIStatusError as error:
            raise self._classify_status(error) from None
        except (openai.APIConnectionError, httpx2.TransportError) as error:
            # A timeout among them: the idle guard's when reading, else a
            # connection that could not be made.
            raise connection_failure(self._endpoint, error) from None
        except Exception as error:
            # Data no server should send (not JSON, chunks of the wrong shape):
            # the same next time.
            raise self._malformed(error) from None
        if assembly.finish_reason is None:
            raise Transient(
                ProviderConnectionError(f"{self.name}: the response stream ended early")
            )
        try:
            response = assembly.finish()
        except Exception as error:
            raise self._malformed(error) from None
        yield Completed(response)

    def _malformed(self, error: Exception) -> ProviderConnectionError:
        log.debug("%s: malformed response", self.name, exc_info=error)
        return ProviderConnectionError(
            f"{self.name}: the response stream was malformed ({type(error).__name__})"
        )

    def _classify_status(self, error: openai.APIStatusError) -> ProviderError | Transient:
        log.debug("%s error body: %r", self.name, error.body)
        status = error.status_code
        code = error.code or error.type or "http_error"
        message = _redact(one_line(_api_message(error), 201) or "no error message", self._api_key)
        where = f"{code} {message}".lower()
        overflow = status == 413 or (
            status == 400 and any(marker in where for marker in _OVERFLOW_MARKERS)
        )
        hints = {
            401: f"check {self._dialect.key_variable}",
            403: f"check {self._dialect.key_variable} and its permissions",
            404: f"check the model name and {self._dialect.base_variable}",
        }
        failure = (ContextOverflow if overflow else ProviderHTTPError)(
            self.name,
            status,
            code,
            message,
            hint=hints.get(status) or overloaded_hint(status, code, message),
            raw_body=repr(error.body),
        )
        if status in _TRANSIENT_STATUS:
            return Transient(failure, parse_retry_after(error.response.headers))
        return failure

    async def _preflight(self) -> None:
        """Refuse a model the server says is too small for an agent, or toolless."""
        headers = {"authorization": f"Bearer {self._api_key}", **self._dialect.headers}
        root = self._base_url.removesuffix("/v1")
        timeout = httpx2.Timeout(30.0, connect=CONNECT_TIMEOUT)
        async with httpx2.AsyncClient(
            timeout=timeout, headers=headers, verify=tls_context()
        ) as http:
            try:
                models = await _get_json(
                    http, "GET", f"{self._base_url}/models", unreachable_raises=True
                )
            except (httpx2.ConnectError, httpx2.ConnectTimeout):
                # Unreachable: the first call retries, then says why in one line.
                return
            # Ollama's native API knows the window it actually runs with.
            show = await _get_json(http, "POST", f"{root}/api/show", {"model": self._model})
            running = None
            if isinstance(show, Mapping) and not _NUM_CTX.search(str(show.get("parameters"))):
                running = await _ollama_window(http, root, self._model)
        problem, window = preflight_problem(
            self._model, self._base_url, models, show, running=running
        )
        if problem:
            raise ConfigError(problem)
        self._window = window


async def _get_json(
    http: httpx2.AsyncClient,
    method: str,
    url: str,
    body: object = None,
    *,
    unreachable_raises: bool = False,
) -> Any:
    """The JSON a server answers, or None: a server that lacks the endpoint is not refused."""
    try:
        answer = await http.request(method, url, json=body)
        return answer.json() if answer.status_code == 200 else None
    except (httpx2.ConnectError, httpx2.ConnectTimeout):
        if unreachable_raises:
            raise
        return None
    except (httpx2.HTTPError, ValueError):
        return None


async def _ollama_window(http: httpx2.AsyncClient, root: str, model: str) -> int | None:
    """The window Ollama runs `model` with, when the model sets no `num_ctx`.

    The server decides it (`OLLAMA_CONTEXT_LENGTH`, else by the GPU's memory)
    and says it only for a loaded model, so the model is loaded first, as the
    run's first call would.
    """
    for attempt in range(2):
        loaded = await _get_json(http, "GET", f"{root}/api/ps")
        entries = loaded.get("models") if isinstance(loaded, Mapping) else None
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, Mapping) and model in (entry.get("name"), entry.get("model")):
                window = entry.get("context_length")
                return window if isinstance(window, int) and window > 0 else None
        if attempt == 0:
            # A request with no prompt only loads the model.
            await _get_json(http, "POST", f"{root}/api/generate", {"model": model})
    return None


def _api_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    try:
        return error.response.text or "no error message"
    except httpx2.ResponseNotRead:
        return "no error message"


def _redact(text: str, secret: str) -> str:
    # Some servers echo the key they were given; it must never reach a user.
    return text.replace(secret, "***") if len(secret) >= 8 else text


def is_local_url(url: str) -> bool:
    """Whether `url` names this machine or a private network (a self-hosted server)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith((".localhost", ".local")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        # A single-label name ("ollama", "vllm") is a container or LAN host.
        return bool(host) and "." not in host
    return address.is_loopback or address.is_private or address.is_link_local


# -- preflight --------------------------------------------------------------


def preflight_problem(
    model: str, base_url: str, models: Any, show: Any, *, running: int | None = None
) -> tuple[str | None, int | None]:
    """The line refusing `model`, or None, and its context window when known.

    `models` is the server's `GET /models` answer, `show` Ollama's `POST
    /api/show` answer (None where the server has no such endpoint). The
    window is read from vLLM's `max_model_len`, the `context_length` of
    OpenRouter and LM Studio listings, llama.cpp's `meta.n_ctx_train`, and
    Ollama's `num_ctx` parameter, or `running`, the window Ollama's `/api/ps`
    reports for the loaded model when it sets none. Tool support is judged from Ollama's
    `capabilities`, the one server that reports it; elsewhere a server that
    ignores tools shows in its answers, not upfront.
    """
    window: int | None = None
    entry = _model_entry(model, models)
    if entry is not None:
        meta = entry.get("meta")
        for value in (
            entry.get("max_model_len"),
            entry.get("context_length"),
            meta.get("n_ctx_train") if isinstance(meta, Mapping) else None,
        ):
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                window = value
                break
    advice = "raise the server's context length (vLLM --max-model-len)"
    if isinstance(show, Mapping):
        capabilities = show.get("capabilities")
        if isinstance(capabilities, list) and "tools" not in capabilities:
            return (
                f"{model} at {base_url} does not support tools (its capabilities: "
                f"{', '.join(map(str, capabilities)) or 'none'}); Neo needs a model with tool "
                "calling",
                None,
            )
        parameters = show.get("parameters")
        found = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
        if found:
            window = int(found.group(1))
        elif running is not None:
            window = running
        advice = "set num_ctx (PARAMETER num_ctx 32768 in a Modelfile, or OLLAMA_CONTEXT_LENGTH)"
    if window is not None and window < MIN_CONTEXT_WINDOW:
        return (
            f"{model} at {base_url} has a {window:,}-token context window; Neo needs at least "
            f"{MIN_CONTEXT_WINDOW:,}: {advice}",
            window,
        )
    return None, window


def _model_entry(model: str, models: Any) -> Mapping[str, Any] | None:
    data = models.get("data") if isinstance(models, Mapping) else None
    if not isinstance(data, list):
        return None
    for entry in data:
        if isinstance(entry, Mapping) and entry.get("id") == model:
            return entry
    return None


# -- requests --------------------------------------------------------------


def build_params(
    model: str,
    request: llm.Request,
    *,
    dialect: Dialect = CHAT_COMPLETIONS,
    official: bool = True,
    window: int | None = None,
) -> dict[str, Any]:
    """The `chat.completions.create` arguments for `request`.

    OpenAI takes `max_completion_tokens` (its reasoning models refuse
    `max_tokens`); other servers know only `max_tokens`. With a known window
    the output is capped at a quarter of it, so prompt and answer fit.
    """
    messages: list[dict[str, Any]] = []
    if request.system.text:
        messages.append({"role": "system", "content": request.system.text})
    for message in request.messages:
        messages.extend(_ENCODED.get(message, lambda m: _messages(m, dialect.name), dialect.name))
    max_tokens = request.max_tokens if window is None else min(request.max_tokens, window // 4)
    params: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens" if official else "max_tokens": max_tokens,
    }
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.input_schema),
                },
            }
            for t in request.tools
        ]
        params["tool_choice"] = request.tool_choice
    if dialect.extra_body:
        params["extra_body"] = dict(dialect.extra_body)
    return params


def _messages(message: llm.Message, provider: str) -> list[dict[str, Any]]:
    if message.role == "assistant":
        return [_assistant(message, provider)]
    # Tool results become `tool` messages, which must come straight after the
    # assistant's calls; anything else the user turn holds follows them.
    out: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, llm.ToolResult):
            text = block.text or "(no output)"
            if any(isinstance(part, llm.Image) for part in block.content):
                text += "\n(an image was returned; this API takes images only from the user)"
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": block.tool_use_id,
                    "content": f"Error: {text}" if block.is_error else text,
                }
            )
        elif isinstance(block, llm.Text) and block.text:
            rest.append({"type": "text", "text": block.text})
        elif isinstance(block, llm.Image):
            url = f"data:{block.media_type};base64,{block.data}"
            rest.append({"type": "image_url", "image_url": {"url": url}})
    if rest:
        only_text = all(part["type"] == "text" for part in rest)
        content: Any = "\n\n".join(p["text"] for p in rest) if only_text else rest
        out.append({"role": "user", "content": content})
    return out


def _assistant(message: llm.Message, provider: str) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    calls = [
        {
            "id": use.id,
            "type": "function",
            "function": {"name": use.name, "arguments": json.dumps(use.input)},
        }
        for use in message.tool_uses
    ]
    if calls:
        out["tool_calls"] = calls
    for block in message.content:
        if isinstance(block, llm.Opaque) and block.provider == provider:
            out.update(block.data)
    return out


# -- responses -------------------------------------------------------------


def map_finish_reason(reason: str | None, has_calls: bool) -> str:
    """`finish_reason` in the loop's vocabulary; anything unknown fails closed."""
    if reason == "tool_calls" or (reason == "stop" and has_calls):
        # Some local servers report "stop" for a reply made of tool calls.
        return llm.TOOL_USE
    if reason == "stop":
        return llm.END_TURN
    if reason == "length":
        return llm.MAX_TOKENS
    if reason == "content_filter":
        return llm.REFUSAL
    # Passed on so the loop's error names it, unless it would pass for ours.
    return reason if reason and reason not in _NEUTRAL_STOPS else "unexpected"


@dataclass(slots=True)
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChunkAssembly:
    """Builds one response from its streamed chunks.

    Tool calls arrive by `index`: the first delta of each carries its id and
    name, later ones pieces of its JSON arguments. Usage comes in a final
    chunk with no choices. `reasoning_details` pieces (OpenRouter) are merged
    by their own index and kept for replay as an opaque block of `provider`.
    """

    def __init__(self, provider: str | None = None) -> None:
        self._provider = provider
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _Call] = {}
        self._reasoning: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self._usage = llm.Usage()
        self._model = ""

    def feed(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk; return the assistant text it adds."""
        self._model = chunk.model or self._model
        if chunk.usage is not None:
            self._usage = _usage(chunk.usage)
        text = ""
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta.content:
                text += delta.content
            if delta.refusal:
                self._refusal.append(delta.refusal)
            for call in delta.tool_calls or ():
                into = self._calls.setdefault(call.index, _Call())
                into.id = call.id or into.id
                if call.function is not None:
                    into.name = call.function.name or into.name
                    if call.function.arguments:
                        into.arguments.append(call.function.arguments)
            if self._provider is not None:
                self._merge_reasoning(getattr(delta, "reasoning_details", None))
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
        if text:
            self._text.append(text)
        return text

    def _merge_reasoning(self, details: object) -> None:
        if not isinstance(details, list):
            return
        for position, piece in enumerate(details):
            if not isinstance(piece, Mapping):
                continue
            index = piece.get("index", position)
            into = self._reasoning.setdefault(index if isinstance(index, int) else position, {})
            for key, value in piece.items():
                if isinstance(value, str) and key in ("text", "summary", "data"):
                    into[key] = into.get(key, "") + value
                elif value is not None:
                    into[key] = value

    def finish(self) -> llm.Response:
        content: list[llm.Block] = []
        if self._reasoning and self._provider is not None:
            details: list[llm.JSON] = [self._reasoning[i] for i in sorted(self._reasoning)]
            content.append(
                llm.Opaque(self._provider, "reasoning_details", {"reasoning_details": details})
            )
        text = "".join(self._text) + "".join(self._refusal)
        if text:
            content.append(llm.Text(text))
        for index in sorted(self._calls):
            call = self._calls[index]
            content.append(llm.ToolUse(call.id, call.name, _arguments("".join(call.arguments))))
        has_calls = bool(self._calls)
        stop = llm.REFUSAL if self._refusal and not has_calls else None
        return llm.Response(
            content=tuple(content),
            stop_reason=stop or map_finish_reason(self.finish_reason, has_calls),
            usage=self._usage,
            model=self._model,
        )


def _arguments(raw: str) -> llm.JSONObject:
    """A call's JSON arguments; text that is not a JSON object is handed to the
    tool as is, so its input check tells the model what went wrong."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {"arguments": raw}
    return value if isinstance(value, dict) else {"arguments": raw}


def _usage(usage: Any) -> llm.Usage:
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    prompt = usage.prompt_tokens or 0
    # OpenRouter reports what the call was billed.
    cost = getattr(usage, "cost", None)
    billed = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    return llm.Usage(
        # Prompt tokens include the cached ones; ours count them apart.
        input_tokens=max(0, prompt - cached),
        output_tokens=usage.completion_tokens or 0,
        cache_read_input_tokens=cached,
        cost_usd=billed,
    )
