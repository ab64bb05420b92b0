"""A tiny MCP server on stdio, built on ``stdio_loop.run``. One tool: ``echo``."""

import sys

from stdio_loop import run

from mcp_sansio import Request, ServerConnection

TOOLS = [{
    "name": "echo",
    "description": "Returns its text argument.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}]


def on_event(conn, event):
    print(f"server: {event!r}", file=sys.stderr)  # stdout carries protocol messages only
    if not isinstance(event, Request):
        return
    if event.method == "tools/list":
        conn.send_response(event.request_id, {"tools": TOOLS})
    elif event.method == "tools/call":
        params = event.params or {}
        if (params.get("_meta") or {}).get("progressToken") is not None:
            conn.send_progress(event.request_id, 1, total=1, message="done")
        text = (params.get("arguments") or {}).get("text", "")
        conn.send_response(event.request_id, {"content": [{"type": "text", "text": text}]})
    else:
        conn.send_error(event.request_id, -32601, f"Method not found: {event.method}")


if __name__ == "__main__":
    server = ServerConnection(
        info={"name": "echo-server", "version": "1.0"}, capabilities={"tools": {}}
    )
    run(server, sys.stdin.fileno(), sys.stdout.fileno(), on_event)
