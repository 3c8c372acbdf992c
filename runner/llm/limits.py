"""How much each model reads and writes: its context window and output ceiling.

One table for every provider. Names are matched by prefix, longest first,
so dated snapshots and aliases share a row; an unknown model gets the
conservative default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DEFAULT_LIMITS", "MODEL_LIMITS", "ModelLimits", "Thinking", "limits_for"]

# How a model is asked to think before it answers: not at all, within a
# token budget the caller sets, or adaptively at an effort level it is given.
Thinking = Literal["none", "budget", "adaptive"]


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """Tokens: the whole prompt plus output (`context_window`), and output alone."""

    context_window: int
    max_output: int
    thinking: Thinking = "none"
    # Whether it reads images: every model in the table does; an unknown one
    # (a local model) is taken not to, and gets a note in their place.
    vision: bool = True


MODEL_LIMITS: dict[str, ModelLimits] = {
    # Claude 4.6 and later think adaptively (Opus 4.7 and later only so);
    # 3.7 to 4.5 within a budget; earlier models not at all.
    "claude-fable-5": ModelLimits(200_000, 64_000, "adaptive"),
    "claude-opus-5": ModelLimits(200_000, 64_000, "adaptive"),
    "claude-sonnet-5": ModelLimits(200_000, 64_000, "adaptive"),
    "claude-haiku-5": ModelLimits(200_000, 64_000, "adaptive"),
    "claude-opus-4-6": ModelLimits(200_000, 128_000, "adaptive"),
    "claude-opus-4-7": ModelLimits(200_000, 128_000, "adaptive"),
    "claude-opus-4-8": ModelLimits(200_000, 128_000, "adaptive"),
    "claude-sonnet-4-6": ModelLimits(200_000, 64_000, "adaptive"),
    "claude-opus-4-1": ModelLimits(200_000, 32_000, "budget"),
    "claude-opus-4-0": ModelLimits(200_000, 32_000, "budget"),
    "claude-opus-4": ModelLimits(200_000, 64_000, "budget"),
    "claude-sonnet-4": ModelLimits(200_000, 64_000, "budget"),
    "claude-haiku-4": ModelLimits(200_000, 64_000, "budget"),
    "claude-3-7-sonnet": ModelLimits(200_000, 64_000, "budget"),
    "claude-3-5": ModelLimits(200_000, 8_192),
    # OpenAI's reasoning models take an effort level.
    "gpt-5": ModelLimits(400_000, 128_000, "adaptive"),
    "gpt-5-chat": ModelLimits(128_000, 16_384),
    # GPT-5.3 is ChatGPT's Instant model (a 128k window); its Codex is not.
    "gpt-5.3": ModelLimits(128_000, 16_384),
    "gpt-5.3-codex": ModelLimits(400_000, 128_000, "adaptive"),
    "gpt-4.1": ModelLimits(1_047_576, 32_768),
    "gpt-4o": ModelLimits(128_000, 16_384),
    "o3": ModelLimits(200_000, 100_000, "adaptive"),
    "o4-mini": ModelLimits(200_000, 100_000, "adaptive"),
    # Gemini 2.5 thinks within a budget; Gemini 3 at a thinking level.
    "gemini-2.5": ModelLimits(1_048_576, 65_536, "budget"),
    "gemini-2.5-pro": ModelLimits(1_048_576, 65_536, "budget"),
    "gemini-2.5-flash": ModelLimits(1_048_576, 65_536, "budget"),
    "gemini-2.5-flash-lite": ModelLimits(1_048_576, 65_536, "budget"),
    "gemini-3": ModelLimits(1_048_576, 65_536, "adaptive"),
    "gemini-3-pro": ModelLimits(1_048_576, 65_536, "adaptive"),
    "gemini-3-flash": ModelLimits(1_048_576, 65_536, "adaptive"),
}
DEFAULT_LIMITS = ModelLimits(128_000, 16_384, vision=False)
_BY_LENGTH = sorted(MODEL_LIMITS, key=len, reverse=True)


def limits_for(model: str) -> ModelLimits:
    """`model`'s limits, or `DEFAULT_LIMITS` when the table does not know it."""
    # OpenRouter names carry the vendor: "anthropic/claude-sonnet-4.6".
    name = model.rsplit("/", 1)[-1].lower().replace(".", "-")
    prefix = next((p for p in _BY_LENGTH if name.startswith(p.replace(".", "-"))), None)
    return DEFAULT_LIMITS if prefix is None else MODEL_LIMITS[prefix]
