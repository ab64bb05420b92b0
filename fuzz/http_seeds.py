"""Hand-written raw requests: the seed corpus of ``fuzz/atheris_http.py`` and explicit
examples for ``fuzz/test_http_raw.py``.

Each seed is one TCP connection's bytes, valid or hostile, chosen to start the
coverage-guided search at every branch of RFC 9112's framing and of the MCP transport's
checks. ``python -m fuzz.http_seeds DIR`` writes them as libFuzzer inputs (each prefixed by
the flags byte :mod:`fuzz.atheris_http` reads first, once per way of cutting the reads).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from .http_target import HOST, INIT, SESSION, VERSION, well_formed

_H = b"Host: " + HOST.encode() + b"\r\n"
_SESSION = (b"Mcp-Session-Id: " + SESSION.encode() + b"\r\nMCP-Protocol-Version: "
            + VERSION.encode() + b"\r\n")
_PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def _chunked(body: bytes, ext: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n0\r\n\r\n" % (len(body), ext, body)


SEEDS: list[bytes] = [
    well_formed(INIT),
    well_formed(_PING, _SESSION) * 2,
    well_formed({"jsonrpc": "2.0", "method": "notifications/initialized"}, _SESSION),
    well_formed([_PING], _SESSION),
    well_formed({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                 "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                      "io.modelcontextprotocol/clientCapabilities": {},
                                      "io.modelcontextprotocol/clientInfo": {
                                          "name": "c", "version": "1"}}}},
                b"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"),
    well_formed(_PING, _SESSION + b"Connection: close\r\n") + well_formed(_PING),
    b"GET /mcp HTTP/1.1\r\n" + _H + b"Accept: text/event-stream\r\n" + _SESSION
    + b"Last-Event-ID: x\r\n\r\n",
    b"DELETE /mcp HTTP/1.1\r\n" + _H + _SESSION + b"\r\n",
    b"HEAD /mcp HTTP/1.1\r\n" + _H + b"\r\n",
    b"OPTIONS * HTTP/1.1\r\n" + _H + b"\r\n",
    b"GET http://localhost:8000/mcp HTTP/1.1\r\n" + _H + b"\r\n",
    b"CONNECT localhost:8000 HTTP/1.1\r\n" + _H + b"\r\n",
    b"GET /sse HTTP/1.1\r\n" + _H + b"Accept: text/event-stream\r\n\r\n",
    b"POST /messages?session_id=session-1 HTTP/1.1\r\n" + _H
    + b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
    b"GET /mcp HTTP/1.0\r\n" + _H + b"\r\n",
    b"POST /mcp HTTP/1.1\r\n" + _H + b"Content-Type: application/json\r\n"
    b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    + _chunked(json.dumps(INIT).encode(), b";a=b"),
    b"POST /mcp HTTP/1.1\r\n" + _H + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
    b"0\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\n" + _H + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\n" + _H + b"Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\n" + _H + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    b"POST /mcp HTTP/1.1\r\n" + _H + b"Transfer-Encoding: chunked\r\n\r\n-1\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\n" + _H + b"Transfer-Encoding: chunked\r\n\r\n"
    b"fffffffffffffffffffff\r\n",
    b"POST /mcp HTTP/1.1\r\n" + _H + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}0\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\n" + _H + b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
    b"GET /mcp HTTP/1.1\r\n" + _H + b"X-Folded: a\r\n b\r\n\r\n",
    b"GET /mcp HTTP/1.1\r\n" + _H + b"X-Space : a\r\n\r\n",
    b"GET /mcp HTTP/1.1\n" + b"Host: " + HOST.encode() + b"\n\n",
    b"GET /mcp HTTP/1.1\r\n" + _H + b"X: a\rb\r\n\r\n",
    b"GET /mcp HTTP/1.1\r\n" + _H + b"X: a\x00b\xff\r\n\r\n",
    b"GET /" + b"a" * 3000 + b" HTTP/1.1\r\n" + _H + b"\r\n",
    b"GET /mcp HTTP/1.1\r\n" + _H + b"".join(b"X-%d: v\r\n" % i for i in range(300)) + b"\r\n",
    b"POST /mcp HTTP/1.1\r\n" + _H + b"Content-Length: 99999\r\n\r\n",
    b"GET /%2e%2e/mcp?x=%00 HTTP/1.1\r\n" + _H + b"Origin: http://evil.example\r\n\r\n",
]


def write(directory: Path) -> int:
    """Write every seed under each flags byte (the two response modes, whole and byte by
    byte; end of file on and off); returns how many files."""
    directory.mkdir(parents=True, exist_ok=True)
    count = 0
    for seed in SEEDS:
        for flags in (0, 1, 2, 4):
            data = bytes([flags]) + seed
            name = hashlib.sha1(data).hexdigest()
            (directory / name).write_bytes(data)
            count += 1
    return count


if __name__ == "__main__":
    write(Path(sys.argv[1]))
