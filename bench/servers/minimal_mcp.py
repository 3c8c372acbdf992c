"""A stdio MCP server on the standard library alone: what a server costs at its least.

For bench/mcp_gateway.py, which sets the gateway's own start-up against the
interpreter's: this one starts in tens of milliseconds where a server built
on the SDK imports for a second or more. It speaks the handshake revision:
`initialize`, `tools/list` (one tool, `echo`) and `tools/call`; anything
else (the 2026 `server/discover` probe included) is "method not found".
"""

import json
import sys
from typing import Any

TOOL = {
    "name": "echo",
    "description": "Answer `text` as it came.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method, ident = request.get("method"), request.get("id")
    if ident is None:
        return None  # a notification
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "minimal", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        text = request["params"].get("arguments", {}).get("text", "")
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": method}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


for line in sys.stdin:
    if line.strip():
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
