"""The HTTP server's composition: its options in one validated ServerConfig, and the drain
that reads the server's own state (``needs_drain``) to know when it is done."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_sansio import NEED_DATA, Request, ServerConnection
from mcp_sansio.http import HTTPServer, ResponseMode, ServerConfig
from tests.http_util import SERVER_INFO, init_body


def factory() -> ServerConnection:
    return ServerConnection(info=SERVER_INFO, capabilities={"tools": {}})


def post(body: dict[str, Any], **headers: str) -> bytes:
    data = json.dumps(body).encode()
    head = ["POST /mcp HTTP/1.1", "host: localhost",
            "accept: application/json, text/event-stream", "content-type: application/json",
            *(f"{k.replace('_', '-')}: {v}" for k, v in headers.items()),
            f"content-length: {len(data)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


@pytest.mark.parametrize(("options", "complaint"), [
    ({"sessionless": True, "legacy_sse_path": "/sse"}, "needs sessions"),
    ({"stream_tag": "a-b"}, "letters and digits"),
    ({"session_id_prefix": "a b"}, "visible ASCII"),
    ({"session_id_prefix": "x" * 65}, "at most 64"),
    ({"wire": "nope"}, "unknown wire"),
])
def test_contradicting_or_malformed_options_are_refused_when_the_config_is_built(
        options: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        ServerConfig(**options)
    with pytest.raises(ValueError, match=complaint):  # the keywords build the same config
        HTTPServer(factory, new_session_id=str, **options)
    with pytest.raises(ValueError, match=complaint):  # and a copy is validated again
        ServerConfig().replace(**options)


def test_a_config_and_keywords_on_top_of_it() -> None:
    config = ServerConfig(path="/other", response_mode=ResponseMode.JSON)
    server = HTTPServer(factory, config, new_session_id=str, max_sessions=3)
    assert server.config.path == "/other" and server.path == "/other"
    assert server.config.response_mode is ResponseMode.JSON
    assert server.max_sessions == 3 and config.max_sessions != 3  # the given one unchanged
    server.max_sessions = 5
    assert server.config.max_sessions == 5
    with pytest.raises(TypeError):
        HTTPServer(factory, new_session_id=str, no_such_option=1)


def test_the_server_says_when_a_drain_has_nothing_left() -> None:
    server = HTTPServer(factory, new_session_id=lambda: "s1",
                        response_mode=ResponseMode.JSON)
    channel = server.new_channel(now=0.0)
    assert not server.needs_drain
    channel.receive_data(post(init_body()), now=1.0)
    assert server.needs_drain  # a session with an event, a channel to write
    seen = []
    while (item := server.next_event()) is not NEED_DATA:
        seen.append(type(item[1]))
    assert server.needs_drain  # the answer is routed but not yet written
    out = b"".join(data for _, data in server.data_to_send())
    assert out.startswith(b"HTTP/1.1 200") and b"mcp-session-id: s1" in out
    assert not server.needs_drain
    # A request whose handler answers later: nothing is left until it does.
    headers = {"mcp_session_id": "s1", "mcp_protocol_version": "2025-11-25"}
    channel.receive_data(post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                              **headers), now=2.0)
    channel.receive_data(post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                              **headers), now=2.0)
    requests = []
    while server.needs_drain:
        while (item := server.next_event()) is not NEED_DATA:
            if isinstance(item[1], Request):
                requests.append(item)
        server.data_to_send()
    assert [event.method for _, event in requests] == ["tools/list"]
    session, event = requests[0]
    session.connection.send_response(event.request_id, {"tools": []})
    session.flush()  # sent outside the handling of an event: the server is told
    assert server.needs_drain
    assert server.next_event() is NEED_DATA
    out = b"".join(data for _, data in server.data_to_send())
    assert b'"tools":[]' in out and not server.needs_drain
