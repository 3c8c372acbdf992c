"""The compactor jobs and `neo run` use: it keeps the prompt within the model's window.

Clear old tool results first, summarise near the end of the window
(docs/architecture.md, "Compaction").
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.compact.base import Compaction, PromptState
from runner.compact.clearing import clear_tool_results
from runner.compact.requests import compacted_head, request_indexes, user_requests
from runner.compact.split import safe_tail_start
from runner.compact.summary import SUMMARY_SYSTEM, render_for_summary
from runner.compact.tokens import estimate_messages
from runner.llm.errors import ProviderError
from runner.llm.limits import ModelLimits, limits_for
from runner.llm.provider import Completed, Provider
from runner.llm.types import Message, Request, SystemPrompt, Text

__all__ = ["CompactionPolicy", "WindowCompactor"]

_SUMMARY_TOKENS = 8_000
# A rendering for the summariser: about three characters a token, to be safe.
_RENDER_CHARS_PER_TOKEN = 3


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """When the compactor clears and what it keeps; shares are of the model's window."""

    clear_at: float = 0.5  # clear old tool results past this share
    keep_results: int = 4  # the latest tool results kept whole
    keep_tools: tuple[str, ...] = ("workflow",)  # tools whose results are never cleared
    tail_share: float = 0.1  # the latest turns a summary keeps as they are
    # The part of the window the earlier requests may take in a summary's head.
    requests_share: float = 0.1
    summary_tokens: int = _SUMMARY_TOKENS

    def __post_init__(self) -> None:
        if not 0.0 < self.clear_at < 1.0:
            raise ValueError("clear_at must be between 0 and 1")


class WindowCompactor:
    """Clears, then summarises, so that each request fits `limits` (default: the model's)."""

    def __init__(
        self,
        provider: Provider,
        *,
        limits: ModelLimits | None = None,
        policy: CompactionPolicy = CompactionPolicy(),
    ) -> None:
        self._provider = provider
        self.limits = limits or limits_for(provider.model)
        self._clear_at = policy.clear_at
        self._keep_results = policy.keep_results
        self._keep_tools = policy.keep_tools
        self._tail_share = policy.tail_share
        self._requests_share = policy.requests_share
        self._summary_tokens = policy.summary_tokens

    def summarise_at(self, max_tokens: int) -> int:
        """The prompt size past which the conversation is summarised."""
        window = self.limits.context_window
        margin = max(2_000, window // 20)
        return max(window // 4, window - min(max_tokens, self.limits.max_output) - margin)

    async def compact(self, state: PromptState) -> Compaction | None:
        window = self.limits.context_window
        limit = self.summarise_at(state.max_tokens)
        if state.tokens < self._clear_at * window and not state.overflowed:
            return None
        # Whatever is not the conversation itself: the system prompt and tools.
        overhead = max(0, state.tokens - estimate_messages(state.messages))
        cleared, count = clear_tool_results(
            state.messages, keep=self._keep_results, keep_tools=self._keep_tools
        )
        after = overhead + estimate_messages(cleared)
        if not state.overflowed and after < limit:
            if count == 0:
                return None
            return Compaction("cleared", cleared, state.tokens, after)
        return await self._summarise(state, cleared, overhead)

    async def _summarise(
        self, state: PromptState, cleared: tuple[Message, ...], overhead: int
    ) -> Compaction:
        messages = state.messages
        window = self.limits.context_window
        tail_budget = int(window * self._tail_share)
        # The kept tail follows the latest request: the head holds every request.
        latest = max(request_indexes(messages), default=0)
        start = safe_tail_start(cleared, tail_budget, after=latest)
        dropped = messages[:start]
        render_budget = (window - self._summary_tokens - 4_000) * _RENDER_CHARS_PER_TOKEN
        document = render_for_summary(dropped, max(render_budget, 10_000))
        request = Request(
            messages=(Message("user", (Text(document),)),),
            system=SystemPrompt((SUMMARY_SYSTEM,)),
            tools=(),
            max_tokens=self._summary_tokens,
        )
        response = None
        async for event in self._provider.stream(request):
            if isinstance(event, Completed):
                response = event.response
        if response is None or not response.text.strip():
            raise _NoSummary(f"{self._provider.name}: the summary call returned no text")
        head = compacted_head(
            user_requests(dropped),
            response.text,
            start,
            cap_tokens=int(window * self._requests_share),
        )
        rewritten = (head, *cleared[start:])
        after = overhead + estimate_messages(rewritten)
        return Compaction("summarised", rewritten, state.tokens, after, response.usage)


class _NoSummary(ProviderError):
    kind = "context_window_exceeded"
