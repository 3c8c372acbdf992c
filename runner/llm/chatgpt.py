"""The ChatGPT subscription as a provider: the Responses adapter, signed in.

ChatGPT's Codex backend speaks the Responses API under its own address. It
takes the signed-in account's access token as the bearer, its account id in
`chatgpt-account-id`, only stateless (`store: false`) streamed requests with
instructions, and refuses `max_output_tokens`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from runner.auth.endpoints import endpoints
from runner.auth.errors import LOGIN_HINT
from runner.auth.tokens import ChatGPTTokens
from runner.connection import Endpoint
from runner.llm.openai_responses import DEFAULT_MODEL, OpenAIResponsesProvider
from runner.llm.retry import RetryPolicy

__all__ = ["HEADERS", "chatgpt_provider"]

HEADERS = {"OpenAI-Beta": "responses=experimental", "originator": "neo"}
_HINTS = {401: LOGIN_HINT, 403: f"check your ChatGPT plan, or {LOGIN_HINT}"}


def chatgpt_provider(
    model: str | None,
    *,
    home: Path,
    env: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
) -> OpenAIResponsesProvider:
    """Raises NotSignedIn (a ConfigError) when no credentials are stored."""
    ends = endpoints(env)
    return OpenAIResponsesProvider(
        model or DEFAULT_MODEL,
        base_url=ends.base_url,
        auth=ChatGPTTokens(home, ends),
        default_headers=HEADERS,
        cap_output=False,
        hints=_HINTS,
        # Nothing a user sets moves ChatGPT's backend: the network is what to check.
        endpoint=Endpoint("openai", "", "OPENAI_API_KEY"),
        retry=retry,
    )
