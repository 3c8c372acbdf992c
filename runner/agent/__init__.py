"""The policy-free agent loop."""

from runner.agent.capping import DEFAULT_CAP_BYTES, cap_text
from runner.agent.errors import (
    AgentError,
    ContextWindowExceeded,
    MaxCost,
    MaxOutputTokens,
    MaxTurns,
    MissingToolCall,
    UnexpectedStopReason,
)
from runner.agent.events import (
    AssistantMessage,
    Compacted,
    Event,
    ProviderRetry,
    Steered,
    TextDelta,
    ToolFinished,
    ToolNotice,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from runner.agent.loop import Agent, Budget, EventSink, InteractiveCheck, Steering, TurnResult
from runner.agent.output_limit import Continuation, OutputLimit

__all__ = [
    "DEFAULT_CAP_BYTES",
    "Agent",
    "AgentError",
    "AssistantMessage",
    "Budget",
    "Compacted",
    "ContextWindowExceeded",
    "Continuation",
    "Event",
    "EventSink",
    "InteractiveCheck",
    "MaxCost",
    "MaxOutputTokens",
    "MaxTurns",
    "MissingToolCall",
    "OutputLimit",
    "ProviderRetry",
    "Steered",
    "Steering",
    "TextDelta",
    "ToolFinished",
    "ToolNotice",
    "ToolStarted",
    "TurnFinished",
    "TurnResult",
    "TurnStarted",
    "UnexpectedStopReason",
    "cap_text",
]
