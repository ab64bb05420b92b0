"""Hypothesis strategies that build raw HTTP/1.1 requests from grammar pieces.

Theory of operation
-------------------
A request is drawn piece by piece, as RFC 9112 lays it out: a request line (method, target,
version), field lines, a framing choice and a body, joined by a line ending. Every piece is
drawn from three pools:

* **valid** pieces, so that much of what is drawn reaches the MCP layer: the methods the
  transport serves, the four request-target forms (RFC 9112 section 3.2), the MCP headers
  (``Mcp-Session-Id``, ``MCP-Protocol-Version``, ``Accept``, ``Content-Type``,
  ``Last-Event-ID``, ``Origin``) with good values, and JSON-RPC bodies;
* **near-valid** pieces, one step from valid: a lowercase method, a percent-encoded or
  dot-segment target, HTTP/1.0, a session id that names no session, a revision that does not
  exist, a body that is not JSON or not JSON-RPC;
* **hostile** pieces, aimed at framing and the parser: Transfer-Encoding together with
  Content-Length, duplicated or differing Content-Length, ``gzip, chunked`` and
  ``chunked, identity``, chunk extensions, bad chunk sizes (negative, hex overflow, a missing
  CRLF), obs-fold, whitespace before the colon, bare LF and bare CR, NUL and high bytes,
  very long targets and values, many fields.

:func:`connections` draws one TCP connection's bytes -- one to four pipelined requests,
sometimes after empty lines -- and :func:`cuts` the points at which that stream is split into
reads. Cut points are a list of integers, so hypothesis shrinks a failure to the fewest
reads and the smallest offsets; ``bytewise=True`` cuts at every byte.

:data:`clean` requests are drawn from the valid pool only; the fuzzers use them to check that
well-formed traffic is answered in full, not just that bad traffic is survived.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import strategies as st

from .http_target import HOST, INIT, SESSION, VERSION

CRLF = b"\r\n"
REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")

# -- request line -----------------------------------------------------------------------------

valid_methods = st.sampled_from([b"POST", b"GET", b"DELETE"])
odd_methods = st.sampled_from([
    b"HEAD", b"OPTIONS", b"PUT", b"PATCH", b"TRACE", b"CONNECT", b"post", b"PoSt",
    b"M-SEARCH", b"X" * 300, b"G\x00ET", b"GET\xff", b"", b"GE T",
])
origin_targets = st.sampled_from([b"/mcp", b"/mcp?x=1", b"/sse", b"/messages",
                                  b"/messages?session_id=" + SESSION.encode()])
odd_targets = st.one_of(
    st.sampled_from([
        b"http://" + HOST.encode() + b"/mcp",  # absolute-form (section 3.2.2)
        b"HTTP://LOCALHOST:8000/mcp", b"https://evil.example/mcp",
        HOST.encode(),  # authority-form (section 3.2.3)
        b"*",  # asterisk-form (section 3.2.4)
        b"/mcp/../mcp", b"/%6dcp", b"/mcp%00", b"/mcp#frag", b"//mcp", b"/./mcp",
        b"/mcp?" + b"%" * 10, b"", b"/m\xffcp", b"/mcp\x7f",
    ]),
    st.integers(100, 3000).map(lambda n: b"/" + b"a" * n),
)
valid_versions = st.just(b"HTTP/1.1")
odd_versions = st.sampled_from([b"HTTP/1.0", b"HTTP/1.2", b"HTTP/2.0", b"HTTP/0.9",
                                b"http/1.1", b"HTTP/1.10", b"HTTP/1", b"HTTP/11", b""])

# -- field lines ------------------------------------------------------------------------------

_JSON_ACCEPT = b"application/json, text/event-stream"
valid_fields = st.sampled_from([  # (Host is always sent once: a second one is a 400)
    (b"Accept", _JSON_ACCEPT),
    (b"Accept", b"text/event-stream"),
    (b"Content-Type", b"application/json"),
    (b"Content-Type", b"application/json; charset=utf-8"),
    (b"Mcp-Session-Id", SESSION.encode()),
    (b"MCP-Protocol-Version", VERSION.encode()),
    (b"Origin", b"http://localhost:8000"),
    (b"Last-Event-ID", b"0"),
    (b"User-Agent", b"fuzz/1"),
])
near_fields = st.one_of(
    st.tuples(st.sampled_from([b"Mcp-Session-Id", b"MCP-Protocol-Version", b"Accept",
                               b"Content-Type", b"Last-Event-ID", b"Origin", b"Host",
                               b"Mcp-Method", b"Mcp-Name", b"Connection", b"Expect"]),
              st.sampled_from([b"", b"session-2", b"x" * 200, b"2099-01-01", b"*/*",
                               b"text/html", b"application/json;;", b"=?base64?!!?=",
                               b"http://evil.example", b"close", b"keep-alive",
                               b"100-continue", b"session-1:0", b"\xc3\xa9",
                               *[r.encode() for r in REVISIONS]])),
    st.tuples(st.from_regex(rb"\A[A-Za-z][A-Za-z0-9-]{0,20}\Z"),
              st.binary(max_size=30).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))),
)


@st.composite
def hostile_field_line(draw: st.DrawFn) -> bytes:
    """One field line that breaks RFC 9112 section 5 or RFC 9110 section 5.5."""
    kind = draw(st.sampled_from(["fold", "space", "nul", "bare_cr", "bare_lf", "high",
                                 "empty_name", "no_colon", "huge", "ctl"]))
    return {
        "fold": b"X-Fold: a" + CRLF + b" b",  # obs-fold (section 5.2)
        "space": b"Content-Type : application/json",  # whitespace before the colon
        "nul": b"X-Nul: a\x00b",
        "bare_cr": b"X-Cr: a\rb",
        "bare_lf": b"X-Lf: a\nb",
        "high": b"X-High: \x80\xff",
        "empty_name": b": value",
        "no_colon": b"NoColon",
        "huge": b"X-Huge: " + b"v" * draw(st.integers(1000, 5000)),
        "ctl": b"X-Ctl: a\x01\x7f",
    }[kind]


# -- framing and body -------------------------------------------------------------------------


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


valid_bodies = st.sampled_from([
    _json(INIT),
    _json({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    _json({"jsonrpc": "2.0", "id": "a", "method": "tools/list"}),
    _json({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    _json({"jsonrpc": "2.0", "id": 7, "result": {}}),
    _json([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
    _json({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}}}}),
])
odd_bodies = st.one_of(
    st.sampled_from([b"", b"{", b"null", b"[]", b"{}", b'{"jsonrpc":"1.0"}',
                     b'{"jsonrpc":"2.0","id":null,"method":"ping"}', b"\xff\xfe",
                     b'{"jsonrpc":"2.0","id":1,"method":"ping"}' * 2, b"[" * 200]),
    st.binary(max_size=64),
    st.integers(4000, 5000).map(lambda n: b'"' + b"x" * n + b'"'),  # near the body limit
)


@st.composite
def chunked(draw: st.DrawFn, body: bytes, hostile: bool) -> bytes:
    """``body`` as chunks (RFC 9112 section 7.1), with extensions and, when ``hostile``,
    one broken piece."""
    sizes = draw(st.lists(st.integers(1, 64), max_size=6))
    out = bytearray()
    pos = 0
    for size in sizes:
        piece = body[pos:pos + size]
        if not piece:
            break
        ext = draw(st.sampled_from([b"", b"", b";a=b", b';name="q v"', b";x", b"; y = z"]))
        out += b"%x%s\r\n%s\r\n" % (len(piece), ext, piece)
        pos += size
    if pos < len(body):
        out += b"%x\r\n%s\r\n" % (len(body) - pos, body[pos:])
    last = b"0\r\n" + draw(st.sampled_from([b"", b"", b"Trailer-X: 1\r\n"])) + b"\r\n"
    if hostile:
        broken = draw(st.sampled_from([
            b"-1\r\n\r\n", b"fffffffffffffffffffffffff\r\nx\r\n", b"1\r\nxx0\r\n\r\n",
            b"0x5\r\nhello\r\n", b" 5\r\nhello\r\n", b"5\nhello\n0\n\n",
            b"2\r\nhello\r\n", b"5;\x00\r\nhello\r\n", b"5\rhello\r\n0\r\n\r\n", b"z\r\n",
            b"0\r\nbad trailer\r\n\r\n", b"1000000\r\n",
        ]))
        return bytes(out) + broken
    return bytes(out) + last


@st.composite
def framing(draw: st.DrawFn, body: bytes, hostile: bool) -> tuple[list[tuple[bytes, bytes]],
                                                                    bytes]:
    """The framing fields and the message body as sent (RFC 9112 section 6)."""
    n = str(len(body)).encode()
    if not hostile:
        kind = draw(st.sampled_from(["cl", "cl", "chunked"] if body else ["none", "cl0"]))
    else:
        kind = draw(st.sampled_from([
            "te_cl", "cl_cl_same", "cl_cl_differ", "cl_list", "cl_bad", "cl_short",
            "cl_long", "te_gzip", "te_identity", "te_twice", "te_case", "te_unknown",
            "chunked_bad", "none_with_body", "cl_huge"]))
    if kind == "none":
        return [], b""
    if kind == "cl0":
        return [(b"Content-Length", b"0")], b""
    if kind == "cl":
        return [(b"Content-Length", n)], body
    if kind == "chunked":
        return [(b"Transfer-Encoding", b"chunked")], draw(chunked(body, False))
    if kind == "te_cl":
        encoded = draw(chunked(body, False))
        return draw(st.permutations([(b"Transfer-Encoding", b"chunked"),
                                     (b"Content-Length", str(len(encoded)).encode())])), encoded
    if kind == "cl_cl_same":
        return [(b"Content-Length", n), (b"Content-Length", n)], body
    if kind == "cl_cl_differ":
        return [(b"Content-Length", n), (b"Content-Length", str(len(body) + 1).encode())], body
    if kind == "cl_list":
        return [(b"Content-Length", n + b", " + n)], body
    if kind == "cl_bad":
        value = draw(st.sampled_from([b"+" + n, b"-1", b"0x10", b" ", b"1 2", n + b"a",
                                      b"1" * 30]))
        return [(b"Content-Length", value)], body
    if kind == "cl_short":
        return [(b"Content-Length", str(max(0, len(body) - 3)).encode())], body
    if kind == "cl_long":
        return [(b"Content-Length", str(len(body) + 10).encode())], body
    if kind == "cl_huge":
        return [(b"Content-Length", b"99999999999999999999")], body
    if kind == "te_gzip":
        return [(b"Transfer-Encoding", b"gzip, chunked")], draw(chunked(body, False))
    if kind == "te_identity":
        return [(b"Transfer-Encoding", b"chunked, identity")], draw(chunked(body, False))
    if kind == "te_twice":
        return [(b"Transfer-Encoding", b"chunked"), (b"Transfer-Encoding", b"chunked")], draw(
            chunked(body, False))
    if kind == "te_case":
        value = draw(st.sampled_from([b"Chunked", b" chunked", b"chunked ", b"\tchunked",
                                      b"chunked;q=1", b"xchunked"]))
        return [(b"Transfer-Encoding", value)], draw(chunked(body, False))
    if kind == "te_unknown":
        return [(b"Transfer-Encoding", b"identity")], body
    if kind == "chunked_bad":
        return [(b"Transfer-Encoding", b"chunked")], draw(chunked(body, True))
    # none_with_body: no framing field, so the body's bytes are the next request's
    return [], body


# -- whole requests ---------------------------------------------------------------------------


@st.composite
def requests(draw: st.DrawFn, clean: bool = False) -> bytes:
    """One request's bytes. ``clean``: valid pieces only, CRLF, HTTP/1.1, keep-alive.

    Otherwise half are valid, a quarter near-valid (odd method, target, version, fields or
    body) and a quarter hostile (framing, field syntax, line endings, sizes), so that
    pipelines get past their first request often enough to test what follows."""
    kind = "clean" if clean else draw(st.sampled_from(["valid", "valid", "near", "hostile"]))
    hostile = kind == "hostile"
    near = kind == "near"
    odd = near and draw(st.sampled_from(["method", "target", "version", "fields", "fields",
                                         "body", "body"]))
    method = draw(odd_methods if odd == "method" else valid_methods)
    target = draw(origin_targets.filter(lambda t: t.startswith(b"/mcp")) if clean
                  else odd_targets if odd == "target" else origin_targets)
    version = draw(odd_versions if odd == "version" else valid_versions)
    fields: list[tuple[bytes, bytes]] = [(b"Host", HOST.encode())]
    if method == b"POST":
        fields += [(b"Accept", _JSON_ACCEPT), (b"Content-Type", b"application/json")]
    elif method == b"GET":
        fields += [(b"Accept", b"text/event-stream")]
    fields += draw(st.lists(valid_fields, max_size=4))
    if odd == "fields":
        fields += draw(st.lists(near_fields, min_size=1, max_size=4))
    if hostile and draw(st.integers(0, 4)) == 0:  # many fields
        fields += [(b"X-%d" % i, b"v") for i in range(draw(st.integers(50, 400)))]
    if clean:  # one of each (the first), and no resumption
        seen: dict[bytes, bytes] = {}
        for k, v in fields:
            seen.setdefault(k.lower(), v)
        fields = [(k, v) for k, v in seen.items() if k != b"last-event-id"]
    pool = odd_bodies if odd == "body" else valid_bodies
    body = draw(pool) if method == b"POST" else b""
    if not clean:
        fields = draw(st.permutations(fields))
    frame_fields, content = draw(framing(body, hostile))
    lines = [method + b" " + target + b" " + version]
    lines += [k + b": " + v for k, v in [*fields, *frame_fields]]
    if hostile and draw(st.booleans()):
        at = draw(st.integers(1, len(lines)))
        lines.insert(at, draw(hostile_field_line()))
    eol = CRLF
    if hostile and draw(st.integers(0, 3)) == 0:
        eol = draw(st.sampled_from([b"\n", b"\r", b"\r\r\n", b"\n\r"]))
    head = eol.join(lines) + eol + eol
    return head + content


@st.composite
def connections(draw: st.DrawFn, clean: bool = False) -> list[bytes]:
    """One to four pipelined requests (one TCP connection's bytes, request by request),
    sometimes after empty lines (RFC 9112 section 2.2)."""
    reqs = draw(st.lists(requests(clean), min_size=1, max_size=4))
    if not clean and draw(st.integers(0, 9)) == 0:
        # (h11 refuses these with 400 where RFC 9112 section 2.2 says a server SHOULD ignore
        # at least one: a refusal is safe, so the fuzzers accept it.)
        reqs[0] = draw(st.sampled_from([CRLF, CRLF * 3, b"\n"])) + reqs[0]
    if not clean and draw(st.integers(0, 9)) == 0:  # a request cut short
        last = reqs[-1]
        reqs[-1] = last[:draw(st.integers(0, len(last)))]
    return reqs


@st.composite
def cuts(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` cut into reads: whole, byte by byte, or at drawn points (shrinkable)."""
    how = draw(st.sampled_from(["whole", "points", "points", "bytewise"]))
    if how == "whole" or not data:
        return [data]
    if how == "bytewise":
        return [data[i:i + 1] for i in range(len(data))]
    points = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=8))))
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]
