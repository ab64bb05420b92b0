"""The sans-IO HTTP server against RFC 9112 (HTTP/1.1) and RFC 9110 (HTTP semantics), rule by
rule, with raw request bytes in memory: message framing and body length (RFC 9112 section 6),
request-target forms (section 3.2) and length (section 3), header field syntax (section 5)
and limits (RFC 6585 section 5), HEAD and the statuses that carry no content (RFC 9110
sections 9.3.2 and 15), ``Allow`` on 405 (section 15.5.6), persistence, ``Connection: close``
and HTTP/1.0 (RFC 9112 section 9), pipelining order (section 9.3.2), and an unexpected
exception contained to its connection. Each test says which rule it checks and whether h11
enforces it or the server chooses (the choice is in ``mcp_sansio/http/_wire.py``
``REFUSALS`` and ``TARGET_FORMS``). The same classes on the runtimes' real servers are in
``tests/adapters/common/test_http_isolation.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio.http import HTTPServer, ServerChannel, _server
from mcp_sansio.http._wire import REFUSALS, TARGET_FORMS, target_allowed, target_form
from tests.http_raw import HOST, INIT, Reply, chunked, parse, ping, post
from tests.http_util import Harness, init_body
from tests.paths import ROOT

# Every rule on both server wires (h11, the reference, and httptools): the same bytes, the
# same answers (where llhttp legitimately differs, tests/http/test_http_wires.py's table says so).
pytestmark = pytest.mark.usefixtures("server_wire")


def exchange(pieces: bytes | list[bytes], methods: list[str] | None = None,
             harness: Harness | None = None, **options: Any
             ) -> tuple[list[Reply], ServerChannel, Harness]:
    """Feed raw bytes to one new channel of a server (answering every request at once);
    the responses it wrote, the channel and the harness."""
    h = harness or Harness(**options)
    channel = h.server.new_channel(now=h.now)
    for piece in [pieces] if isinstance(pieces, bytes) else pieces:
        channel.receive_data(piece, now=h.now)
        h.run()
    out = bytes(h.raw_out.get(channel, b""))
    return parse(out, methods or []), channel, h


def session_of(h: Harness) -> tuple[str, bytes]:
    """A live handshake-era session: its id and the header lines that name it."""
    session_id = h.initialize()
    return session_id, (b"Mcp-Session-Id: " + session_id.encode()
                        + b"\r\nMCP-Protocol-Version: 2025-11-25\r\n")


def only_reply(replies: list[Reply]) -> Reply:
    assert len(replies) == 1, replies
    return replies[0]


# -- RFC 9112 section 6: message body length ---------------------------------------------------


def test_both_transfer_encoding_and_content_length_is_refused_and_the_connection_closed() -> None:
    # Section 6.1: "MAY reject ... Regardless, the server MUST close the connection after
    # responding". We reject (the safe choice): nothing of the body is served, and a request
    # pipelined behind it is not read.
    raw = (b"POST /mcp HTTP/1.1\r\nHost: " + HOST + b"\r\nContent-Type: application/json\r\n"
           b"Accept: application/json, text/event-stream\r\n"
           b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(INIT))
    replies, channel, h = exchange(raw + post())
    assert only_reply(replies).status == REFUSALS["both Transfer-Encoding and Content-Length"][0]
    assert replies[0].header("connection") == "close" and channel.closed
    assert h.events == []  # the application never saw it


def test_transfer_encoding_in_an_http_1_0_request_is_400_and_close() -> None:
    # Section 6.1: an HTTP/1.0 message with Transfer-Encoding: "MUST treat the message as
    # if the framing is faulty ... and close the connection".
    raw = post(b"", length=False, version=b"HTTP/1.0",
               extra=b"Transfer-Encoding: chunked\r\n") + chunked(INIT)
    replies, channel, h = exchange(raw)
    assert only_reply(replies).status == 400 and channel.closed and h.events == []


@pytest.mark.parametrize("coding", [b"chunked, gzip", b"gzip", b"identity"])
def test_a_final_coding_other_than_chunked_is_400_and_close(coding: bytes) -> None:
    # Section 6.3 item 4: the body length cannot be determined: MUST 400, then close.
    raw = (b"POST /mcp HTTP/1.1\r\nHost: " + HOST + b"\r\nTransfer-Encoding: " + coding
           + b"\r\n\r\n" + chunked(INIT))
    replies, channel, _ = exchange(raw)
    assert only_reply(replies).status == 400 and channel.closed


def test_an_unknown_coding_before_chunked_is_501() -> None:
    # Section 6.1: a transfer coding the server does not understand: SHOULD 501 (h11).
    raw = (b"POST /mcp HTTP/1.1\r\nHost: " + HOST + b"\r\nTransfer-Encoding: gzip, chunked"
           b"\r\n\r\n" + chunked(INIT))
    replies, channel, _ = exchange(raw)
    assert only_reply(replies).status == 501 and channel.closed


@pytest.mark.parametrize("value", [b"-1", b"abc", b"1e3", b"3, 4", b" "])
def test_an_invalid_content_length_is_400_and_close(value: bytes) -> None:
    # Section 6.3 item 5: an invalid Content-Length: MUST 400 and close (h11 enforces it).
    replies, channel, _ = exchange(post(extra=b"Content-Length: " + value + b"\r\n",
                                        length=False))
    assert only_reply(replies).status == 400 and channel.closed


def test_two_differing_content_lengths_are_400_and_close() -> None:
    # Section 6.3 item 5 (several fields with differing values): h11 enforces it.
    replies, channel, _ = exchange(post(extra=b"Content-Length: 3\r\n"))
    assert only_reply(replies).status == 400 and channel.closed


def test_a_chunked_body_is_read_and_its_extensions_and_trailers_ignored() -> None:
    # Section 7.1.1: unrecognized chunk extensions MUST be ignored; section 7.1.2: trailer
    # fields are not merged into the header section.
    raw = (post(b"", length=False, extra=b"Transfer-Encoding: chunked\r\n")
           + chunked(INIT, b";name=value").replace(b"0\r\n\r\n", b"0\r\nX-T: 1\r\n\r\n"))
    replies, channel, _ = exchange(raw)
    assert only_reply(replies).status == 200 and not channel.closed


@pytest.mark.parametrize("size", [b"zz", b"-1", b"1" * 40, b""])
def test_a_bad_chunk_size_is_400_and_close(size: bytes) -> None:
    # Section 7.1: chunk-size = 1*HEXDIG (h11 enforces it).
    raw = post(b"", length=False, extra=b"Transfer-Encoding: chunked\r\n") + size + b"\r\nab\r\n"
    replies, channel, _ = exchange(raw)
    assert only_reply(replies).status == 400 and channel.closed


def test_without_content_length_or_transfer_encoding_a_request_has_no_body() -> None:
    # Section 6.3 item 7: what follows the head is the next request (here: not HTTP -> 400).
    raw = (b"GET /mcp HTTP/1.1\r\nHost: " + HOST + b"\r\nAccept: text/event-stream\r\n\r\n"
           b"{}\r\n\r\n")
    replies, channel, _ = exchange(raw)
    assert [r.status for r in replies] == [400, 400] and channel.closed


# -- RFC 9112 section 3: the request line and its target ----------------------------------------


def test_the_target_form_table_follows_section_3_2() -> None:
    assert target_form("/mcp?a=b") == "origin"
    assert target_form("http://localhost:8000/mcp") == "absolute"
    assert target_form("HTTPS://Example.com") == "absolute"
    assert target_form("localhost:8000") == "authority"
    assert target_form("[::1]:443") == "authority"
    assert target_form("*") == "asterisk"
    for invalid in ["mcp", "ftp://host/x", "http://user@host/x", "http:///x", "host", "*x"]:
        assert target_form(invalid) is None, invalid
    for form, (methods, section) in TARGET_FORMS.items():
        assert section.startswith("RFC 9112 section 3.2.")
        for method in ["GET", "POST", "OPTIONS", "CONNECT", "DELETE"]:
            expected = method != "CONNECT" if methods is None else method in methods
            assert target_allowed(method, form) is expected, (form, method)
    assert not target_allowed("GET", None)


def test_absolute_form_is_accepted_and_routed_on_its_path() -> None:
    # Section 3.2.2: "a server MUST accept the absolute-form in requests".
    replies, channel, _ = exchange(post(target=b"http://" + HOST + b"/mcp"))
    assert only_reply(replies).status == 200 and not channel.closed
    assert "mcp-session-id" in replies[0].headers
    replies, _, _ = exchange(post(target=b"http://" + HOST + b"/other"))
    assert only_reply(replies).status == 404


def test_absolute_form_authority_replaces_host_for_the_host_check() -> None:
    # Section 3.2.2: the server "MUST ignore the received Host header field (if any) and
    # instead use the host information of the request-target" -- so the DNS-rebinding
    # check judges the target's authority, not a Host the client picked to pass it.
    replies, _, _ = exchange(post(target=b"http://evil.example/mcp"))
    assert only_reply(replies).status == 403
    raw = post(target=b"http://localhost:9/mcp").replace(b"Host: " + HOST, b"Host: evil.example")
    replies, _, _ = exchange(raw)
    assert only_reply(replies).status == 200


def test_authority_form_is_for_connect_only_and_connect_is_not_implemented() -> None:
    # Section 3.2.3: authority-form is CONNECT's alone; we tunnel nowhere: 501 (RFC 9110
    # section 15.6.2). Another method with it, or CONNECT with another form: 400.
    replies, channel, _ = exchange(b"CONNECT localhost:8000 HTTP/1.1\r\nHost: " + HOST
                                   + b"\r\n\r\n")
    assert only_reply(replies).status == 501 and not channel.closed
    replies, _, _ = exchange(b"GET localhost:8000 HTTP/1.1\r\nHost: " + HOST + b"\r\n\r\n")
    assert only_reply(replies).status == 400
    replies, _, _ = exchange(b"CONNECT /mcp HTTP/1.1\r\nHost: " + HOST + b"\r\n\r\n")
    assert only_reply(replies).status == 400


def test_asterisk_form_is_for_options_only() -> None:
    # Section 3.2.4; RFC 9110 section 9.3.7: OPTIONS * is about the server in general, and
    # a response without content "MUST generate a Content-Length field with a value of 0".
    replies, channel, _ = exchange(b"OPTIONS * HTTP/1.1\r\nHost: " + HOST + b"\r\n\r\n")
    reply = only_reply(replies)
    assert reply.status == 200 and reply.header("content-length") == "0"
    assert not channel.closed
    for method in [b"GET", b"POST", b"PRI"]:
        replies, _, _ = exchange(method + b" * HTTP/1.1\r\nHost: " + HOST
                                 + b"\r\nContent-Length: 0\r\n\r\n")
        assert only_reply(replies).status == 400, method


def test_a_target_of_no_form_is_400() -> None:
    replies, _, _ = exchange(post(target=b"mcp"))
    assert only_reply(replies).status == 400


def test_a_long_target_is_414() -> None:
    # Section 3: "A server that receives a request-target longer than any URI it wishes to
    # parse MUST respond with a 414"; both when the line fits the head limit and when the
    # request line alone is over it.
    limit = Harness().server.max_target_length
    replies, channel, _ = exchange(post(target=b"/mcp?" + b"a" * limit))
    assert only_reply(replies).status == REFUSALS["request-target too long"][0] == 414
    assert channel.closed
    replies, channel, _ = exchange(b"GET /" + b"a" * 40_000)
    assert only_reply(replies).status == 414 and channel.closed
    replies, _, _ = exchange(post(target=b"/mcp?" + b"a" * (limit - 10)))
    assert only_reply(replies).status == 200


# -- RFC 9112 section 5: header fields ---------------------------------------------------------


def test_obs_fold_is_400_and_close() -> None:
    # Section 5.2: MUST reject with 400 or replace by SP; h11 replaces, we reject (a proxy
    # in front may read the folded field differently).
    raw = post(extra=b"X-Folded: a\r\n b\r\n")
    replies, channel, h = exchange(raw)
    assert only_reply(replies).status == 400 and channel.closed
    assert b"obs-fold" in replies[0].body and h.events == []
    replies, _, _ = exchange(post(extra=b"X-Folded: a\r\n\tb\r\n"))
    assert only_reply(replies).status == 400


def test_obs_fold_and_codings_split_across_reads_are_still_refused() -> None:
    raw = post(extra=b"X-Folded: a\r\n b\r\n")
    cut = raw.index(b"\r\n b") + 2
    replies, channel, _ = exchange([raw[:cut], raw[cut:]])
    assert only_reply(replies).status == 400 and channel.closed
    replies, channel, _ = exchange([raw[i:i + 1] for i in range(len(raw))])
    assert only_reply(replies).status == 400 and channel.closed
    coded = (b"POST /mcp HTTP/1.1\r\nHost: " + HOST + b"\r\nTransfer-Encoding: chunked, x"
             b"\r\n\r\n" + chunked(INIT))
    replies, channel, _ = exchange([coded[i:i + 1] for i in range(len(coded))])
    assert only_reply(replies).status == 400 and channel.closed


def test_whitespace_in_a_body_is_not_taken_for_obs_fold() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "a\n b", "version": "1"}}},
                      indent=1).encode()
    replies, _, _ = exchange([post(body), post(body)])
    assert [r.status for r in replies] == [200, 200]


def test_whitespace_before_the_colon_is_400() -> None:
    # Section 5.1: "MUST reject ... with a response status code of 400" (h11 enforces it).
    replies, channel, _ = exchange(post(extra=b"X-Space : 1\r\n"))
    assert only_reply(replies).status == 400 and channel.closed


@pytest.mark.parametrize("line", [b"X-Nul: a\x00b", b"X-Cr: a\rb", b"X\x01: a", b": empty-name",
                                  b"X-Lf: a\nb"])
def test_invalid_bytes_in_a_field_are_400(line: bytes) -> None:
    # RFC 9110 section 5.5: "Field values containing CR, LF, or NUL characters are invalid
    # and dangerous": we reject them (h11 does); names are tokens (section 5.1).
    replies, channel, _ = exchange(post(extra=line + b"\r\n"))
    assert only_reply(replies).status == 400 and channel.closed


def test_obs_text_in_a_field_value_is_accepted() -> None:
    # RFC 9110 section 5.5: obs-text (0x80-0xFF) is allowed in field values.
    replies, _, _ = exchange(post(extra=b"X-Latin: caf\xe9\r\n"))
    assert only_reply(replies).status == 200


def test_too_many_header_fields_is_431() -> None:
    # RFC 6585 section 5: a server's own limit on fields (count here: they fit the size).
    count = Harness().server.max_header_count
    fields = b"".join(b"X-%d: a\r\n" % n for n in range(count))
    replies, channel, _ = exchange(post(extra=fields))
    assert only_reply(replies).status == 431 and channel.closed
    fields = b"".join(b"X-%d: a\r\n" % n for n in range(count - 5))  # with ours: count
    replies, _, _ = exchange(post(extra=fields))
    assert only_reply(replies).status == 200


def test_a_head_over_the_size_limit_is_431_whole_or_in_pieces() -> None:
    # RFC 6585 section 5: h11 bounds a head still incomplete; one whole in a read is ours.
    raw = post(extra=b"X-Big: " + b"a" * 20_000 + b"\r\n")
    for pieces in ([raw], [raw[i:i + 4096] for i in range(0, len(raw), 4096)]):
        replies, channel, _ = exchange(pieces)
        assert only_reply(replies).status == 431 and channel.closed
    replies, _, _ = exchange(post(extra=b"X-Big: " + b"a" * 15_000 + b"\r\n"))
    assert only_reply(replies).status == 200


def test_a_missing_host_is_400() -> None:
    # RFC 9112 section 3.2: "A server MUST respond with a 400 ... to any HTTP/1.1 request
    # message that lacks a Host header field" (h11 enforces it).
    replies, channel, _ = exchange(post().replace(b"Host: " + HOST + b"\r\n", b""))
    assert only_reply(replies).status == 400 and channel.closed


# -- RFC 9110: HEAD, statuses without content, Allow --------------------------------------------


def test_head_gets_the_status_and_headers_of_get_and_no_content() -> None:
    # RFC 9110 section 9.3.2. Without a session, GET is 400 with a JSON body: so is HEAD,
    # with the same Content-Length and no content; the connection stays usable.
    get = b"GET /mcp HTTP/1.1\r\nHost: " + HOST + b"\r\nAccept: text/event-stream\r\n\r\n"
    head = get.replace(b"GET", b"HEAD", 1)
    (as_get,), _, _ = exchange(get)
    replies, channel, _ = exchange([head, post()], ["HEAD", "POST"])
    as_head = replies[0]
    assert as_head.status == as_get.status == 400 and as_head.body == b""
    assert as_head.header("content-length") == as_get.header("content-length") != "0"
    assert as_head.header("content-type") == as_get.header("content-type")
    assert replies[1].status == 200 and not channel.closed


def test_head_on_a_session_opens_no_stream() -> None:
    # RFC 9110 section 9.2.1: HEAD is safe: the SSE head a GET would get, and the session's
    # standalone stream stays free for the GET that follows.
    h = Harness()
    session_id, names = session_of(h)
    head = (b"HEAD /mcp HTTP/1.1\r\nHost: " + HOST + b"\r\nAccept: text/event-stream\r\n"
            + names + b"\r\n")
    replies, channel, _ = exchange(head, ["HEAD"], harness=h)
    reply = only_reply(replies)
    assert reply.status == 200 and reply.body == b"" and not channel.closed
    assert reply.header("content-type") == "text/event-stream"
    response = h.conn().send("GET", headers=h.session_headers(session_id))
    assert response.status == 200 and not response.done  # the stream is open: not 409


def test_head_where_get_is_not_allowed_is_405_without_content() -> None:
    replies, _, _ = exchange(b"HEAD /mcp HTTP/1.1\r\nHost: " + HOST + b"\r\n\r\n", ["HEAD"],
                             enable_get=False)
    reply = only_reply(replies)
    assert reply.status == 405 and reply.body == b"" and reply.header("allow") == "POST, DELETE"


def test_405_lists_the_methods_in_allow_and_each_is_not_405() -> None:
    # RFC 9110 section 15.5.6: "The origin server MUST generate an Allow header field in a
    # 405 (Method Not Allowed) response containing a list of the target resource's
    # currently supported methods."
    replies, channel, h = exchange(b"PUT /mcp HTTP/1.1\r\nHost: " + HOST
                                   + b"\r\nContent-Length: 0\r\n\r\n")
    reply = only_reply(replies)
    assert reply.status == 405 and not channel.closed
    allowed = [m.strip() for m in (reply.header("allow") or "").split(",")]
    assert allowed == ["POST", "GET", "HEAD", "DELETE"]
    for method in allowed:
        raw = (method.encode() + b" /mcp HTTP/1.1\r\nHost: " + HOST
               + b"\r\nAccept: application/json, text/event-stream\r\nContent-Length: 0\r\n\r\n")
        replies, _, _ = exchange(raw, [method], harness=h)
        assert only_reply(replies).status != 405, method


def test_interim_and_202_responses_carry_no_content() -> None:
    # RFC 9110 section 15: 1xx carry no content (RFC 9112 section 6.3 item 1); a 202 for a
    # notification is sent with Content-Length 0. Expect: 100-continue gets its 100 first.
    h = Harness()
    _, names = session_of(h)
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    raw = post(note, extra=names + b"Expect: 100-continue\r\n")
    replies, channel, _ = exchange(raw, harness=h)
    assert [r.status for r in replies] == [100, 202]
    assert replies[0].body == b"" and not replies[0].framed
    assert replies[1].header("content-length") == "0" and not channel.closed


# -- RFC 9112 section 9: persistence and pipelining ---------------------------------------------


def test_pipelined_requests_are_answered_in_order_in_one_write() -> None:
    # Section 9.3.2: "A server MAY process a sequence of pipelined requests in parallel if
    # they all have safe methods, but it MUST send the corresponding responses in the same
    # order that the requests were received."
    h = Harness()
    _, names = session_of(h)
    raw = b"".join(post(ping(n), extra=names) for n in range(1, 6))
    replies, channel, _ = exchange(raw, harness=h)
    assert [r.status for r in replies] == [200] * 5 and not channel.closed
    assert [json.loads(r.body)["id"] for r in replies] == [1, 2, 3, 4, 5]


def test_pipelined_requests_split_at_every_byte_are_answered_in_order() -> None:
    h = Harness()
    _, names = session_of(h)
    raw = post(ping(1), extra=names) + post(ping(2), extra=names)
    replies, _, _ = exchange([raw[i:i + 1] for i in range(len(raw))], harness=h)
    assert [json.loads(r.body)["id"] for r in replies] == [1, 2]


def test_connection_close_ends_the_connection_after_its_response() -> None:
    # Section 9.6: a server that receives "close" MUST initiate close after the response,
    # and MUST NOT process further requests on that connection.
    h = Harness()
    _, names = session_of(h)
    raw = post(ping(1), extra=names + b"Connection: close\r\n") + post(ping(2), extra=names)
    replies, channel, _ = exchange(raw, harness=h)
    reply = only_reply(replies)
    assert reply.status == 200 and json.loads(reply.body)["id"] == 1
    assert reply.header("connection") == "close" and channel.closed


def test_an_http_1_0_client_gets_one_response_and_close() -> None:
    # Section 9.3: an HTTP/1.0 connection is not persistent without keep-alive; we answer
    # in HTTP/1.1 (section 2.3) and close after the response.
    replies, channel, _ = exchange(post(version=b"HTTP/1.0") + post())
    reply = only_reply(replies)
    assert reply.status == 200 and reply.header("connection") == "close" and channel.closed


def test_a_refused_request_ends_the_connection_and_its_pipelined_followers() -> None:
    # After a framing error the bytes that follow cannot be trusted to start a request.
    raw = post(extra=b"X-Folded: a\r\n b\r\n") + post()
    replies, channel, _ = exchange(raw)
    assert only_reply(replies).status == 400 and channel.closed


# -- an unexpected exception stays on its connection --------------------------------------------


@pytest.mark.skipif(not str(_server.__file__).endswith(".py"), reason=(
    "patches a method of HTTPServer, which the compiled build cannot (the pure build runs it)"))
def test_an_exception_while_handling_a_request_is_500_and_closes_that_channel_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness()
    other = h.conn()
    assert other.send(body=init_body()).status == 200
    original = HTTPServer._post

    def boom(self: HTTPServer, channel: ServerChannel, request: Any) -> None:
        if "x-boom" in request.headers:
            raise RuntimeError("a bug")
        original(self, channel, request)

    monkeypatch.setattr(HTTPServer, "_post", boom)
    channel = h.server.new_channel(now=h.now)
    with pytest.raises(RuntimeError, match="a bug"):
        channel.receive_data(post(extra=b"X-Boom: 1\r\n") + post(), now=h.now)
    h.run()
    reply = only_reply(parse(bytes(h.raw_out[channel]), []))
    assert reply.status == 500 and reply.header("connection") == "close" and channel.closed
    assert b"a bug" not in h.raw_out[channel]  # the detail is never sent
    # the other connection (already open) and a new one are served
    assert other.send(body=init_body()).status == 200 and not other.channel.closed
    replies, fresh, _ = exchange(post(), harness=h)
    assert only_reply(replies).status == 200 and not fresh.closed


def test_an_exception_after_a_stream_started_cuts_it_short_without_a_second_head() -> None:
    h = Harness()
    _, names = session_of(h)
    get = (b"GET /mcp HTTP/1.1\r\nHost: " + HOST + b"\r\nAccept: text/event-stream\r\n"
           + names + b"\r\n")
    replies, channel, _ = exchange(get, harness=h)
    assert only_reply(replies).status == 200 and channel.stream is not None
    before = bytes(h.raw_out[channel])
    channel.fail()
    h.run()
    assert channel.closed and channel.stream is None
    assert bytes(h.raw_out[channel]) == before  # no 500 after a response began
    # the session's standalone stream is free again for a new GET
    replies, _, _ = exchange(get, harness=h)
    assert only_reply(replies).status == 200


def test_the_hardening_docs_list_every_refusal_and_target_form() -> None:
    # docs/http.rst "Hardening": what the server refuses, each with its section and status.

    text = (ROOT / "docs" / "http.rst").read_text("utf-8")
    section = text.split("\nHardening\n---------\n", 1)[1].split("\nThe client\n", 1)[0]
    flat = " ".join(section.split())
    for rule, (status, citation) in REFUSALS.items():
        for part in citation.split("; "):
            assert part.split(" (")[0] in flat, (rule, part)
        assert str(status) in flat, rule
    for _, citation in TARGET_FORMS.values():
        assert citation in flat


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/0.9", b"HTTP/3.1"])
def test_a_major_version_other_than_1_is_505_and_close(version: bytes) -> None:
    # RFC 9112 section 2.3 (the server's choice to refuse, RFC 9110 section 15.6.6); a minor
    # version above 1 is read as 1.1 (section 2.3: "the highest minor version ... compatible").
    replies, channel, _ = exchange(post(version=version))
    assert only_reply(replies).status == 505 and channel.closed
    replies, channel, _ = exchange(post(version=b"HTTP/1.9"))
    assert only_reply(replies).status == 200 and not channel.closed


# -- properties ---------------------------------------------------------------------------------

_TOKEN = st.text("abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1, max_size=12)
_VALUE = st.binary(max_size=20).map(
    lambda b: bytes(c for c in b if c in b"\t !#$%&'()*+,-./0123456789:;<=>?@ABCabc~\x80\xff"))


@settings(max_examples=60, deadline=None)
@given(fields=st.lists(st.tuples(_TOKEN, _VALUE), max_size=8), where=st.integers(0, 8),
       fold=st.sampled_from([b" ", b"\t", b"  \t"]), cuts=st.lists(st.integers(1, 600),
                                                                    max_size=4))
def test_a_fold_anywhere_in_the_fields_is_refused_however_the_bytes_arrive(
        fields: list[tuple[str, bytes]], where: int, fold: bytes, cuts: list[int]) -> None:
    # RFC 9112 section 5.2, whatever the other fields and however the reads cut the head.
    lines = [b"X-" + name.encode() + b": " + value for name, value in fields]
    lines.insert(min(where, len(lines)), b"X-Folded: a\r\n" + fold + b"b")
    raw = post(extra=b"".join(line + b"\r\n" for line in lines))
    points = sorted({c for c in cuts if c < len(raw)})
    pieces = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    replies, channel, h = exchange(pieces)
    assert only_reply(replies).status == 400 and channel.closed and h.events == []


@settings(max_examples=40, deadline=None)
@given(count=st.integers(1, 6), cuts=st.lists(st.integers(1, 3000), max_size=6))
def test_pipelined_requests_are_answered_in_order_however_the_bytes_arrive(
        count: int, cuts: list[int]) -> None:
    # RFC 9112 section 9.3.2.
    h = Harness()
    _, names = session_of(h)
    raw = b"".join(post(ping(n), extra=names) for n in range(1, count + 1))
    points = sorted({c for c in cuts if c < len(raw)})
    pieces = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    replies, channel, _ = exchange(pieces, harness=h)
    assert [json.loads(r.body)["id"] for r in replies] == list(range(1, count + 1))
    assert not channel.closed


@settings(max_examples=100, deadline=None)
@given(method=st.sampled_from(["GET", "POST", "OPTIONS", "CONNECT", "DELETE", "HEAD"]),
       target=st.one_of(
           st.sampled_from(["/mcp", "*", "localhost:8000", "http://localhost:8000/mcp",
                            "https://localhost/mcp?x=1", "mcp", "http://u@h/", "ftp://h/x"]),
           st.text("abcdefghijklmnopqrstuvwxyz0123456789/:?*@.[]%-=&", min_size=1,
                   max_size=30)))
def test_every_target_gets_the_answer_its_form_and_method_call_for(method: str,
                                                                   target: str) -> None:
    # RFC 9112 section 3.2 as TARGET_FORMS says: a form its method may not use is 400;
    # CONNECT with authority-form 501; OPTIONS * 200; the rest is routed (never 400 for
    # its form, never a crash).
    raw = (method.encode() + b" " + target.encode() + b" HTTP/1.1\r\nHost: " + HOST
           + b"\r\nAccept: application/json, text/event-stream\r\nContent-Length: 0\r\n\r\n")
    replies, _, _ = exchange(raw, [method])
    status = only_reply(replies).status
    form = target_form(target)
    if not target_allowed(method, form):
        assert status == 400
    elif form == "authority":
        assert status == 501
    elif form == "asterisk":
        assert status == 200
    else:
        assert status in (200, 400, 403, 404, 405, 406, 415), status


def test_an_error_after_a_head_request_on_the_same_connection_has_its_content() -> None:
    # A response to HEAD has no content; the 400 for a malformed request that follows it on
    # the same connection has (else its Content-Length would announce bytes never sent).
    head = b"HEAD /mcp HTTP/1.1\r\nHost: " + HOST + b"\r\nAccept: text/event-stream\r\n\r\n"
    h = Harness()
    channel = h.server.new_channel(now=h.now)
    channel.receive_data(head + b"NOT HTTP\r\n\r\n", now=h.now)
    h.run()
    out = bytes(h.raw_out[channel])
    replies = parse(out, ["HEAD", "GET"])
    assert [r.status for r in replies] == [400, 400] and channel.closed
    assert replies[0].body == b"" and replies[1].body != b""
    assert len(replies[1].body) == int(replies[1].header("content-length") or 0)
