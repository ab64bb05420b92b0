"""Test a server with mcp_sansio.testing: a sweep and random sessions, in process.

Run it: ``python docs/examples/testing_peer.py`` (needs hypothesis and jsonschema:
``pip install 'mcp-sansio[testing]'``). It prints two reports; a correct server has no
findings.
"""

from mcp_sansio import CancelRequested, ErrorCode, Request, ServerConnection
from mcp_sansio.testing import ConnectionTransport, check_peer, sweep

TOOLS = [{
    "name": "add",
    "description": "Add two integers.",
    "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
    "outputSchema": {
        "type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"],
    },
}]


def application(conn, event):
    """The server's application: it answers every request the core hands it."""
    if isinstance(event, CancelRequested):
        return  # nothing is running in the background here
    if not isinstance(event, Request):
        return
    params = event.params or {}
    if event.method == "tools/list":
        conn.send_response(event.request_id, {"tools": TOOLS})
    elif event.method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str):
            conn.send_error(event.request_id, ErrorCode.INVALID_PARAMS, "name is required")
        elif name != "add":
            conn.send_error(event.request_id, ErrorCode.INVALID_PARAMS,
                            f"Unknown tool: {name}")
        elif not (isinstance(args.get("a"), int) and isinstance(args.get("b"), int)):
            # Bad arguments are a tool error the model can see, not a protocol error.
            conn.send_response(event.request_id, {
                "content": [{"type": "text", "text": "a and b must be integers"}],
                "isError": True,
            })
        else:
            total = args["a"] + args["b"]
            conn.send_response(event.request_id, {
                "content": [{"type": "text", "text": str(total)}],
                "structuredContent": {"sum": total},
            })
    elif event.method == "subscriptions/listen":  # 2026-07-28
        # The core has acknowledged the stream; it stays open until the client cancels it.
        if not isinstance(params.get("notifications"), dict):
            conn.send_error(event.request_id, ErrorCode.INVALID_PARAMS,
                            "notifications is required")
    else:
        conn.send_error(event.request_id, ErrorCode.METHOD_NOT_FOUND, "Method not found")


def new_server():
    """A fresh server for each session: our ServerConnection plus the application above."""
    conn = ServerConnection(info={"name": "adder", "version": "1.0"},
                            capabilities={"tools": {}})
    return ConnectionTransport(conn, application)


# Every rule once, in every revision (deterministic).
print(sweep(new_server).summary())
# Random sessions: hypothesis picks the revision and what to do (deterministic too, by
# default: the seed is fixed).
print(check_peer(new_server, sessions=10, steps=20).summary())
