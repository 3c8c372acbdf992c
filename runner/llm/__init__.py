"""Provider-neutral model types, the Provider protocol and the adapters."""

from runner.llm.errors import ProviderConnectionError, ProviderError, ProviderHTTPError
from runner.llm.provider import Completed, Provider, Retrying, StreamEvent, TextDelta
from runner.llm.registry import DEFAULT_PROVIDER, PROVIDERS, make_provider
from runner.llm.retry import RetryPolicy
from runner.llm.types import (
    JSON,
    Block,
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
    "DEFAULT_PROVIDER",
    "JSON",
    "PROVIDERS",
    "Block",
    "Completed",
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
    "make_provider",
]
