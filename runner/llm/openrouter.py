"""OpenRouter: the Chat Completions adapter with OpenRouter's address and habits.

Its attribution headers name Neo in OpenRouter's listings; `usage.include`
makes the final chunk report the billed cost, which then counts for
`cost_usd`; `reasoning_details` are sent back on the assistant message.
"""

from __future__ import annotations

from runner.llm.chat_completions import Dialect

__all__ = ["DEFAULT_MODEL", "OPENROUTER", "OPENROUTER_BASE_URL"]

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_MODEL = "anthropic/claude-sonnet-5.5"

OPENROUTER = Dialect(
    name="openrouter",
    key_variable="OPENROUTER_API_KEY",
    base_variable="OPENROUTER_BASE_URL",
    default_base_url=OPENROUTER_BASE_URL,
    # Attribution by name only: OpenRouter's HTTP-Referer wants a site URL,
    # and Neo has none of its own to give.
    headers={"X-Title": "Neo"},
    extra_body={"usage": {"include": True}},
    replays_reasoning=True,
    # A hosted service whose models all take tools and long prompts.
    preflight=False,
)
