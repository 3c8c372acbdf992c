"""Messages to and from plain JSON values, for sessions and transcripts.

The shape is Neo's own, not any provider's, so a session saved with one
provider reads back the same whatever adapter later replays it. Decoding
validates everything and copies the JSON payloads of tool inputs and opaque
blocks, so the returned message shares nothing with the input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from runner.llm.types import (
    JSON,
    Block,
    Image,
    JSONObject,
    Message,
    Opaque,
    Role,
    Text,
    ToolResult,
    ToolUse,
    Usage,
)

_USAGE_FIELDS: Final = tuple(Usage().as_dict())
_BLOCK_TYPES: Final = frozenset({"text", "image", "tool_use", "tool_result", "opaque"})


class CodecError(ValueError):
    """Data that does not describe a message; the message says where and why."""


def message_to_json(message: Message) -> JSONObject:
    """`message` as a JSON object; `usage` appears only when the message has one."""
    out: JSONObject = {
        "role": message.role,
        "content": [
            _block_to_json(block, f"content[{i}]") for i, block in enumerate(message.content)
        ],
    }
    if message.usage is not None:
        out["usage"] = usage_to_json(message.usage)
    return out


def message_from_json(data: Mapping[str, object]) -> Message:
    """The message `data` describes; raise `CodecError` if it is malformed.

    Keys this codec does not know are ignored, so a container may add its own
    (a session line carries `"type": "message"`).
    """
    # The annotation is a promise callers may break: they pass parsed JSON.
    untrusted: object = data
    if not isinstance(untrusted, Mapping):
        raise CodecError(f"message must be an object, got {_kind(untrusted)}")
    role = _role(data.get("role"))
    content = data.get("content")
    if not isinstance(content, list):
        raise CodecError(f"message content must be an array, got {_kind(content)}")
    blocks = tuple(_block_from_json(item, f"content[{i}]") for i, item in enumerate(content))
    raw_usage = data.get("usage")
    usage = None if raw_usage is None else usage_from_json(raw_usage)
    return Message(role=role, content=blocks, usage=usage)


def _role(value: object) -> Role:
    if value == "user":
        return "user"
    if value == "assistant":
        return "assistant"
    raise CodecError(f"message role must be 'user' or 'assistant', got {_show(value)}")


def usage_to_json(usage: Usage) -> JSONObject:
    return dict(usage.as_dict())


def usage_from_json(data: object, where: str = "usage") -> Usage:
    """Token counts from an object; a missing count is zero."""
    if not isinstance(data, Mapping):
        raise CodecError(f"{where} must be an object, got {_kind(data)}")
    counts: dict[str, int] = {}
    for name in _USAGE_FIELDS:
        value = data.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CodecError(f"{where}.{name} must be a non-negative integer, got {_show(value)}")
        counts[name] = value
    return Usage(**counts)


def _block_to_json(block: Block, where: str) -> JSONObject:
    match block:
        case Text(text=text):
            return {"type": "text", "text": text}
        case Image(media_type=media_type, data=data):
            return {"type": "image", "media_type": media_type, "data": data}
        case ToolUse(id=id_, name=name, input=input_, freeform=freeform):
            out: JSONObject = {
                "type": "tool_use",
                "id": id_,
                "name": name,
                "input": _json_object(input_, f"{where}.input"),
            }
            if freeform:
                out["freeform"] = True
            return out
        case ToolResult(tool_use_id=tool_use_id, content=content, is_error=is_error):
            return {
                "type": "tool_result",
                "tool_use_id": tool_use_id,
                "content": [
                    _block_to_json(part, f"{where}.content[{i}]") for i, part in enumerate(content)
                ],
                "is_error": is_error,
            }
        case Opaque(provider=provider, kind=kind, data=data):
            return {
                "type": "opaque",
                "provider": provider,
                "kind": kind,
                "data": _json_object(data, f"{where}.data"),
            }
    raise CodecError(f"{where}: not a content block: {type(block).__name__}")


def _block_from_json(item: object, where: str) -> Block:
    if not isinstance(item, Mapping):
        raise CodecError(f"{where} must be an object, got {_kind(item)}")
    kind = item.get("type")
    if kind not in _BLOCK_TYPES:
        raise CodecError(f"{where}: unknown block type {_show(kind)}")
    where = f"{where} ({kind})"
    if kind == "text":
        return Text(text=_str(item, "text", where))
    if kind == "image":
        return Image(media_type=_str(item, "media_type", where), data=_str(item, "data", where))
    if kind == "tool_use":
        return ToolUse(
            id=_str(item, "id", where),
            name=_str(item, "name", where),
            input=_json_object(item.get("input"), f"{where}.input"),
            freeform=item.get("freeform") is True,
        )
    if kind == "tool_result":
        return _tool_result_from_json(item, where)
    if kind == "opaque":
        return Opaque(
            provider=_str(item, "provider", where),
            kind=_str(item, "kind", where),
            data=_json_object(item.get("data"), f"{where}.data"),
        )
    raise AssertionError(kind)  # unreachable: _BLOCK_TYPES lists the kinds above


def _tool_result_from_json(item: Mapping[str, object], where: str) -> ToolResult:
    content = item.get("content")
    if not isinstance(content, list):
        raise CodecError(f"{where}.content must be an array, got {_kind(content)}")
    parts: list[Text | Image] = []
    for i, raw in enumerate(content):
        part = _block_from_json(raw, f"{where}.content[{i}]")
        if not isinstance(part, Text | Image):
            raise CodecError(f"{where}.content[{i}] must be a text or image block")
        parts.append(part)
    is_error = item.get("is_error", False)
    if not isinstance(is_error, bool):
        raise CodecError(f"{where}.is_error must be a boolean, got {_kind(is_error)}")
    return ToolResult(
        tool_use_id=_str(item, "tool_use_id", where), content=tuple(parts), is_error=is_error
    )


def _str(item: Mapping[str, object], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise CodecError(f"{where}.{key} must be a string, got {_kind(value)}")
    return value


def _json_object(value: object, where: str) -> JSONObject:
    if not isinstance(value, dict):
        raise CodecError(f"{where} must be an object, got {_kind(value)}")
    return {key: _json(item, f"{where}[{key!r}]") for key, item in _items(value, where)}


def _json(value: object, where: str) -> JSON:
    """A deep copy of `value`, which must be made of JSON types only."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list):
        return [_json(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {key: _json(item, f"{where}[{key!r}]") for key, item in _items(value, where)}
    raise CodecError(f"{where}: not a JSON value: {type(value).__name__}")


def _items(value: dict[object, object], where: str) -> list[tuple[str, object]]:
    items: list[tuple[str, object]] = []
    for key, item in value.items():
        if not isinstance(key, str):
            raise CodecError(f"{where}: object key {key!r} is not a string")
        items.append((key, item))
    return items


def _kind(value: object) -> str:
    """The JSON name of `value`'s type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _show(value: object, limit: int = 40) -> str:
    """A short, single-line rendering of `value` for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
