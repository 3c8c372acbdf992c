"""One driver per adapter for the shared contract suite (test_contract.py).

A driver scripts its own wire-level fake with neutral steps (a reply of text
and tool calls ending for a neutral reason, an HTTP error, a stall mid-stream),
reads back what the fake received (tool results by id, the tools offered), and
builds the real adapter pointed at that fake. The suite then asks the same
things of every adapter.
"""

from __future__ import annotations

import abc
import contextlib
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from runner.llm import anthropic, google
from runner.llm.anthropic import AnthropicProvider
from runner.llm.chat_completions import CHAT_COMPLETIONS, ChatCompletionsProvider, Dialect
from runner.llm.google import GoogleProvider
from runner.llm.openai_responses import OpenAIResponsesProvider, takes_custom_tools
from runner.llm.openrouter import OPENROUTER
from runner.llm.provider import Provider
from runner.llm.retry import RetryPolicy
from runner.llm.types import END_TURN, MAX_TOKENS, REFUSAL, TOOL_USE
from tests.fakes import anthropic_api as anth
from tests.fakes import chat_completions as chat
from tests.fakes import gemini_api as gem
from tests.fakes import openai_responses as oai

__all__ = ["DRIVERS", "UNKNOWN", "Call", "Driver", "Sleep", "Tokens", "serving"]

# A stop reason no adapter knows: each says it in its own way, and the loop
# must fail closed on it.
UNKNOWN = "unknown"

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Call:
    id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Tokens:
    """Usage in the neutral sense: uncached input, output, and cache reads."""

    input: int
    output: int
    cached: int = 0


class Driver(Protocol):
    """What the contract suite needs of one adapter and its fake."""

    name: str
    # The variable a bad key's error line must point at.
    key_variable: str
    # The adapter's models for each tool family: Claude's set, then GPT-5's.
    claude_model: str
    patch_model: str

    @property
    def api_key(self) -> str: ...

    @property
    def requests(self) -> int: ...

    @property
    def pending(self) -> int: ...

    @property
    def hangups(self) -> int: ...

    def env(self) -> dict[str, str]:
        """The variables make_provider reads to reach the fake."""
        ...

    def provider(
        self, model: str, *, retry: RetryPolicy, sleep: Sleep, api_key: str | None = None
    ) -> Provider: ...

    def reply(
        self,
        text: str = "",
        calls: Sequence[Call] = (),
        stop: str = END_TURN,
        tokens: Tokens | None = None,
    ) -> object:
        """A scripted answer; `stop` is END_TURN, TOOL_USE, MAX_TOKENS, REFUSAL or UNKNOWN."""
        ...

    def error(self, status: int, retry_after: float | None = None) -> object:
        """A transient HTTP failure (429 or 5xx), with `retry-after` when given."""
        ...

    def stall(self, seconds: float) -> object:
        """An answer that streams some text, then goes silent for `seconds`."""
        ...

    def cut(self) -> object:
        """An answer whose connection drops after some of it was streamed."""
        ...

    def script(self, *items: object) -> None: ...

    def overflow(self) -> None:
        """Make the fake refuse any prompt as too long, as its API words it."""
        ...

    def tool_results(self, n: int) -> list[tuple[str, str]]:
        """(call id, output) of every tool result the n-th request carried, in order."""
        ...

    def offered(self, n: int) -> set[str]:
        """The tool names the n-th request offered."""
        ...


# How each wire says the neutral stop reasons.
_ANTHROPIC_STOPS: Mapping[str, str] = {
    END_TURN: "end_turn",
    TOOL_USE: "tool_use",
    MAX_TOKENS: "max_tokens",
    REFUSAL: "refusal",
    UNKNOWN: "model_went_fishing",
}

_CHAT_FINISH: Mapping[str, str] = {
    END_TURN: "auto",
    TOOL_USE: "auto",
    MAX_TOKENS: "length",
    REFUSAL: "content_filter",
    UNKNOWN: "function_call",
}

_GEMINI_FINISH: Mapping[str, str] = {
    END_TURN: "STOP",
    TOOL_USE: "STOP",
    MAX_TOKENS: "MAX_TOKENS",
    REFUSAL: "SAFETY",
    UNKNOWN: "MALFORMED_FUNCTION_CALL",
}


def _text(content: object) -> str:
    """The text of a result given as a string or as a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


# What a stalled answer streams before it goes silent.
_SLOW = "The first words of a slow answer, then nothing."


@dataclass(frozen=True, slots=True)
class _Answer:
    """A scripted answer in the neutral terms of `Driver.reply`."""

    text: str
    calls: Sequence[Call]
    stop: str
    tokens: Tokens | None


class _Base(abc.ABC):
    """The driver half that is the same for every fake; each subclass says its
    adapter and how its wire spells a reply, an error and a stall."""

    _fake: Any
    _adapter: ClassVar[Callable[..., Provider]]

    def __init__(self, fake: Any) -> None:
        self._fake = fake

    @property
    def api_key(self) -> str:
        return str(self._fake.api_key)

    @property
    def pending(self) -> int:
        return int(self._fake.pending)

    @property
    def hangups(self) -> int:
        return int(self._fake.hangups.count)

    @property
    def requests(self) -> int:
        return len(self._posted())

    def env(self) -> dict[str, str]:
        return dict(self._fake.env)

    def provider(
        self, model: str, *, retry: RetryPolicy, sleep: Sleep, api_key: str | None = None
    ) -> Provider:
        return self._adapter(
            model,
            api_key=api_key or self.api_key,
            base_url=self._fake.base_url,
            retry=retry,
            sleep=sleep,
            **self._options(),
        )

    def reply(
        self,
        text: str = "",
        calls: Sequence[Call] = (),
        stop: str = END_TURN,
        tokens: Tokens | None = None,
    ) -> object:
        return self._reply(_Answer(text, calls, stop, tokens))

    def error(self, status: int, retry_after: float | None = None) -> object:
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        return self._error(status, headers)

    def stall(self, seconds: float) -> object:
        return self._stall(seconds, self._reply(_Answer(_SLOW, (), END_TURN, None)))

    def script(self, *items: object) -> None:
        self._fake.script(*items)

    def overflow(self) -> None:
        self._fake.context_window = 5

    def offered(self, n: int) -> set[str]:
        return {tool["name"] for tool in self._body(n).get("tools", [])}

    def _options(self) -> dict[str, Any]:
        """Keyword arguments the adapter takes beyond the common ones."""
        return {}

    @abc.abstractmethod
    def _reply(self, answer: _Answer) -> object:
        """The fake's scripted reply for `answer`."""

    @abc.abstractmethod
    def _error(self, status: int, headers: Mapping[str, str]) -> object:
        """The fake's error reply for `status` (429 or 5xx), sending `headers`."""

    @abc.abstractmethod
    def _stall(self, seconds: float, reply: Any) -> object:
        """`reply` streamed in part, then `seconds` of silence, then the rest."""

    def _body(self, n: int) -> dict[str, Any]:
        body = self._posted()[n].body
        assert isinstance(body, dict)
        return body

    def _posted(self) -> list[Any]:
        return list(self._fake.requests)


class AnthropicDriver(_Base):
    name = "anthropic"
    key_variable = "ANTHROPIC_API_KEY"
    claude_model = patch_model = anthropic.DEFAULT_MODEL
    _adapter = AnthropicProvider

    def _reply(self, answer: _Answer) -> object:
        content = [anth.text(answer.text)] if answer.text else []
        content += [anth.tool_use(c.id, c.name, c.input) for c in answer.calls]
        usage = None
        if (tokens := answer.tokens) is not None:
            usage = anth.Usage(tokens.input, tokens.output, cache_read_input_tokens=tokens.cached)
        return anth.Reply(content, stop_reason=_ANTHROPIC_STOPS[answer.stop], usage=usage)

    def _error(self, status: int, headers: Mapping[str, str]) -> object:
        kind = "rate_limit_error" if status == 429 else "api_error"
        return anth.ErrorReply(status, kind, "Slow down, please.", headers)

    def _stall(self, seconds: float, reply: Any) -> object:
        return anth.Stall(seconds, after_events=5, reply=reply)

    def cut(self) -> object:
        return anth.BrokenStream(after_events=5)

    def tool_results(self, n: int) -> list[tuple[str, str]]:
        return [
            (block["tool_use_id"], _text(block.get("content")))
            for message in self._body(n)["messages"]
            if message["role"] == "user" and isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]


class OpenAIDriver(_Base):
    name = "openai"
    key_variable = "OPENAI_API_KEY"
    claude_model = "gpt-4.1"
    patch_model = "gpt-5"
    _adapter = OpenAIResponsesProvider

    def _reply(self, answer: _Answer) -> object:
        text, stop = answer.text, answer.stop
        output = [oai.refusal(text) if stop == REFUSAL else oai.message(text)] if text else []
        output += [self._call(c) for c in answer.calls]
        usage = None
        if (tokens := answer.tokens) is not None:
            # The API counts cached tokens into input_tokens.
            prompt = tokens.input + tokens.cached
            usage = oai.Usage(prompt, tokens.output, cached_tokens=tokens.cached)
        if stop == MAX_TOKENS:
            return oai.Reply(output, "incomplete", "max_output_tokens", usage=usage)
        if stop == UNKNOWN:
            return oai.Reply(output, "cancelled", usage=usage)
        return oai.Reply(output, usage=usage)

    def _call(self, call: Call) -> dict[str, Any]:
        # GPT-5 is offered apply_patch as a custom tool, and writes the patch free-form.
        if call.name == "apply_patch" and takes_custom_tools(self.patch_model):
            return oai.custom_tool_call(call.id, call.name, call.input["input"])
        return oai.function_call(call.id, call.name, call.input)

    def _error(self, status: int, headers: Mapping[str, str]) -> object:
        if status == 429:
            return oai.ErrorReply(
                429, "rate_limit_exceeded", "Rate limit reached.", "tokens", headers
            )
        return oai.ErrorReply(status, None, "The server had an error.", "server_error", headers)

    def _stall(self, seconds: float, reply: Any) -> object:
        return oai.Stall(seconds, after_events=5, reply=reply)

    def cut(self) -> object:
        # This fake drops only before the headers; a stream that ends before
        # `response.completed` is the mid-stream failure the SDK sees.
        started = {"type": "response.created", "sequence_number": 0}
        started["response"] = {"id": "resp_cut", "status": "in_progress", "output": []}
        return oai.RawStream(f"event: response.created\ndata: {json.dumps(started)}\n\n")

    def tool_results(self, n: int) -> list[tuple[str, str]]:
        return [
            (item["call_id"], _text(item.get("output")))
            for item in self._body(n)["input"]
            if item.get("type") in ("function_call_output", "custom_tool_call_output")
        ]


class ChatDriver(_Base):
    name = "chat-completions"
    key_variable = "OPENAI_API_KEY"
    claude_model = "gpt-4.1"
    patch_model = "gpt-5"
    _adapter = ChatCompletionsProvider
    _dialect: Dialect = CHAT_COMPLETIONS

    def env(self) -> dict[str, str]:
        return {"OPENAI_BASE_URL": self._fake.base_url, "OPENAI_API_KEY": self.api_key}

    def _options(self) -> dict[str, Any]:
        return {"dialect": self._dialect}

    def _reply(self, answer: _Answer) -> object:
        # prompt_tokens include the cached ones; None: the fake estimates.
        tokens = answer.tokens
        return chat.Reply(
            text=answer.text,
            tool_calls=[chat.call(c.id, c.name, c.input) for c in answer.calls],
            finish_reason=_CHAT_FINISH[answer.stop],
            prompt_tokens=None if tokens is None else tokens.input + tokens.cached,
            completion_tokens=None if tokens is None else tokens.output,
            cached_tokens=None if tokens is None else tokens.cached,
        )

    def _error(self, status: int, headers: Mapping[str, str]) -> object:
        if status == 429:
            return chat.ErrorReply(
                429, "Rate limit reached.", "requests", "rate_limit_exceeded", headers
            )
        return chat.ErrorReply(status, "The server had an error.", "server_error", None, headers)

    def _stall(self, seconds: float, reply: Any) -> object:
        return chat.Stall(seconds, after=3, reply=reply)

    def cut(self) -> object:
        return chat.BrokenStream(after=3)

    def _posted(self) -> list[Any]:
        return list(self._fake.completions)

    def tool_results(self, n: int) -> list[tuple[str, str]]:
        return [
            (message["tool_call_id"], _text(message.get("content")))
            for message in self._body(n)["messages"]
            if message["role"] == "tool"
        ]

    def offered(self, n: int) -> set[str]:
        return {tool["function"]["name"] for tool in self._body(n).get("tools", [])}


class OpenRouterDriver(ChatDriver):
    name = "openrouter"
    key_variable = "OPENROUTER_API_KEY"
    claude_model = "anthropic/claude-sonnet-5.5"
    patch_model = "openai/gpt-5"
    _dialect = OPENROUTER

    def env(self) -> dict[str, str]:
        return {"OPENROUTER_BASE_URL": self._fake.base_url, "OPENROUTER_API_KEY": self.api_key}


class GoogleDriver(_Base):
    name = "google"
    key_variable = "GEMINI_API_KEY"
    claude_model = patch_model = google.DEFAULT_MODEL
    _adapter = GoogleProvider

    def _reply(self, answer: _Answer) -> object:
        parts = [gem.text(answer.text)] if answer.text else []
        parts += [gem.call(c.name, c.input, id=c.id) for c in answer.calls]
        usage = gem.Usage()
        if (tokens := answer.tokens) is not None:
            # promptTokenCount includes the cached ones.
            usage = gem.Usage(tokens.input + tokens.cached, tokens.output, cached=tokens.cached)
        return gem.Reply(parts, _GEMINI_FINISH[answer.stop], usage)

    def _error(self, status: int, headers: Mapping[str, str]) -> object:
        if status == 429:
            return gem.ErrorReply(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", headers=headers)
        return gem.ErrorReply(
            status, "INTERNAL", "An internal error has occurred.", headers=headers
        )

    def _stall(self, seconds: float, reply: Any) -> object:
        return gem.Stall(seconds, after_chunks=1, reply=reply)

    def cut(self) -> object:
        return gem.Cut(after_chunks=1)

    def tool_results(self, n: int) -> list[tuple[str, str]]:
        results: list[tuple[str, str]] = []
        for content in self._body(n)["contents"]:
            for part in content.get("parts") or []:
                answer = part.get("functionResponse")
                if answer is not None:
                    response = answer.get("response") or {}
                    text = response.get("output", response.get("error", ""))
                    results.append((answer.get("id", ""), str(text)))
        return results

    def offered(self, n: int) -> set[str]:
        return {
            declaration["name"]
            for tool in self._body(n).get("tools", [])
            for declaration in tool.get("functionDeclarations", [])
        }


_Fake = Callable[[], contextlib.AbstractContextManager[Any]]
_FAKES: dict[str, tuple[_Fake, Callable[[Any], Driver]]] = {
    "anthropic": (anth.FakeAnthropicAPI, AnthropicDriver),
    "openai": (oai.FakeOpenAIResponses, OpenAIDriver),
    "chat-completions": (chat.FakeChatCompletions, ChatDriver),
    "openrouter": (chat.FakeChatCompletions, OpenRouterDriver),
    "google": (gem.FakeGemini, GoogleDriver),
}

DRIVERS = tuple(_FAKES)


@contextlib.contextmanager
def serving(name: str) -> Iterator[Driver]:
    """The named adapter's driver, its fake serving for the duration."""
    make_fake, driver = _FAKES[name]
    with make_fake() as fake:
        yield driver(fake)
