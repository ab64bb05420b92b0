"""A stdio peer that completes the handshake and then never answers anything (and ignores
cancellations): for timeout tests. Plain JSON lines, no library."""

import json
import sys

for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "silent", "version": "1"}}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    elif message.get("method") == "server/discover":
        reply = {"jsonrpc": "2.0", "id": message["id"],
                 "error": {"code": -32601, "message": "Method not found"}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
