"""A handshake-era session's negotiated state as a record (mcp_sansio._snapshot): a
connection restored from a snapshot behaves as the one that negotiated -- same answers, same
gating, same events -- for random sessions and random traffic (hypothesis); bad records are
refused whole."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio import LocalProtocolError, Request, ServerConnection
from mcp_sansio._errors import NEED_DATA
from mcp_sansio._snapshot import FIELDS, refresh_session
from mcp_sansio._versions import FEATURES
from mcp_sansio.stores import restore_session, snapshot_session

HANDSHAKE = [v for v in FEATURES if FEATURES[v].handshake]
SERVER_CAPS = {"logging": {}, "tools": {"listChanged": True},
               "resources": {"subscribe": True, "listChanged": True}}


def factory() -> ServerConnection:
    return ServerConnection(info={"name": "s", "version": "1"}, capabilities=SERVER_CAPS,
                            instructions="be nice")


def run(conn: ServerConnection, messages: list[Any], now: float) -> list[Any]:
    """Feed messages one by one; answer every request with an empty result (or the error the
    connection refuses it with); return what came out, events and wire, in order."""
    seen: list[Any] = []
    for message in messages:
        conn.receive_message(message, now=now)
        while (event := conn.next_event()) is not NEED_DATA:
            seen.append(repr(event))
            if isinstance(event, Request):
                conn.send_response(event.request_id, {})
        seen.extend(json.loads(data) for _, _, data in conn.encoded_messages_to_send())
    return seen


def request(n: int, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": n, "method": method}
    if params is not None:
        message["params"] = params
    return message


client_caps = st.fixed_dictionaries({}, optional={
    "roots": st.sampled_from([{}, {"listChanged": True}]),
    "sampling": st.just({}),
    "elicitation": st.just({}),
})
levels = st.sampled_from(["debug", "info", "warning", "error", "emergency"])
uris = st.sampled_from(["file:///a", "file:///b", "mem://c"])
follow_up = st.lists(st.one_of(
    st.builds(lambda: ("ping", None)),
    st.builds(lambda: ("tools/list", {})),
    st.builds(lambda lv: ("logging/setLevel", {"level": lv}), levels),
    st.builds(lambda u: ("resources/subscribe", {"uri": u}), uris),
    st.builds(lambda u: ("resources/unsubscribe", {"uri": u}), uris),
    st.builds(lambda: ("completion/complete", {"ref": {"type": "ref/prompt", "name": "p"},
                                               "argument": {"name": "a", "value": ""}})),
    st.builds(lambda: ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "c", "version": "1"}})),
), max_size=8)


@settings(max_examples=80)
@given(version=st.sampled_from(HANDSHAKE), caps=client_caps, initialized=st.booleans(),
       before=follow_up, after=follow_up, server_sends=st.sampled_from(
           [None, "roots/list", "sampling/createMessage", "elicitation/create"]))
def test_restored_session_behaves_as_the_original(
    version: str, caps: dict[str, Any], initialized: bool, before: list[Any],
    after: list[Any], server_sends: str | None,
) -> None:
    original = factory()
    opening = [request(0, "initialize", {"protocolVersion": version, "capabilities": caps,
                                         "clientInfo": {"name": "c", "version": "2"}})]
    if initialized:
        opening.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
    opening += [request(i + 1, m, p) for i, (m, p) in enumerate(before)]
    run(original, opening, 1.0)
    record = snapshot_session(original)
    # It is a JSON record: it survives a store
    record = json.loads(json.dumps(record))
    restored = restore_session(factory(), record)
    assert snapshot_session(restored) == record
    script = [request(100 + i, m, p) for i, (m, p) in enumerate(after)]
    if not initialized:
        script.insert(0, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert run(restored, script, 2.0) == run(original, script, 2.0)
    assert snapshot_session(restored) == snapshot_session(original)
    # the server's own requests are gated by the restored client capabilities alike
    if server_sends is not None:
        params = {"messages": [], "maxTokens": 1} if server_sends.startswith("sampling") else (
            {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}
            if server_sends.startswith("elicitation") else None)
        outcomes = []
        for conn in (original, restored):
            try:
                conn.send_request(server_sends, params, now=3.0)
                outcomes.append([json.loads(d) for _, _, d in conn.encoded_messages_to_send()])
            except LocalProtocolError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]


def test_snapshot_needs_a_negotiated_session() -> None:
    conn = factory()
    with pytest.raises(ValueError):
        snapshot_session(conn)
    run(conn, [request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "c", "version": "1"}})], 0.0)
    record = snapshot_session(conn)
    assert record["state"] == "initializing"
    assert record["protocolVersion"] == "2025-06-18"
    assert record["serverCapabilities"] == SERVER_CAPS
    assert set(record) == set(FIELDS)


def good_record() -> dict[str, Any]:
    conn = factory()
    run(conn, [request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                         "clientInfo": {"name": "c", "version": "1"}}),
               {"jsonrpc": "2.0", "method": "notifications/initialized"}], 0.0)
    return snapshot_session(conn)


@pytest.mark.parametrize("field, value", [
    ("format", 2), ("protocolVersion", "1999-01-01"), ("protocolVersion", 5),
    ("state", "closed"), ("clientCapabilities", []), ("clientInfo", None),
    ("logLevel", "loud"), ("subscriptions", "file:///a"), ("subscriptions", [1]),
    ("instructions", 3), ("serverInfo", "s"),
])
def test_a_bad_record_is_refused_whole(field: str, value: Any) -> None:
    record = good_record()
    record[field] = value
    conn = factory()
    with pytest.raises(ValueError):
        restore_session(conn, record)
    assert conn.protocol_version is None and conn.state.value == "idle"


def test_records_with_missing_or_extra_fields_and_stale_connections_are_refused() -> None:
    record = good_record()
    with pytest.raises(ValueError):
        restore_session(factory(), {k: v for k, v in record.items() if k != "logLevel"})
    with pytest.raises(ValueError):
        restore_session(factory(), {**record, "extra": 1})
    used = restore_session(factory(), record)
    with pytest.raises(ValueError):
        restore_session(used, record)
    # a revision this server does not speak
    narrow = ServerConnection(versions=["2025-06-18"])
    with pytest.raises(ValueError):
        restore_session(narrow, record)


def test_refresh_brings_a_copy_up_to_date_and_refuses_another_sessions_record() -> None:
    original = factory()
    run(original, [request(0, "initialize", {"protocolVersion": "2025-11-25",
                                             "capabilities": {},
                                             "clientInfo": {"name": "c", "version": "1"}})], 0)
    copy = restore_session(factory(), snapshot_session(original))
    run(original, [{"jsonrpc": "2.0", "method": "notifications/initialized"},
                   request(1, "logging/setLevel", {"level": "error"}),
                   request(2, "resources/subscribe", {"uri": "file:///a"})], 1)
    refresh_session(copy, snapshot_session(original))
    assert snapshot_session(copy) == snapshot_session(original)
    assert copy.state.value == "operating" and copy.log_level == "error"
    other = snapshot_session(original)
    other["clientInfo"] = {"name": "someone else", "version": "1"}
    with pytest.raises(ValueError):
        refresh_session(copy, other)
    with pytest.raises(ValueError):
        refresh_session(copy, {"format": 1})
