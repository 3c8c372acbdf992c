"""Provider-neutral model types and the Provider protocol.

Adapters load their SDKs, which are slow to import: reach them through
`runner.llm.registry.make_provider`, not from here.
"""

from runner.llm.errors import ProviderConnectionError, ProviderError, ProviderHTTPError
from runner.llm.provider import Completed, Provider, Retrying, StreamEvent, TextDelta
from runner.llm.retry import RetryPolicy
from runner.llm.types import (
    EFFORTS,
    FREEFORM_INPUT,
    JSON,
    Block,
    Effort,
    Grammar,
    Image,
    JSONObject,
    Message,
    Opaque,
    Request,
    Response,
    SystemPrompt,
    Text,
    ToolResult,
    ToolSpec,
    ToolUse,
    Usage,
)

__all__ = [
    "EFFORTS",
    "FREEFORM_INPUT",
    "JSON",
    "Block",
    "Completed",
    "Effort",
    "Grammar",
    "Image",
    "JSONObject",
    "Message",
    "Opaque",
    "Provider",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderHTTPError",
    "Request",
    "Response",
    "RetryPolicy",
    "Retrying",
    "StreamEvent",
    "SystemPrompt",
    "Text",
    "TextDelta",
    "ToolResult",
    "ToolSpec",
    "ToolUse",
    "Usage",
]
