"""The Streamable HTTP server, stateless era (2026-07-28), and the dual-era server: mirrored
headers, status codes, request-scoped streams, listen streams, closing a stream as the
cancellation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import CancelRequested, Request, ServerConnection
from mcp_sansio.http import ResponseMode, encode_header_value, param_headers
from tests.http_util import SERVER_INFO, Harness, init_body, stateless_meta, validate_messages

V = "2026-07-28"


def request(method: str, params: dict[str, Any] | None = None, request_id: int = 1,
            **meta: Any) -> dict[str, Any]:
    params = dict(params or {})
    params["_meta"] = stateless_meta(**meta)
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def headers(method: str, name: str | None = None, version: str = V,
            **params: str) -> list[tuple[str, str]]:
    out = [("mcp-protocol-version", version), ("mcp-method", method)]
    if name is not None:
        out.append(("mcp-name", encode_header_value(name)))
    out.extend((f"mcp-param-{k}", v) for k, v in params.items())
    return out


class Deferred:
    def __init__(self) -> None:
        self.requests: list[Any] = []

    def __call__(self, session: Any, event: Any) -> None:
        if isinstance(event, Request):
            self.requests.append((session, event))


def test_a_stateless_request_gets_json_and_no_session() -> None:
    h = Harness()
    r = h.conn().send(body=request("tools/list"), headers=headers("tools/list"))
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in r.headers
    result = r.json["result"]
    assert result["resultType"] == "complete" and "ttlMs" in result
    validate_messages(V, [r.json], {1: "tools/list"})
    assert not h.server.sessions
    (session, _), = [(s, e) for s, e in h.events if isinstance(e, Request)]
    assert session.id is None


def test_server_discover_is_answered_by_the_core() -> None:
    h = Harness()
    r = h.conn().send(body=request("server/discover"), headers=headers("server/discover"))
    assert r.status == 200 and V in r.json["result"]["supportedVersions"]
    validate_messages(V, [r.json], {1: "server/discover"})


def test_session_id_and_last_event_id_are_ignored() -> None:
    h = Harness()
    r = h.conn().send(body=request("tools/list"), headers=[
        *headers("tools/list"), ("mcp-session-id", "whatever"), ("last-event-id", "x:1")])
    assert r.status == 200 and "mcp-session-id" not in r.headers


@pytest.mark.parametrize(("hdrs", "why"), [
    ([("mcp-protocol-version", V)], "Mcp-Method header is required"),
    (headers("tools/call"), "Mcp-Method header 'tools/call' does not match"),
    ([*headers("tools/list", version="2026-07-28"), ("x", "y")], None),
])
def test_mcp_method_must_match(hdrs: list[tuple[str, str]], why: str | None) -> None:
    h = Harness()
    r = h.conn().send(body=request("tools/list"), headers=hdrs)
    if why is None:
        assert r.status == 200
    else:
        assert r.status == 400 and r.json["error"]["code"] == -32020
        assert why in r.json["error"]["message"] and r.json["id"] == 1


def test_version_header_must_match_the_meta() -> None:
    h = Harness()
    r = h.conn().send(body=request("tools/list", version="2026-07-28"),
                      headers=headers("tools/list", version="2025-11-25"))
    # A handshake-era version in the header: served as the handshake era -> session needed.
    assert r.status == 400
    body = request("tools/list")
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
    r = h.conn().send(body=body, headers=headers("tools/list"))
    assert r.status == 400 and r.json["error"]["code"] == -32020


def test_missing_version_header_with_stateless_meta_is_a_header_mismatch() -> None:
    h = Harness()
    r = h.conn().send(body=request("tools/list"), headers=[("mcp-method", "tools/list")])
    assert r.status == 400 and r.json["error"]["code"] == -32020


def test_unsupported_version_is_400_with_the_supported_list() -> None:
    h = Harness()
    r = h.conn().send(body=request("tools/list", version="2099-01-01"),
                      headers=headers("tools/list", version="2099-01-01"))
    assert r.status == 400
    error = r.json["error"]
    assert error["code"] == -32022 and V in error["data"]["supported"]
    assert error["data"]["requested"] == "2099-01-01"


def test_unknown_method_is_404_with_32601() -> None:
    h = Harness()
    r = h.conn().send(body=request("nope/nothing"), headers=headers("nope/nothing"))
    assert r.status == 404 and r.json["error"]["code"] == -32601
    # a method gated by a capability the server lacks: also -32601
    h2 = Harness(connection=lambda: ServerConnection(info=SERVER_INFO))
    r = h2.conn().send(body=request("tools/list"), headers=headers("tools/list"))
    assert r.status == 404 and r.json["error"]["code"] == -32601


def test_missing_meta_is_400_with_32602() -> None:
    h = Harness()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": V}}}
    r = h.conn().send(body=body, headers=headers("tools/list"))
    assert r.status == 400 and r.json["error"]["code"] == -32602


def test_missing_client_capability_is_400_with_32021() -> None:
    def app(session: Any, event: Any) -> None:
        if isinstance(event, Request):
            session.connection.require_client_capabilities(event.request_id,
                                                           {"sampling": {}})
    h = Harness(handler=app)
    r = h.conn().send(body=request("tools/call", {"name": "t", "arguments": {}}),
                      headers=headers("tools/call", "t"))
    assert r.status == 400 and r.json["error"]["code"] == -32021


def test_application_errors_keep_status_200() -> None:
    def app(session: Any, event: Any) -> None:
        if isinstance(event, Request):
            session.connection.send_error(event.request_id, -32603, "boom")
    h = Harness(handler=app)
    r = h.conn().send(body=request("tools/list"), headers=headers("tools/list"))
    assert r.status == 200 and r.json["error"]["code"] == -32603


@pytest.mark.parametrize("method", ["tools/call", "prompts/get", "resources/read"])
def test_mcp_name_is_required_and_compared(method: str) -> None:
    field = "uri" if method == "resources/read" else "name"
    value = "file:///x" if field == "uri" else "thing"
    h = Harness()
    params = {field: value, "arguments": {}} if method == "tools/call" else {field: value}
    r = h.conn().send(body=request(method, params), headers=headers(method))
    assert r.status == 400 and "Mcp-Name header is required" in r.json["error"]["message"]
    r = h.conn().send(body=request(method, params), headers=headers(method, "other"))
    assert r.status == 400 and r.json["error"]["code"] == -32020
    r = h.conn().send(body=request(method, params), headers=headers(method, value))
    assert r.status == 200


def test_mcp_name_in_base64() -> None:
    h = Harness()
    name = "héllo wörld "
    encoded = encode_header_value(name)
    assert encoded.startswith("=?base64?")
    body = request("tools/call", {"name": name, "arguments": {}})
    assert h.conn().send(body=body, headers=headers("tools/call", name)).status == 200
    bad = [("mcp-protocol-version", V), ("mcp-method", "tools/call"),
           ("mcp-name", "=?base64?!!!?=")]
    r = h.conn().send(body=body, headers=bad)
    assert r.status == 400 and "invalid characters" in r.json["error"]["message"]


TOOLS = {
    "sql": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "limit": {"type": "integer", "x-mcp-header": "Limit"},
        "opts": {"type": "object", "properties": {
            "dry": {"type": "boolean", "x-mcp-header": "Dry"}}},
        "query": {"type": "string"}}},
}


def param_harness() -> Harness:
    table = {name: param_headers(schema) for name, schema in TOOLS.items()}
    return Harness(tool_param_headers=table.get)


@pytest.mark.parametrize(("arguments", "params", "ok"), [
    ({"region": "us", "limit": 42, "opts": {"dry": True}},
     {"Region": "us", "Limit": "42", "Dry": "true"}, True),
    ({"region": "us", "limit": 42}, {"Region": "us", "Limit": "42.0"}, True),
    ({"region": "us"}, {"Region": "us", "Limit": "1"}, False),  # header without value
    ({"region": "us"}, {}, False),  # value without header
    ({"region": "us"}, {"Region": "eu"}, False),
    ({"region": "é"}, {"Region": encode_header_value("é")}, True),
    ({"region": "=?base64?x?="}, {"Region": encode_header_value("=?base64?x?=")}, True),
    ({"limit": 7}, {"Limit": "seven"}, False),
    ({"opts": {"dry": False}}, {"Dry": "False"}, False),
    ({"query": "select"}, {}, True),
])
def test_mcp_param_headers(arguments: dict[str, Any], params: dict[str, str], ok: bool) -> None:
    h = param_harness()
    body = request("tools/call", {"name": "sql", "arguments": arguments})
    r = h.conn().send(body=body, headers=headers("tools/call", "sql", **params))
    assert (r.status == 200) is ok, r
    if not ok:
        assert r.json["error"]["code"] == -32020


def test_unannotated_tools_ignore_param_headers() -> None:
    h = param_harness()
    body = request("tools/call", {"name": "other", "arguments": {"region": "x"}})
    assert h.conn().send(body=body, headers=headers("tools/call", "other",
                                                    Region="y")).status == 200


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_are_405_for_the_stateless_era(method: str) -> None:
    h = Harness()
    r = h.conn().send(method, headers=[("mcp-protocol-version", V), ("mcp-session-id", "x")])
    assert r.status == 405 and "POST" in r.headers["allow"]
    only = Harness(connection=lambda: ServerConnection(info=SERVER_INFO, versions=[V]))
    r = only.conn().send(method)
    assert r.status == 405 and r.headers["allow"] == "POST"


def test_stateless_only_server_refuses_initialize_naming_its_versions() -> None:
    h = Harness(connection=lambda: ServerConnection(info=SERVER_INFO, versions=[V]))
    r = h.conn().send(body=init_body())
    assert r.status == 400 and r.json["error"]["code"] == -32602
    assert r.json["error"]["data"]["supported"] == [V]
    r = h.conn().send(body=request("tools/list"))  # no MCP-Protocol-Version
    assert r.status == 400 and r.json["error"]["code"] == -32020


def test_notifications_responses_and_batches() -> None:
    h = Harness()
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    assert h.conn().send(body=note, headers=[("mcp-protocol-version", V)]).status == 202
    resp = {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert h.conn().send(body=resp, headers=[("mcp-protocol-version", V)]).status == 400
    batch = [request("tools/list")]
    assert h.conn().send(body=batch, headers=headers("tools/list")).status == 400


def test_progress_and_logs_stream_before_the_response() -> None:
    app = Deferred()
    h = Harness(handler=app)
    body = request("tools/call", {"name": "t", "arguments": {}},
                   **{"io.modelcontextprotocol/logLevel": "info", "progressToken": "tok"})
    r = h.conn().send(body=body, headers=headers("tools/call", "t"))
    # Nothing is said before the first message (HTTPServer._defer_sse): the answer could
    # still be a refusal that needs a status of its own.
    assert r.status is None
    session, req = app.requests[0]
    session.connection.send_progress(req.request_id, 1, message="working")
    session.flush()
    h.run()
    # the first message is not the answer: an SSE stream, and no priming event
    # (2026-07-28 streams are not resumable)
    assert r.status == 200 and r.is_sse and not r.done
    session.connection.send_notification("notifications/message",
                                         {"level": "info", "data": "x"},
                                         related_request_id=req.request_id)
    session.connection.send_notification("notifications/message",
                                         {"level": "debug", "data": "dropped"},
                                         related_request_id=req.request_id)
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    h.run()
    assert r.done
    assert [m.get("method") for m in r.messages] == [
        "notifications/progress", "notifications/message", None]
    assert all(e.id is None for e in r.events)
    validate_messages(V, r.messages, {1: "tools/call"})


@pytest.mark.parametrize("mode", [ResponseMode.SSE, ResponseMode.AUTO])
@pytest.mark.parametrize(("code", "status"), [(-32021, 400), (-32602, 400), (-32601, 404),
                                            (-32603, 200)])
def test_a_later_refusal_still_gets_its_http_status(code: int, status: int,
                                                    mode: ResponseMode) -> None:
    """The handler answers after the request was processed (from a thread pool, after an
    await): its error is still the first message, so it goes out as JSON with the status
    the revision requires (-32021: 400), not as an event on a 200 SSE stream -- in SSE mode
    as in AUTO mode, which decides by the first message in both eras."""
    app = Deferred()
    h = Harness(handler=app, response_mode=mode)
    r = h.conn().send(body=request("tools/call", {"name": "t", "arguments": {}}),
                      headers=headers("tools/call", "t"))
    assert r.status is None
    session, req = app.requests[0]
    data = {"requiredCapabilities": {"sampling": {}}} if code == -32021 else None
    session.connection.send_error(req.request_id, code, "no", data)
    session.flush()
    h.run()
    assert r.done and r.status == status
    assert r.headers["content-type"] == "application/json"
    assert r.json["error"]["code"] == code


def test_handshake_era_auto_mode_decides_by_the_first_message_too() -> None:
    """AUTO in the handshake era: a later answer that is the first message is JSON (an
    error is a 200 there: the transport worked), one that follows a notification is on an
    SSE stream; SSE mode opens the stream as soon as the request is processed (its priming
    event is the client's point of resumption)."""
    for mode, later_kind in ((ResponseMode.AUTO, "application/json"),
                             (ResponseMode.SSE, "text/event-stream")):
        app = Deferred()
        h = Harness(handler=app, response_mode=mode)
        conn = h.conn()
        sid = h.initialize(conn)
        hdrs = h.session_headers(sid)
        r = conn.send(body={"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                            "params": {"name": "t", "arguments": {}}}, headers=hdrs)
        assert (r.status is None) is (mode is ResponseMode.AUTO)
        session, req = next((s, e) for s, e in app.requests if e.method == "tools/call")
        session.connection.send_error(req.request_id, -32602, "no")
        session.flush()
        h.run()
        assert r.done and r.status == 200 and r.headers["content-type"] == later_kind
        assert r.messages[-1]["error"]["code"] == -32602


def test_a_silent_request_opens_its_stream_after_one_keepalive_interval() -> None:
    """A request that says nothing for a keep-alive interval gets its SSE head then (and
    keep-alive comments after), so that idle timeouts of proxies and clients do not cut it;
    its answer is then an event on that stream, status 200."""
    app = Deferred()
    h = Harness(handler=app, keepalive_interval=20.0)
    conn = h.conn()
    r = conn.send(body=request("tools/call", {"name": "t", "arguments": {}}),
                  headers=headers("tools/call", "t"))
    h.advance(19.0)
    assert r.status is None and not conn.raw
    h.advance(1.0)
    assert r.status == 200 and r.is_sse and not r.done
    written = len(conn.raw)
    h.advance(20.0)
    assert len(conn.raw) > written  # a keep-alive comment
    session, req = app.requests[0]
    session.connection.send_error(req.request_id, -32021, "no",
                                  {"requiredCapabilities": {"sampling": {}}})
    session.flush()
    h.run()
    assert r.done and r.status == 200
    assert r.messages[-1]["error"]["code"] == -32021


def test_json_mode_drops_request_scoped_notifications() -> None:
    app = Deferred()
    h = Harness(handler=app, response_mode=ResponseMode.JSON)
    body = request("tools/call", {"name": "t", "arguments": {}}, progressToken="tok")
    r = h.conn().send(body=body, headers=headers("tools/call", "t"))
    session, req = app.requests[0]
    session.connection.send_progress(req.request_id, 1)
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    h.run()
    assert r.headers["content-type"] == "application/json" and r.json["id"] == 1


def test_closing_the_stream_cancels_the_request() -> None:
    app = Deferred()
    h = Harness(handler=app)
    conn = h.conn()
    r = conn.send(body=request("tools/call", {"name": "t", "arguments": {}}, request_id=8),
                  headers=headers("tools/call", "t"))
    assert r.status is None and not r.done  # running, nothing said yet (no SSE head)
    conn.close()
    cancels = h.events_of(CancelRequested)
    assert [(c.request_id, c.method) for c in cancels] == [(8, "tools/call")]
    session, req = app.requests[0]
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    h.run()  # dropped quietly by the core, nothing to write anywhere


def test_listen_stream_acknowledges_then_carries_broadcasts_until_closed() -> None:
    h = Harness(handler=None)
    conn = h.conn()
    body = request("subscriptions/listen",
                   {"notifications": {"toolsListChanged": True, "promptsListChanged": True}})
    r = conn.send(body=body, headers=headers("subscriptions/listen"))
    assert r.status == 200 and r.is_sse and not r.done
    ack = r.messages[0]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"toolsListChanged": True}  # prompts: no listChanged
    assert h.server.broadcast("notifications/tools/list_changed") == 1
    assert h.server.broadcast("notifications/prompts/list_changed") == 1  # offered, not sent
    h.run()
    assert [m["method"] for m in r.messages] == [
        "notifications/subscriptions/acknowledged", "notifications/tools/list_changed"]
    assert r.messages[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 1
    validate_messages(V, r.messages, {})
    conn.close()
    assert [c.method for c in h.events_of(CancelRequested)] == ["subscriptions/listen"]
    assert h.server.broadcast("notifications/tools/list_changed") == 0


def test_listen_in_json_mode_is_still_a_stream() -> None:
    h = Harness(response_mode=ResponseMode.JSON, handler=None)
    r = h.conn().send(body=request("subscriptions/listen",
                                   {"notifications": {"toolsListChanged": True}}),
                      headers=headers("subscriptions/listen"))
    assert r.is_sse and r.messages[0]["method"] == "notifications/subscriptions/acknowledged"


def test_server_ends_a_listen_stream_with_a_result() -> None:
    app = Deferred()
    h = Harness(handler=app)
    r = h.conn().send(body=request("subscriptions/listen",
                                   {"notifications": {"toolsListChanged": True}}),
                      headers=headers("subscriptions/listen"))
    session, req = app.requests[0]
    session.connection.send_response(req.request_id, {})
    session.flush()
    h.run()
    assert r.done and r.messages[-1]["id"] == 1
    validate_messages(V, r.messages, {1: "subscriptions/listen"})


def test_dual_server_serves_both_eras_side_by_side() -> None:
    h = Harness()
    sid = h.initialize()
    old = h.conn().send(body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                        headers=h.session_headers(sid))
    new = h.conn().send(body=request("tools/list"), headers=headers("tools/list"))
    assert old.status == new.status == 200
    assert "resultType" not in old.json["result"] and new.json["result"]["resultType"]
    eras = {s.era.value for s, e in h.events if isinstance(e, Request)}
    assert eras == {"handshake", "stateless"}


def test_concurrent_stateless_requests_may_share_ids() -> None:
    app = Deferred()
    h = Harness(handler=app)
    a = h.conn().send(body=request("tools/list", request_id=1), headers=headers("tools/list"))
    b = h.conn().send(body=request("tools/list", request_id=1), headers=headers("tools/list"))
    for session, req in app.requests:
        session.connection.send_response(req.request_id, {"tools": [{
            "name": f"from-{id(session)}", "inputSchema": {"type": "object"}}]})
        session.flush()
    h.run()
    names = {a.messages[-1]["result"]["tools"][0]["name"],
             b.messages[-1]["result"]["tools"][0]["name"]}
    assert len(names) == 2


@given(name=st.text(min_size=1, max_size=30))
def test_any_name_survives_the_header_encoding(name: str) -> None:
    h = Harness()
    body = request("tools/call", {"name": name, "arguments": {}})
    try:
        hdr = encode_header_value(name)
    except UnicodeEncodeError:  # lone surrogates cannot be sent as JSON either
        return
    r = h.conn().send(body=body, headers=[*headers("tools/call"), ("mcp-name", hdr)])
    assert r.status == 200, (name, hdr, r)


@pytest.mark.parametrize("params", [None, {}, {"_meta": {}}])
def test_no_stateless_meta_at_all_under_a_stateless_header_is_400_with_32602(
    params: dict[str, Any] | None,
) -> None:
    # The header names 2026-07-28, so the request is judged in that era even on a dual-era
    # server, not routed to the handshake (where server/discover would be unknown).
    h = Harness()
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "server/discover"}
    if params is not None:
        body["params"] = params
    r = h.conn().send(body=body, headers=headers("server/discover"))
    assert r.status == 400 and r.json["error"]["code"] == -32602


def test_initialize_under_a_stateless_header_is_404_with_32601() -> None:
    h = Harness()
    r = h.conn().send(body=request("initialize", {"protocolVersion": V}),
                      headers=headers("initialize"))
    assert r.status == 404 and r.json["error"]["code"] == -32601


# -- the same through the adapters: the handler kind does not change the status --------------


def _post_call(port: int, tool: str) -> tuple[int, str, Any]:
    """A blocking http.client POST of a 2026-07-28 tools/call: status, type, body."""
    import http.client
    import json

    body = json.dumps(request("tools/call", {"name": tool, "arguments": {}}))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/mcp", body, {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json", "MCP-Protocol-Version": V,
            "Mcp-Method": "tools/call", "Mcp-Name": tool})
        response = conn.getresponse()
        return response.status, response.getheader("content-type") or "", response.read()
    finally:
        conn.close()


def test_a_plain_def_handler_in_the_thread_pool_refuses_with_400() -> None:
    """A plain ``def`` handler runs in the threads adapter's pool, so it answers after the
    request was processed: its -32021 still goes out as JSON with status 400."""
    import json

    from mcp_sansio.adapters.threading import start_http
    from mcp_sansio.adapters.threading.session import ThreadContext

    from mcp_sansio.app.server import Server

    server = Server("refusals")

    @server.tool()
    def needs_sampling(ctx: ThreadContext) -> str:
        return str(ctx.sample({"messages": [], "maxTokens": 1}))

    with start_http(server) as service:
        status, kind, body = _post_call(service.port, "needs_sampling")
    assert (status, kind) == (400, "application/json")
    error = json.loads(body)["error"]
    assert error["code"] == -32021 and error["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_an_async_handler_refusing_after_an_await_gets_400_on_asyncio() -> None:
    import asyncio
    import json

    from mcp_sansio.adapters.asyncio import start_http

    from mcp_sansio.app.server import Server

    server = Server("refusals")

    @server.tool()
    async def needs_sampling(ctx: Any) -> str:
        await asyncio.sleep(0.01)  # suspends first: the request is processed meanwhile
        return str(await ctx.sample({"messages": [], "maxTokens": 1}))

    async def main() -> tuple[int, str, Any]:
        async with start_http(server) as service:
            return await asyncio.to_thread(_post_call, service.port, "needs_sampling")

    status, kind, body = asyncio.run(asyncio.wait_for(main(), 60))
    assert (status, kind) == (400, "application/json")
    assert json.loads(body)["error"]["code"] == -32021


def _post_tool(port: int, tool: str, arguments: dict[str, Any],
               extra: dict[str, str]) -> tuple[int, Any]:
    """A blocking 2026-07-28 tools/call with extra headers: the status and the last message."""
    import http.client
    import json

    body = json.dumps(request("tools/call", {"name": tool, "arguments": arguments}))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/mcp", body, {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json", "MCP-Protocol-Version": V,
            "Mcp-Method": "tools/call", "Mcp-Name": tool, **extra})
        response = conn.getresponse()
        data = response.read().decode()
    finally:
        conn.close()
    if (response.getheader("content-type") or "").startswith("text/event-stream"):
        data = [line[5:] for line in data.splitlines() if line.startswith("data:")][-1]
    return response.status, json.loads(data)


def _param_header_story(port: int, server: Any) -> None:
    """A tool marked x-mcp-header is added while the server runs: its Mcp-Param-* header is
    required and compared; the tool is then replaced by one with another annotation, then
    removed, and the checks follow."""
    region = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]}

    @server.tool(name="where", input_schema=region)
    def where(region: str) -> str:
        return f"in {region}"

    status, message = _post_tool(port, "where", {"region": "eu"}, {})
    assert (status, message["error"]["code"]) == (400, -32020)  # the header is missing
    status, message = _post_tool(port, "where", {"region": "eu"}, {"Mcp-Param-Region": "us"})
    assert (status, message["error"]["code"]) == (400, -32020)  # it does not match
    status, message = _post_tool(port, "where", {"region": "eu"}, {"Mcp-Param-Region": "eu"})
    assert status == 200 and message["result"]["content"][0]["text"] == "in eu"

    zone = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Zone"}}, "required": ["region"]}

    @server.tool(name="where", input_schema=zone)
    def where_again(region: str) -> str:
        return f"zone {region}"

    status, message = _post_tool(port, "where", {"region": "eu"}, {"Mcp-Param-Region": "eu"})
    assert (status, message["error"]["code"]) == (400, -32020)  # now Mcp-Param-Zone
    status, message = _post_tool(port, "where", {"region": "eu"}, {"Mcp-Param-Zone": "eu"})
    assert status == 200 and message["result"]["content"][0]["text"] == "zone eu"

    del server.tools["where"]
    status, message = _post_tool(port, "where", {"region": "eu"}, {})
    # an unknown tool now: refused as such, not for a header it no longer has
    assert message["error"]["code"] != -32020, (status, message)


@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threading"])
def test_every_runtime_checks_mcp_param_headers_by_default(runtime: str) -> None:
    from mcp_sansio.app.server import Server

    server = Server("param-headers")
    if runtime == "threading":
        from mcp_sansio.adapters.threading import start_http as start_threads

        with start_threads(server) as service:
            _param_header_story(service.port, server)
    elif runtime == "trio":
        import trio
        from mcp_sansio.adapters.trio import start_http as start_trio

        async def on_trio() -> None:
            with trio.fail_after(60):
                async with start_trio(server) as service:
                    await trio.to_thread.run_sync(_param_header_story, service.port, server)
        trio.run(on_trio)
    else:
        import asyncio

        from mcp_sansio.adapters.asyncio import start_http as start_asyncio

        async def on_asyncio() -> None:
            async with start_asyncio(server) as service:
                await asyncio.to_thread(_param_header_story, service.port, server)
        asyncio.run(asyncio.wait_for(on_asyncio(), 60))
