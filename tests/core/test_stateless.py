"""The stateless era (2026-07-28) and dual-era negotiation, through ConnectionPair.

ConnectionPair validates every emitted message against the schema of the revision in force,
so every message of these tests is checked against the 2026-07-28 schema when stateless.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_sansio import (
    HANDSHAKE_REVISIONS,
    NEED_DATA,
    CancelRequested,
    ClientConnection,
    CloseReason,
    ConnectionClosed,
    ErrorCode,
    ErrorResponse,
    Initialized,
    InputRequired,
    LocalProtocolError,
    MessageRejected,
    Progress,
    Request,
    RequestCancelled,
    RequestFailed,
    Response,
    ServerConnection,
    State,
    SubscriptionAcknowledged,
)
from mcp_sansio._stateless import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    InvalidRequestState,
    open_state,
    seal_state,
)
from mcp_sansio._versions import Era, judge_probe
from tests import schemas
from tests.pair import CLIENT_INFO, SERVER_INFO, ConnectionPair

SL = "2026-07-28"
SERVER_CAPS = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True},
    "prompts": {},
    "logging": {},
}
CLIENT_CAPS = {"elicitation": {}, "roots": {}}
KEY = b"k" * 32


def server(**kwargs: Any) -> ServerConnection:
    kwargs.setdefault("capabilities", SERVER_CAPS)
    return ServerConnection(info=SERVER_INFO, **kwargs)


def client(**kwargs: Any) -> ClientConnection:
    kwargs.setdefault("capabilities", CLIENT_CAPS)
    return ClientConnection(info=CLIENT_INFO, **kwargs)


def stateless_pair(**server_kwargs: Any) -> ConnectionPair:
    pair = ConnectionPair(client(versions=[SL]), server(versions=[SL], **server_kwargs))
    pair.connect()
    pair.take("client")
    pair.take("server")
    return pair


def drain(conn: Any) -> list[Any]:
    out = []
    while (event := conn.next_event()) is not NEED_DATA:
        out.append(event)
    return out


def wire(conn: Any) -> list[dict[str, Any]]:
    return [json.loads(x) for x in conn.data_to_send().splitlines()]


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def meta(**extra: Any) -> dict[str, Any]:
    return {META_PROTOCOL_VERSION: SL, META_CLIENT_CAPABILITIES: CLIENT_CAPS,
            META_CLIENT_INFO: CLIENT_INFO, **extra}


# -- the era matrix ---------------------------------------------------------------------------


def test_stateless_client_and_server() -> None:
    pair = ConnectionPair(client(versions=[SL]), server(versions=[SL], instructions="hi",
                                                        cache_ttl_ms=5000))
    pair.connect()
    [ready] = pair.take("client")
    assert ready == Initialized(protocol_version=SL, peer_capabilities=SERVER_CAPS,
                                peer_info=SERVER_INFO, instructions="hi")
    assert pair.client.state is State.STATELESS and pair.client.era is Era.STATELESS
    assert pair.client.discovery is not None
    assert pair.client.discovery["supportedVersions"] == [SL]
    probe = pair.client_sent[0]
    assert probe["method"] == "server/discover"
    assert probe["params"]["_meta"] == meta()
    # A list request: meta added automatically, result decorated by the core.
    rid = pair.client.send_request("tools/list", now=0)
    pair.pump()
    [request] = pair.take("server")
    assert request.params["_meta"] == meta()
    pair.server.send_response(rid, {"tools": []})
    pair.pump()
    [response] = pair.take("client")
    assert isinstance(response, Response)
    assert response.result["resultType"] == "complete"
    assert response.result["ttlMs"] == 5000 and response.result["cacheScope"] == "private"
    assert response.result["_meta"][META_SERVER_INFO] == SERVER_INFO
    schemas.validate(SL, "ListToolsResult", response.result)


def test_a_result_meta_of_the_handler_is_kept_and_not_changed() -> None:
    pair = stateless_pair()
    handler_meta = {"x": 1, META_SERVER_INFO: {"name": "other", "version": "2"}}
    for meta_given in (handler_meta, None):
        rid = pair.client.send_request("tools/list", now=0)
        pair.pump()
        pair.take("server")
        result: dict[str, Any] = {"tools": []}
        if meta_given is not None:
            result["_meta"] = meta_given
        pair.server.send_response(rid, result)
        pair.pump()
        [response] = pair.take("client")
        expected = {META_SERVER_INFO: SERVER_INFO} if meta_given is None else handler_meta
        assert response.result["_meta"] == expected
    assert handler_meta == {"x": 1, META_SERVER_INFO: {"name": "other", "version": "2"}}


def test_dual_client_falls_back_to_a_handshake_only_server() -> None:
    pair = ConnectionPair(client(), server(versions=HANDSHAKE_REVISIONS))
    pair.connect()
    assert pair.client.state is State.OPERATING is pair.server.state
    assert pair.client.era is Era.HANDSHAKE
    assert [m.get("method") for m in pair.client_sent] == [
        "server/discover", "initialize", "notifications/initialized"]
    assert pair.server_sent[0]["error"]["code"] == ErrorCode.METHOD_NOT_FOUND
    [ready] = pair.take("client")
    assert isinstance(ready, Initialized) and ready.protocol_version == "2025-11-25"


@pytest.mark.parametrize("code", [-32601, -32600, -32602, -32603, -32000, 0])
def test_fallback_does_not_depend_on_one_error_code(code: int) -> None:
    c = client()
    probe = c.connect(now=0)
    wire(c)
    c.receive_data(line({"jsonrpc": "2.0", "id": probe,
                         "error": {"code": code, "message": "nope"}}))
    assert drain(c) == []
    assert [m["method"] for m in wire(c)] == ["initialize"]
    assert c.state is State.INITIALIZING


def test_probe_timeout_falls_back_to_initialize() -> None:
    c = client(probe_timeout=2)
    probe = c.connect(now=0)
    wire(c)
    assert c.next_deadline() == 2
    c.handle_timeout(2)
    assert drain(c) == []
    assert [m["method"] for m in wire(c)] == ["initialize"]  # no cancel before initialize
    # A discover answer arriving after the fallback is late, not an error.
    c.receive_data(line({"jsonrpc": "2.0", "id": probe, "result": {}}))
    assert [type(e).__name__ for e in drain(c)] == ["LateResponse"]


def test_handshake_only_client_and_dual_server() -> None:
    pair = ConnectionPair(client(versions=HANDSHAKE_REVISIONS), server())
    pair.connect()
    assert pair.client.state is State.OPERATING is pair.server.state
    assert pair.client_sent[0]["method"] == "initialize"


def test_dual_client_and_dual_server_choose_stateless() -> None:
    pair = ConnectionPair(client(), server())
    pair.connect()
    assert pair.client.state is State.STATELESS is pair.server.state
    assert [m.get("method") for m in pair.client_sent] == ["server/discover"]
    assert pair.client.discovery is not None
    assert set(pair.client.discovery["supportedVersions"]) == {*HANDSHAKE_REVISIONS, SL}


def test_stateless_only_client_cannot_talk_to_a_handshake_only_server() -> None:
    pair = ConnectionPair(client(versions=[SL]), server(versions=HANDSHAKE_REVISIONS))
    pair.client.connect(now=0)
    pair.pump()
    [closed] = pair.take("client")
    assert isinstance(closed, ConnectionClosed) and closed.reason is CloseReason.VERSION_REJECTED


def test_a_stateless_error_is_recognised_as_the_stateless_era() -> None:
    c = client()
    probe = c.connect(now=0)
    wire(c)
    c.receive_data(line({"jsonrpc": "2.0", "id": probe, "error": {
        "code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": [SL], "requested": SL}}}))
    [ready] = drain(c)
    assert isinstance(ready, Initialized) and c.state is State.STATELESS


@pytest.mark.parametrize(("response", "era"), [
    ({"result": {"supportedVersions": [SL], "capabilities": {}}}, Era.STATELESS),
    ({"error": {"code": -32022, "message": "x"}}, Era.STATELESS),
    ({"error": {"code": -32021, "message": "x"}}, Era.STATELESS),
    ({"error": {"code": -32020, "message": "x"}}, Era.STATELESS),
    ({"error": {"code": -32601, "message": "x"}}, Era.HANDSHAKE),
    ({"error": {"code": -32602, "message": "x"}}, Era.HANDSHAKE),
    ({"result": {}}, Era.HANDSHAKE),
    ({"result": {"protocolVersion": "2025-11-25"}}, Era.HANDSHAKE),
    ({}, Era.HANDSHAKE),
])
def test_judge_probe(response: dict[str, Any], era: Era) -> None:
    assert judge_probe(response) is era


def test_dual_server_serves_stateless_then_accepts_initialize() -> None:
    srv = server()
    srv.receive_data(line({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                           "params": {"_meta": meta()}}))
    [request] = drain(srv)
    assert isinstance(request, Request) and srv.state is State.STATELESS
    srv.send_response(1, {"tools": []})
    wire(srv)
    srv.receive_data(line({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT_INFO}}))
    drain(srv)
    [reply] = wire(srv)
    assert reply["result"]["protocolVersion"] == "2025-06-18"
    assert srv.state is State.INITIALIZING
    # A connection that completed the handshake refuses stateless requests.
    srv.receive_data(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    drain(srv)
    srv.receive_data(line({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                           "params": {"_meta": meta()}}))
    drain(srv)
    [refused] = wire(srv)
    assert refused["error"]["code"] == ErrorCode.INVALID_REQUEST


def test_stateless_only_server_names_its_versions_when_refusing_initialize() -> None:
    srv = server(versions=[SL])
    srv.receive_data(line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO}}))
    drain(srv)
    [reply] = wire(srv)
    assert reply["error"]["data"] == {"supported": [SL], "requested": "2025-11-25"}
    assert srv.state is State.IDLE


# -- per-request checks on the server -------------------------------------------------------


@pytest.mark.parametrize(("request_meta", "code"), [
    ({META_CLIENT_CAPABILITIES: {}}, ErrorCode.INVALID_PARAMS),
    ({META_PROTOCOL_VERSION: SL}, ErrorCode.INVALID_PARAMS),
    ({META_PROTOCOL_VERSION: SL, META_CLIENT_CAPABILITIES: []}, ErrorCode.INVALID_PARAMS),
    ({META_PROTOCOL_VERSION: "2025-11-25", META_CLIENT_CAPABILITIES: {}},
     ErrorCode.UNSUPPORTED_PROTOCOL_VERSION),
    ({META_PROTOCOL_VERSION: "2099-01-01", META_CLIENT_CAPABILITIES: {}},
     ErrorCode.UNSUPPORTED_PROTOCOL_VERSION),
    ({**meta(), "io.modelcontextprotocol/logLevel": "loud"}, ErrorCode.INVALID_PARAMS),
])
def test_each_request_is_checked_on_its_own(request_meta: dict[str, Any], code: int) -> None:
    srv = server()
    # A good request first: nothing from it may carry over to the next one.
    srv.receive_data(line({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                           "params": {"_meta": meta()}}))
    drain(srv)
    srv.receive_data(line({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                           "params": {"_meta": request_meta}}))
    events = drain(srv)
    [reply] = wire(srv)
    assert reply["id"] == 2 and reply["error"]["code"] == code
    assert isinstance(events[0], MessageRejected)
    if code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
        assert reply["error"]["data"] == {
            "supported": [SL], "requested": request_meta[META_PROTOCOL_VERSION]}
        schemas.validate(SL, "UnsupportedProtocolVersionError", reply)


def test_stateless_only_server_refuses_requests_without_meta_with_invalid_params() -> None:
    srv = server(versions=[SL])
    srv.receive_data(line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    drain(srv)
    [reply] = wire(srv)
    assert reply["error"]["code"] == ErrorCode.INVALID_PARAMS


@pytest.mark.parametrize("method", ["ping", "logging/setLevel", "resources/subscribe",
                                    "resources/unsubscribe", "no/such"])
def test_removed_methods_are_refused_by_a_stateless_server(method: str) -> None:
    srv = server(versions=[SL])
    srv.receive_data(line({"jsonrpc": "2.0", "id": 1, "method": method,
                           "params": {"_meta": meta(), "level": "info", "uri": "a:b"}}))
    drain(srv)
    [reply] = wire(srv)
    assert reply["error"]["code"] == ErrorCode.METHOD_NOT_FOUND


def test_removed_methods_are_refused_by_a_stateless_client() -> None:
    pair = stateless_pair()
    for method in ("ping", "logging/setLevel", "resources/subscribe", "initialize"):
        with pytest.raises(LocalProtocolError):
            pair.client.send_request(method, {"level": "info", "uri": "a:b"})
    with pytest.raises(LocalProtocolError):
        pair.client.send_notification("notifications/roots/list_changed")
    with pytest.raises(LocalProtocolError):
        pair.server.send_request("roots/list")
    # a server->client request arriving at a stateless client is refused
    pair.client.receive_data(line({"jsonrpc": "2.0", "id": 9, "method": "roots/list"}))
    drain(pair.client)
    [reply] = wire(pair.client)
    assert reply["error"]["code"] == ErrorCode.METHOD_NOT_FOUND


def test_missing_required_client_capability_helper() -> None:
    pair = stateless_pair()
    rid = pair.client.send_request("tools/call", {"name": "needs-sampling"}, now=0)
    pair.pump()
    pair.take("server")
    assert pair.server.require_client_capabilities(rid, {"elicitation": {}}) is True
    assert pair.server.require_client_capabilities(rid, {"sampling": {"tools": {}}}) is False
    pair.pump()
    [error] = pair.take("client")
    assert isinstance(error, ErrorResponse)
    assert error.code == ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert error.data == {"requiredCapabilities": {"sampling": {"tools": {}}}}
    schemas.validate(SL, "MissingRequiredClientCapabilityError", pair.server_sent[-1])


# -- MRTR ---------------------------------------------------------------------------------


ELICIT = {"method": "elicitation/create", "params": {
    "mode": "form", "message": "Your name?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}
ELICIT_ANSWER = {"action": "accept", "content": {"name": "Ada"}}


@pytest.mark.parametrize("key", [None, KEY])
def test_mrtr_several_rounds(key: bytes | None) -> None:
    pair = stateless_pair(request_state_key=key)
    first = pair.client.send_request("tools/call", {"name": "wizard", "arguments": {"a": 1}},
                                     now=0)
    pair.pump()
    [request] = pair.take("server")
    pair.server.send_input_required(first, {"name": ELICIT}, "step-1")
    pair.pump()
    [needed] = pair.take("client")
    assert needed == InputRequired(request_id=first, method="tools/call",
                                   input_requests={"name": ELICIT},
                                   request_state=needed.request_state)
    schemas.validate(SL, "InputRequiredResult", pair.server_sent[-1]["result"])
    if key is None:
        assert needed.request_state == "step-1"
    else:
        assert needed.request_state != "step-1"  # sealed
    second = pair.client.retry_with_input(first, {"name": ELICIT_ANSWER}, now=1)
    assert second != first
    pair.pump()
    [retry] = pair.take("server")
    assert retry.request_id == second
    assert retry.params["arguments"] == {"a": 1} and retry.params["name"] == "wizard"
    assert retry.params["inputResponses"] == {"name": ELICIT_ANSWER}
    assert retry.params["requestState"] == "step-1"  # opened by the core when sealed
    # A second round with state only, then completion.
    pair.server.send_input_required(second, None, "step-2")
    pair.pump()
    [needed2] = pair.take("client")
    assert needed2.input_requests == {}
    third = pair.client.retry_with_input(second, now=2)
    pair.pump()
    [retry2] = pair.take("server")
    assert "inputResponses" not in retry2.params and retry2.params["requestState"] == "step-2"
    pair.server.send_response(third, {"content": [{"type": "text", "text": "done"}]})
    pair.pump()
    [done] = pair.take("client")
    assert isinstance(done, Response) and done.request_id == third
    assert request.request_id == first


def test_mrtr_tampered_and_expired_state_are_refused() -> None:
    pair = stateless_pair(request_state_key=KEY, request_state_ttl=10)
    first = pair.client.send_request("tools/call", {"name": "t"}, now=0)
    pair.pump()
    pair.server.send_input_required(first, None, "secret")
    pair.pump()
    [needed] = pair.take("client")
    sealed = needed.request_state
    assert sealed is not None
    tampered = sealed[:-2] + ("AA" if sealed[-2:] != "AA" else "BB")
    for state, name, now in ((tampered, "t", 1), (sealed, "other-tool", 1), (sealed, "t", 11)):
        pair.server.receive_data(line({"jsonrpc": "2.0", "id": f"r{now}{name}",
                                       "method": "tools/call", "params": {
                                           "name": name, "requestState": state,
                                           "_meta": meta()}}), now=now)
        events = drain(pair.server)
        [reply] = wire(pair.server)
        assert reply["error"]["code"] == ErrorCode.INVALID_PARAMS, (state, name, now)
        assert isinstance(events[0], MessageRejected)


def test_seal_and_open_state_helpers() -> None:
    token = seal_state(KEY, "s", method="prompts/get", name="p", expires_at=100)
    assert open_state(KEY, token, method="prompts/get", name="p", now=99) == "s"
    for kwargs in ({"method": "tools/call", "name": "p", "now": 1},
                   {"method": "prompts/get", "name": "q", "now": 1},
                   {"method": "prompts/get", "name": "p", "now": 100}):
        with pytest.raises(InvalidRequestState):
            open_state(KEY, token, **kwargs)
    with pytest.raises(InvalidRequestState):
        open_state(b"other-key", token, method="prompts/get", name="p", now=1)
    for junk in ("", "a", "a.b.c", "!!.??", 5):
        with pytest.raises(InvalidRequestState):
            open_state(KEY, junk, method="prompts/get", name="p", now=1)


def test_input_requests_need_the_capabilities_the_request_declared() -> None:
    pair = stateless_pair()
    rid = pair.client.send_request("tools/call", {"name": "t"}, now=0)
    pair.pump()
    sampling = {"method": "sampling/createMessage", "params": {
        "messages": [], "maxTokens": 10}}
    with pytest.raises(LocalProtocolError, match="sampling"):
        pair.server.send_input_required(rid, {"s": sampling})
    url_mode = {"method": "elicitation/create", "params": {
        "mode": "url", "message": "m", "url": "https://x.example", "elicitationId": "1"}}
    with pytest.raises(LocalProtocolError, match=r"elicitation\.url"):
        pair.server.send_input_required(rid, {"u": url_mode})
    with pytest.raises(LocalProtocolError):
        pair.server.send_input_required(rid, {"x": {"method": "tools/list"}})
    with pytest.raises(LocalProtocolError):
        pair.server.send_input_required(rid)
    pair.server.send_input_required(rid, {"roots": {"method": "roots/list"}})  # declared
    assert pair.server.data_to_send()


def test_only_three_methods_may_ask_for_input() -> None:
    pair = stateless_pair()
    rid = pair.client.send_request("tools/list", now=0)
    pair.pump()
    with pytest.raises(LocalProtocolError):
        pair.server.send_input_required(rid, None, "x")
    with pytest.raises(LocalProtocolError):
        pair.server.send_response(rid, {"resultType": "input_required", "requestState": "x"})
    # and a client refuses such a result
    pair.client.receive_data(line({"jsonrpc": "2.0", "id": rid, "result": {
        "resultType": "input_required", "requestState": "x"}}))
    [failed] = drain(pair.client)
    assert isinstance(failed, RequestFailed) and failed.request_id == rid


def test_unknown_result_type_is_an_error_event_and_missing_means_complete() -> None:
    pair = stateless_pair()
    a = pair.client.send_request("tools/call", {"name": "x"}, now=0)
    b = pair.client.send_request("tools/call", {"name": "y"}, now=0)
    wire(pair.client)
    pair.client.receive_data(line({"jsonrpc": "2.0", "id": a, "result": {
        "resultType": "mystery"}}))
    pair.client.receive_data(line({"jsonrpc": "2.0", "id": b, "result": {"content": []}}))
    first, second = drain(pair.client)
    assert isinstance(first, RequestFailed) and "mystery" in first.reason
    assert isinstance(second, Response) and second.request_id == b


def test_retry_with_input_checks_the_keys() -> None:
    pair = stateless_pair()
    rid = pair.client.send_request("prompts/get", {"name": "p"}, now=0)
    pair.pump()
    pair.server.send_input_required(rid, {"a": ELICIT, "b": {"method": "roots/list"}})
    pair.pump()
    with pytest.raises(LocalProtocolError):
        pair.client.retry_with_input(rid, {"a": ELICIT_ANSWER})
    with pytest.raises(LocalProtocolError):
        pair.client.retry_with_input(12345, {})
    pair.client.retry_with_input(rid, {"a": ELICIT_ANSWER, "b": {"roots": []}})


# -- listen streams --------------------------------------------------------------------------


def open_listen(pair: ConnectionPair, wanted: dict[str, Any]) -> Any:
    listen = pair.client.listen(wanted, now=0)
    pair.pump()
    return listen


def test_listen_stream_acknowledges_the_honoured_subset_and_tags_notifications() -> None:
    pair = stateless_pair()
    listen = open_listen(pair, {"toolsListChanged": True, "promptsListChanged": True,
                                "resourceSubscriptions": ["file:///a"]})
    honoured = {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}
    assert pair.take("client") == [SubscriptionAcknowledged(request_id=listen,
                                                            notifications=honoured)]
    [request] = pair.take("server")
    assert isinstance(request, Request) and request.method == "subscriptions/listen"
    assert pair.server_sent[-1]["params"]["_meta"] == {META_SUBSCRIPTION_ID: listen}
    # honoured types go out tagged; others are never sent
    pair.server.send_notification("notifications/tools/list_changed")
    pair.server.send_notification("notifications/prompts/list_changed")
    pair.server.send_notification("notifications/resources/updated", {"uri": "file:///a"})
    pair.server.send_notification("notifications/resources/updated", {"uri": "file:///b"})
    pair.pump()
    events = pair.take("client")
    assert [(e.method, e.params["_meta"][META_SUBSCRIPTION_ID]) for e in events] == [
        ("notifications/tools/list_changed", listen),
        ("notifications/resources/updated", listen),
    ]
    # the server ends it gracefully with a result
    pair.server.send_response(listen, {})
    pair.pump()
    [end] = pair.take("client")
    assert isinstance(end, Response) and end.result["_meta"][META_SUBSCRIPTION_ID] == listen
    schemas.validate(SL, "SubscriptionsListenResult", end.result)
    pair.server.send_notification("notifications/tools/list_changed")
    assert pair.server.data_to_send() == b""


def test_client_reports_unacknowledged_and_untagged_notifications() -> None:
    pair = stateless_pair()
    listen = pair.client.listen({"toolsListChanged": True}, now=0)
    wire(pair.client)
    tag = {"_meta": {META_SUBSCRIPTION_ID: listen}}
    tools = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": tag}
    pair.client.receive_data(line(tools))  # before the acknowledgement
    pair.client.receive_data(line({"jsonrpc": "2.0",
                                   "method": "notifications/subscriptions/acknowledged",
                                   "params": {"notifications": {"toolsListChanged": True},
                                              **tag}}))
    pair.client.receive_data(line(tools))  # fine now
    pair.client.receive_data(line({"jsonrpc": "2.0",
                                   "method": "notifications/tools/list_changed"}))  # untagged
    pair.client.receive_data(line({"jsonrpc": "2.0",
                                   "method": "notifications/resources/updated",
                                   "params": {"uri": "x:y", **tag}}))  # not acknowledged
    kinds = [type(e).__name__ for e in drain(pair.client)]
    assert kinds == ["MessageRejected", "SubscriptionAcknowledged", "Notification",
                     "MessageRejected", "MessageRejected"]


def test_cancelling_a_listen_stream() -> None:
    pair = stateless_pair()
    listen = open_listen(pair, {"toolsListChanged": True})
    pair.take("client")
    pair.take("server")
    pair.client.cancel(listen, reason="done")
    pair.pump()
    assert pair.take("client") == [RequestCancelled(request_id=listen,
                                                    method="subscriptions/listen",
                                                    reason="done")]
    assert pair.take("server") == [CancelRequested(request_id=listen,
                                                   method="subscriptions/listen",
                                                   reason="done")]
    pair.server.send_notification("notifications/tools/list_changed")
    assert pair.server.data_to_send() == b""  # nothing more for a cancelled stream


def test_server_may_end_a_listen_with_a_cancel_on_stdio() -> None:
    pair = stateless_pair()
    listen = open_listen(pair, {"toolsListChanged": True})
    pair.take("client")
    pair.server.send_notification("notifications/cancelled", {"requestId": listen})
    pair.pump()
    assert pair.take("client") == [RequestCancelled(request_id=listen,
                                                    method="subscriptions/listen", reason=None)]
    with pytest.raises(LocalProtocolError):
        pair.server.send_notification("notifications/cancelled", {"requestId": 999})


def test_listen_has_no_timeout_by_default() -> None:
    pair = stateless_pair()
    open_listen(pair, {"toolsListChanged": True})
    assert pair.client.next_deadline() is None


# -- progress and logging belong to their request ----------------------------------------------


def test_log_messages_only_for_requests_that_asked_for_a_level() -> None:
    pair = stateless_pair()
    quiet = pair.client.send_request("tools/call", {"name": "a"}, now=0)
    chatty = pair.client.send_request(
        "tools/call",
        {"name": "b", "_meta": {"io.modelcontextprotocol/logLevel": "warning"}}, now=0)
    pair.pump()
    pair.take("server")
    for related in (quiet, chatty, None):
        for level in ("info", "error"):
            pair.server.send_notification("notifications/message",
                                          {"level": level, "data": "x"},
                                          related_request_id=related)
    sent = wire(pair.server)
    assert [m["params"]["level"] for m in sent] == ["error"]


def test_progress_flows_server_to_client_for_its_request() -> None:
    pair = stateless_pair()
    rid = pair.client.send_request("tools/call", {"name": "slow"}, now=0, progress=True)
    pair.pump()
    pair.take("server")
    pair.server.send_progress(rid, 1, total=2, message="half")
    pair.pump()
    assert pair.take("client") == [Progress(request_id=rid, token=rid, progress=1, total=2,
                                            message="half")]
    with pytest.raises(LocalProtocolError):
        pair.client.send_notification("notifications/progress",
                                      {"progressToken": 1, "progress": 1})


def test_cancel_silences_the_server_for_that_request() -> None:
    pair = stateless_pair()
    rid = pair.client.send_request("tools/call", {"name": "slow"}, now=0, progress=True)
    pair.pump()
    pair.client.cancel(rid)
    pair.pump()
    pair.server.send_progress(rid, 1)
    pair.server.send_response(rid, {"content": []})
    pair.server.send_notification("notifications/message", {"level": "error", "data": "x"},
                                  related_request_id=rid)
    assert pair.server.data_to_send() == b""


def test_a_cached_era_verdict_skips_or_commits_the_probe() -> None:
    c = client()
    c.connect(now=0, era=Era.HANDSHAKE)
    assert [m["method"] for m in wire(c)] == ["initialize"]
    c = client()
    probe = c.connect(now=0, era=Era.STATELESS)
    wire(c)
    c.receive_data(line({"jsonrpc": "2.0", "id": probe,
                         "error": {"code": -32601, "message": "Method not found"}}))
    [closed] = drain(c)
    assert isinstance(closed, ConnectionClosed) and closed.reason is CloseReason.VERSION_REJECTED
    assert wire(c) == []


@pytest.mark.parametrize("filter_", [None, [], "tools"])
def test_a_listen_without_a_filter_object_is_refused_before_any_acknowledgement(
    filter_: Any,
) -> None:
    srv = server()
    params: dict[str, Any] = {"_meta": meta()}
    if filter_ is not None:
        params["notifications"] = filter_
    srv.receive_data(line({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                           "params": params}))
    [rejected] = drain(srv)
    assert isinstance(rejected, MessageRejected)
    [reply] = wire(srv)
    assert reply["error"]["code"] == ErrorCode.INVALID_PARAMS
