"""Deep copies of the values that cross the loop's boundary.

A small recursive walk over JSON-like values rather than `copy.deepcopy` or a
JSON round trip: it allocates only what the payload holds and cannot fail.
Strings, numbers and frozen blocks are immutable and shared as they are.
"""

from __future__ import annotations

from typing import cast

from runner.llm.types import JSON, Block, JSONObject, Message, Opaque, Response, ToolUse


def copy_json(value: JSON) -> JSON:
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def copy_object(value: JSONObject) -> JSONObject:
    return cast(JSONObject, copy_json(value))


def copy_block(block: Block) -> Block:
    if isinstance(block, ToolUse):
        return ToolUse(block.id, block.name, copy_object(block.input), block.freeform)
    if isinstance(block, Opaque):
        return Opaque(block.provider, block.kind, copy_object(block.data))
    # Text, Image and ToolResult hold only strings and tuples of frozen blocks.
    return block


def copy_message(message: Message) -> Message:
    if not any(isinstance(block, ToolUse | Opaque) for block in message.content):
        return message
    return Message(message.role, tuple(copy_block(b) for b in message.content), message.usage)


def copy_response(response: Response) -> Response:
    if not any(isinstance(block, ToolUse | Opaque) for block in response.content):
        return response
    content = tuple(copy_block(b) for b in response.content)
    return Response(content, response.stop_reason, response.usage, response.model)
