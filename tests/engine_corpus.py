"""Hostile requests for the ASGI engines' hardening tests
(tests/asgi/test_asgi_engine_hardening.py): the HTTP hardening corpus of our own servers
(tests/adapters/common/test_http_isolation.py) and the cases only an engine's parser decides
(oversized bodies, ``Expect``, chunk extensions, trailers, ``Host``, absolute-form, HTTP/1.0
streams), as raw bytes, with the answers our own servers give: (raw request, each request's method,
the statuses, whether the server closes)."""

from __future__ import annotations

import json

from tests.http_raw import chunked, ping, post

HOST = b"127.0.0.1"
BIG = 10 * 1024 * 1024  # a body over the default limit (4 MiB)


def raw_post(body: bytes | None = None, **kwargs: object) -> bytes:
    from tests.http_util import init_body

    data = json.dumps(init_body()).encode() if body is None else body
    return post(data, **kwargs).replace(b"localhost:8000", HOST)  # type: ignore[arg-type]


def _chunked_post(body: bytes, extra: bytes = b"") -> bytes:
    return raw_post(b"", length=False, extra=b"Transfer-Encoding: chunked\r\n" + extra) + body


def _init_chunked(extension: bytes = b"", trailer: bytes = b"") -> bytes:
    from tests.http_util import init_body

    data = json.dumps(init_body()).encode()
    return _chunked_post(b"%x%s\r\n%s\r\n0\r\n%s\r\n" % (len(data), extension, data, trailer))


def sse_call(version: bytes = b"HTTP/1.1") -> bytes:
    """A 2026-07-28 ``tools/call`` answered as an SSE stream (progress, then the result)."""
    from tests.http_util import stateless_meta

    body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "test_tool_with_progress", "arguments": {},
        "_meta": stateless_meta(progressToken="p")}}).encode()
    return raw_post(body, version=version, extra=b"MCP-Protocol-Version: 2026-07-28\r\n"
                    b"Mcp-Method: tools/call\r\nMcp-Name: test_tool_with_progress\r\n")

#: name -> (raw bytes, methods, statuses, closes): what our own servers answer.
CASES: dict[str, tuple[bytes, list[str], list[int], bool]] = {
    "HEAD": (b"HEAD /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n",
             ["HEAD"], [400], False),
    "both framings": (raw_post(b"", length=False, extra=b"Content-Length: 3\r\n"
                               b"Transfer-Encoding: chunked\r\n") + chunked(b"abc"),
                      [], [400], True),
    "coding not chunked": (raw_post(b"", length=False, extra=b"Transfer-Encoding: chunked, x"
                                    b"\r\n") + chunked(b"abc"), [], [400], True),
    "chunked twice": (raw_post(b"", length=False, extra=b"Transfer-Encoding: chunked, chunked"
                               b"\r\n") + chunked(b"abc"), [], [501], True),
    "bad chunk size": (_chunked_post(b"zz\r\nabc\r\n"), [], [400], True),
    "obs-fold": (raw_post(extra=b"X-A: a\r\n b\r\n"), [], [400], True),
    "space before colon": (raw_post(extra=b"X-A : a\r\n"), [], [400], True),
    "NUL in a value": (raw_post(extra=b"X-A: a\x00b\r\n"), [], [400], True),
    "many fields": (raw_post(extra=b"".join(b"X-%d: a\r\n" % n for n in range(500))),
                    [], [431], True),
    "huge head": (raw_post(extra=b"X-A: " + b"a" * 70_000 + b"\r\n"), [], [431], True),
    "64 KiB header line": (raw_post(extra=b"X-A: " + b"a" * 65_536 + b"\r\n"), [], [431], True),
    "long target": (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", [], [414], True),
    "absolute-form": (raw_post(target=b"http://127.0.0.1/mcp"), [], [200], False),
    "absolute-form, foreign host": (raw_post(target=b"http://evil.example/mcp"), [], [403],
                                    False),
    "CONNECT": (b"CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n", [], [501], False),
    "OPTIONS *": (b"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", [], [200], False),
    "GET *": (b"GET * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", [], [400], False),
    "odd method": (b"BREW /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", [], [405], False),
    "invalid method byte": (b"G\xffT /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", [], [400], True),
    "not HTTP": (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(256)),
                 [], [400], True),
    "HTTP/1.0": (raw_post(version=b"HTTP/1.0"), [], [200], True),
    "Expect: 100-continue": (raw_post(extra=b"Expect: 100-continue\r\n"), [], [100, 200], False),
    "Expect: 100-continue, body too large": (
        raw_post(b"", length=False, extra=b"Expect: 100-continue\r\nContent-Length: %d\r\n"
                 % BIG), [], [413], True),
    "a body on GET": (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                      b"Content-Length: 3\r\n\r\nabc", [], [400], False),
    "no Host": (raw_post().replace(b"Host: 127.0.0.1\r\n", b""), [], [400], True),
    "two Host fields": (raw_post(extra=b"Host: 127.0.0.1\r\n"), [], [400], True),
    "body too large": (raw_post(b"x" * BIG), [], [413], True),
    "chunked body too large": (_chunked_post(b"%x\r\n%s\r\n0\r\n\r\n" % (BIG, b"x" * BIG)),
                               [], [413], True),
    # (our h11 wire names a chunk line or trailer over the head limit 414, as it would a
    # request line that long; every parser refuses them with some 4xx: ANY_REFUSAL)
    "64 KiB chunk extension": (_init_chunked(extension=b";x=" + b"a" * 65_536), [], [414],
                               True),
    "64 KiB trailer section": (_init_chunked(trailer=b"X-T: " + b"a" * 65_536 + b"\r\n"),
                               [], [414], True),
    "Connection: close, then a pipelined request": (
        raw_post(extra=b"Connection: close\r\n") + raw_post(), [], [200], True),
}


#: Where an engine answers a case of :data:`CASES` otherwise than our own servers, and why:
#: case -> engine -> (statuses, closes, the row of docs/deploying.rst's engine table). Each
#: is the engine's parser deciding before the application sees the request, with the
#: options ``serve-example --engine`` passes (adapters/tools/_asgi_serve.py
#: ``ENGINE_OPTIONS``); every other case gets our servers' answer under every engine.
ENGINE_ANSWERS: dict[str, dict[str, tuple[list[int], bool, str]]] = {
    "chunked twice": {
        "uvicorn": ([400], True, "refused by h11 (400 for our 501)")},
    "coding not chunked": {
        "hypercorn": ([501], True, "refused by h11 (501 for our 400)")},
    "obs-fold": {
        "uvicorn": ([200], False, "unfolded by h11 (RFC 9112 section 5.2 allows it)"),
        "hypercorn": ([200], False, "unfolded by h11 (RFC 9112 section 5.2 allows it)")},
    "long target": {
        "uvicorn": ([400], True, "refused by h11 (400 for our 414)"),
        "hypercorn": ([431], True, "refused by h11 (431 for our 414)"),
        "granian": ([431], True, "refused by hyper (431 for our 414)")},
    "absolute-form, foreign host": {
        "granian": ([200], False, "not possible: granian hands over the path alone")},
    "CONNECT": {
        "granian": ([400], False, "hyper hands over no authority-form: the application "
                    "answers 400 (a target form CONNECT may not use) for our 501")},
    "Expect: 100-continue, body too large": {
        "hypercorn": ([100, 413], True,
                      "not possible: hypercorn sends 100 Continue before the application runs")},
    "64 KiB chunk extension": {
        "uvicorn": ([200], False, "not possible: h11 bounds only a chunk line still incomplete")},
    "64 KiB trailer section": {
        "uvicorn": ([200], False, "not possible: h11 bounds only a trailer still incomplete")},
    "Connection: close, then a pipelined request": {
        "hypercorn": ([400], True, "not possible: hypercorn answers 400 in place of the "
                      "first request when bytes follow it on a connection it must close")},
}

#: Cases refused with any 4xx status and a close (the parsers name the breach differently:
#: our h11 wire says 414, hyper 400, h11 under hypercorn 431).
ANY_REFUSAL = frozenset({"64 KiB chunk extension", "64 KiB trailer section"})

__all__ = ["ANY_REFUSAL", "CASES", "ENGINE_ANSWERS", "HOST", "exchange", "ping", "raw_post",
           "sse_call"]


def exchange(address: object, data: bytes, methods: list[str], *, count: int,
             until_closed: bool, idle: float = 3.0) -> tuple[list[object], bool | None]:
    """Send ``data`` on a new connection (``address``: a port on loopback, or a Unix
    socket's path); read until the server closes, or ``count`` final responses came and
    ``until_closed`` is False, or nothing came for ``idle`` seconds (then closed is None):
    the responses and whether the server closed."""
    import contextlib
    import socket

    from tests.http_raw import parse

    if isinstance(address, int):
        sock = socket.create_connection(("127.0.0.1", address), timeout=idle)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(idle)
        sock.connect(str(address))
    out = b""
    closed: bool | None = None
    try:
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            sock.sendall(data)
        while True:
            if not until_closed:
                with contextlib.suppress(ValueError, IndexError):
                    if len([r for r in parse(out, methods) if r.status >= 200]) >= count:
                        closed = False
                        break
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            out += chunk
    finally:
        sock.close()
    if out.startswith(b"HTTP/1.0 ") and b" HTTP/1.0\r\n" in data.split(b"\r\n", 1)[0] + b"\r\n":
        # An HTTP/1.0 request answered as HTTP/1.0 (granian): as allowed as 1.1 (RFC 9110
        # section 2.5); parse reads HTTP/1.1 status lines.
        out = b"HTTP/1.1 " + out[9:]
    try:
        return list(parse(out, methods)), closed
    except (ValueError, IndexError, AssertionError):
        return [out[:200]], closed


#: The columns of the engine table: engine -> its heading (hypercorn's two workers share
#: one parser, h11, and so one column's answers; both run the corpus).
COLUMNS = {"uvicorn": "uvicorn (h11)", "hypercorn": "hypercorn (asyncio, trio)",
           "granian": "granian"}
#: Cases whose rule the engine's parser alone can apply (the application never sees the
#: bytes that break it); every other case's rule the application applies under any engine.
PARSER_ONLY = frozenset({
    "bad chunk size", "obs-fold", "space before colon", "NUL in a value",
    "invalid method byte", "not HTTP", "64 KiB chunk extension", "64 KiB trailer section",
    "Connection: close, then a pipelined request"})


def render_table() -> str:
    """The engine table of docs/deploying.rst, from :data:`CASES` and
    :data:`ENGINE_ANSWERS` (tests/asgi/test_asgi_engine_hardening.py checks that the page
    shows exactly this)."""
    lines = [".. list-table::", "   :header-rows: 1", "", "   * - request",
             "     - our servers", *[f"     - {title}" for title in COLUMNS.values()]]
    for case, (_, _, statuses, closes) in CASES.items():
        ours = ", ".join(str(s) for s in statuses) + (", close" if closes else "")
        lines.append(f"   * - {case}")
        lines.append(f"     - {ours}")
        for engine in COLUMNS:
            row = ENGINE_ANSWERS.get(case, {}).get(engine)
            if row is not None:
                cell = row[2]
            elif case in PARSER_ONLY:
                cell = "the same, by the engine"
            else:
                cell = "the same, by the application"
            lines.append(f"     - {cell}")
    return "\n".join(lines) + "\n"
