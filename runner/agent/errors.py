"""The typed errors that end a turn; `kind` is the contract's `error.type`."""

from __future__ import annotations

from runner.errors import NeoError


class AgentError(NeoError):
    kind = "agent_error"


class MaxTurns(AgentError):
    kind = "max_turns"


class MaxCost(AgentError):
    """The next call would take the run past its cost limit: it was not made."""

    kind = "max_cost"


class MaxOutputTokens(AgentError):
    kind = "max_output_tokens"


class ContextWindowExceeded(AgentError):
    kind = "context_window_exceeded"


class UnexpectedStopReason(AgentError):
    kind = "unexpected_stop_reason"


class MissingToolCall(AgentError):
    kind = "missing_tool_call"
