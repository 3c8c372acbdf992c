"""runner.llm.limits: every model a run may name has its window, output and thinking."""

from __future__ import annotations

import genai_prices.data
import pytest

from runner.llm import anthropic, google, openai_responses
from runner.llm.limits import DEFAULT_LIMITS, MODEL_LIMITS, limits_for


@pytest.mark.parametrize(
    "model",
    [
        anthropic.DEFAULT_MODEL,
        openai_responses.DEFAULT_MODEL,
        google.DEFAULT_MODEL,
        # Anthropic's current models (Sonnet 4.5 retired on 2026-11-30).
        "claude-opus-5-5",
        "claude-haiku-5-5",
        "claude-fable-5-2",
    ],
)
def test_the_default_and_current_models_have_a_row(model: str) -> None:
    assert limits_for(model) is not DEFAULT_LIMITS


@pytest.mark.parametrize("model", ["claude-haiku-5-5", "claude-sonnet-5-5", "claude-opus-5"])
def test_the_claude_5_family_thinks_adaptively(model: str) -> None:
    assert limits_for(model).thinking == "adaptive"


@pytest.mark.parametrize(
    ("model", "prefix"),
    [
        ("claude-haiku-4-5-20251001", "claude-haiku-4"),
        ("anthropic/claude-sonnet-4.6", "claude-sonnet-4-6"),  # OpenRouter's name
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),  # the longest prefix wins
        ("GPT-5-chat-latest", "gpt-5-chat"),
        ("gpt-5.3-chat-latest", "gpt-5.3"),
        ("gpt-5-3-codex", "gpt-5.3-codex"),
    ],
)
def test_names_match_their_longest_prefix(model: str, prefix: str) -> None:
    assert limits_for(model) is MODEL_LIMITS[prefix]


def test_an_unknown_model_gets_the_conservative_default_without_vision() -> None:
    limits = limits_for("qwen3-coder:30b")

    assert limits is DEFAULT_LIMITS
    assert not limits.vision
    assert limits.thinking == "none"


def test_no_row_claims_a_larger_window_than_its_vendor_publishes() -> None:
    """genai-prices carries each vendor's published windows: a row above one
    would let a prompt past what the model takes."""
    published = {
        model.id: model.context_window
        for provider in genai_prices.data.providers
        if provider.id in ("anthropic", "openai", "google")
        for model in provider.models
        if model.context_window
        # Speech and realtime models: no run names them.
        and not any(kind in model.id for kind in ("tts", "realtime", "transcribe", "live"))
    }
    compared = 0
    for model, window in published.items():
        limits = limits_for(model)
        if limits is DEFAULT_LIMITS:
            continue
        compared += 1
        # Within rounding: genai-prices has Gemini's 1,048,576 as 1,000,000.
        assert limits.context_window <= window * 1.05, (model, limits.context_window, window)
    assert compared >= 20
