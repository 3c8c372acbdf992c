"""Provider-neutral messages, requests and responses.

Everything here is a frozen value. The only mutable payloads are the JSON-like
values inside `ToolUse.input` and `Opaque.data`; whoever hands them across a
boundary copies them (see `runner.agent.copying`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"
JSONObject: TypeAlias = dict[str, JSON]

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Image:
    """An image given inline: its media type and base64 data."""

    media_type: str
    data: str


# The one input property of a tool that takes free text (a `Grammar` tool).
FREEFORM_INPUT = "input"


@dataclass(frozen=True, slots=True)
class ToolUse:
    id: str
    name: str
    input: JSONObject
    # Called with free text, not JSON arguments (an OpenAI custom tool): the
    # text is `input[FREEFORM_INPUT]`, and the call is replayed as it came.
    freeform: bool = False


@dataclass(frozen=True, slots=True)
class ToolResult:
    tool_use_id: str
    content: tuple[Text | Image, ...]
    is_error: bool = False

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, Text))


@dataclass(frozen=True, slots=True)
class Opaque:
    """A block only its provider understands, replayed verbatim.

    Thinking blocks with their signatures are the common case: the provider
    needs them back unchanged on the next request and nothing else reads them.
    """

    provider: str
    kind: str
    data: JSONObject


Block: TypeAlias = Text | Image | ToolUse | ToolResult | Opaque


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    # What these tokens cost in US dollars: billed by the provider where it
    # says so (OpenRouter), else priced per call (runner/llm/pricing.py);
    # None when unknown. Not part of `as_dict`, the token counts' contract.
    cost_usd: float | None = None
    # Of `cache_creation_input_tokens`, those written to a one-hour cache
    # (Anthropic bills them at twice the input rate, five minutes' at 1.25).
    cache_creation_1h_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None
            if self.cost_usd is None and other.cost_usd is None
            else (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        )
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            cost,
            self.cache_creation_1h_input_tokens + other.cache_creation_1h_input_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


# Weakly referable, so an encoding remembered for a message (llm/memo.py) goes with it.
@dataclass(frozen=True, slots=True, weakref_slot=True)
class Message:
    role: Role
    content: tuple[Block, ...]
    # What producing this message cost; set on assistant messages only.
    usage: Usage | None = None

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, Text))

    @property
    def tool_uses(self) -> tuple[ToolUse, ...]:
        return tuple(block for block in self.content if isinstance(block, ToolUse))


@dataclass(frozen=True, slots=True)
class Grammar:
    """The exact form of a tool's free-text input: a Lark grammar or a regular expression."""

    syntax: Literal["lark", "regex"]
    definition: str


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about a tool: its name, purpose and input schema.

    With a `grammar`, the input schema is one string property, FREEFORM_INPUT,
    in that grammar; a provider whose model takes free-form tools offers it as
    one (the model writes the text itself, not JSON), others as the schema.
    """

    name: str
    description: str
    input_schema: Mapping[str, JSON]
    grammar: Grammar | None = None


@dataclass(frozen=True, slots=True)
class SystemPrompt:
    """The system prompt as ordered segments, most stable first.

    Providers that cache prompt prefixes put their breakpoints between
    segments, so a change to a later segment keeps the earlier ones cached.
    """

    segments: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return "\n\n".join(segment for segment in self.segments if segment)


# How long the provider keeps what a request writes to its prompt cache, where
# it lets the caller choose (Anthropic: five minutes, or an hour at a dearer
# write): "short" its default; "long_prefix" the longest for the stable prefix
# (tools and system prompt) only; "long" the longest for the whole prompt.
CacheTTL = Literal["short", "long_prefix", "long"]

# How hard the model thinks before answering; None: no thinking asked for.
Effort = Literal["low", "medium", "high"]
EFFORTS: tuple[Effort, ...] = ("low", "medium", "high")


@dataclass(frozen=True, slots=True)
class Request:
    messages: Sequence[Message]
    system: SystemPrompt = field(default_factory=SystemPrompt)
    tools: Sequence[ToolSpec] = ()
    max_tokens: int = 32_000
    # Adapters of models that cannot think leave it out.
    effort: Effort | None = None
    # "none": the tools are described but may not be called (a last word).
    tool_choice: Literal["auto", "none"] = "auto"
    cache_ttl: CacheTTL = "short"


# Stop reasons as the loop understands them. Adapters translate their
# provider's vocabulary into these; anything else passes through unchanged
# so the loop can fail closed on it.
END_TURN = "end_turn"
STOP_SEQUENCE = "stop_sequence"
TOOL_USE = "tool_use"
MAX_TOKENS = "max_tokens"
CONTEXT_WINDOW_EXCEEDED = "model_context_window_exceeded"
REFUSAL = "refusal"
PAUSE_TURN = "pause_turn"


@dataclass(frozen=True, slots=True)
class Response:
    content: tuple[Block, ...]
    stop_reason: str | None
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, Text))

    @property
    def tool_uses(self) -> tuple[ToolUse, ...]:
        return tuple(block for block in self.content if isinstance(block, ToolUse))
