"""Facts derived from the method table, and the one stateless admission function.

The admission function is called by both the connection and the HTTP server; these tests
check its rows on their own (order, codes, data), that it never raises on any JSON params,
and that both callers give the same answer for the same bad request.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sansio import ServerConnection
from mcp_sansio._admission import (
    ADMISSION,
    ENVELOPE_ONLY,
    Refusal,
    admit_after_envelope,
    admit_stateless,
    batch_refusal,
    unsupported_version,
)
from mcp_sansio._capabilities import (
    INPUT_REQUEST_METHODS,
    METHODS,
    MRTR_METHODS,
    PROMPT_METHODS,
    SERVER_WIDE_NOTIFICATIONS,
    SESSION_OPENERS,
    Kind,
    lookup,
    subject_field,
    subject_of,
)
from mcp_sansio._stateless import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION
from tests.http_util import Harness

SL = "2026-07-28"
META_OK = {META_PROTOCOL_VERSION: SL, META_CLIENT_CAPABILITIES: {}}


# -- facts from the table ------------------------------------------------------------------


def test_initialize_is_the_only_session_opener() -> None:
    assert {"initialize"} == SESSION_OPENERS


def test_ping_is_the_only_request_answered_whatever_is_in_flight() -> None:
    # The prompt column (ping.mdx: respond promptly); the in-flight limit spares it
    # (tests/core/test_requests.py, the limits).
    assert {"ping"} == PROMPT_METHODS
    assert all(rule.kind is Kind.REQUEST for rule in METHODS if rule.prompt)


def test_input_request_methods_come_with_their_client_capability() -> None:
    assert INPUT_REQUEST_METHODS == {
        "elicitation/create": "elicitation",
        "sampling/createMessage": "sampling",
        "roots/list": "roots",
    }
    # The same methods are real server requests in the handshake era.
    for method in INPUT_REQUEST_METHODS:
        rule = lookup(method, "2025-11-25")
        assert rule is not None and rule.kind is Kind.REQUEST


def test_server_wide_notifications_are_the_list_changed_family_sent_by_servers() -> None:
    assert {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
    } == SERVER_WIDE_NOTIFICATIONS
    # roots/list_changed is the client's: not server-wide.
    assert "notifications/roots/list_changed" not in SERVER_WIDE_NOTIFICATIONS


def test_mrtr_methods() -> None:
    assert {"tools/call", "prompts/get", "resources/read"} == MRTR_METHODS


def test_subject_column() -> None:
    assert subject_field("tools/call") == "name"
    assert subject_field("resources/read") == "uri"
    assert subject_field("resources/subscribe") == "uri"
    assert subject_field("tasks/get") == "taskId"
    assert subject_field("tools/list") is None
    assert subject_of("tools/call", {"name": "echo"}) == "echo"
    assert subject_of("resources/read", {"uri": "file:///a", "name": "x"}) == "file:///a"
    assert subject_of("tools/call", {"name": 3}) is None
    assert subject_of("tools/call", None) is None
    assert subject_of("ping", {"name": "x"}) is None


def test_every_row_with_a_subject_names_the_same_field_in_every_revision() -> None:
    fields: dict[str, set[str]] = {}
    for rule in METHODS:
        if rule.subject is not None:
            fields.setdefault(rule.method, set()).add(rule.subject)
    assert all(len(found) == 1 for found in fields.values())


# -- admission rows ------------------------------------------------------------------------


def test_the_rows_are_checked_envelope_first() -> None:
    assert [name for name, _ in ADMISSION] == ["envelope", "version"]
    # Both wrong: the envelope's answer wins.
    refusal = admit_stateless({"_meta": {META_PROTOCOL_VERSION: "1999-01-01"}}, (SL,))
    assert isinstance(refusal, Refusal) and refusal.code == -32602


def test_admitted_carries_what_the_meta_declared() -> None:
    meta = {**META_OK, "progressToken": 7}
    admitted = admit_stateless({"_meta": meta}, (SL,))
    assert admitted == (SL, {}, meta)


def test_missing_or_malformed_meta_is_invalid_params() -> None:
    for params in (None, {}, {"_meta": []}, {"_meta": {META_PROTOCOL_VERSION: SL}},
                   {"_meta": {META_PROTOCOL_VERSION: 1, META_CLIENT_CAPABILITIES: {}}},
                   {"_meta": {META_PROTOCOL_VERSION: SL, META_CLIENT_CAPABILITIES: []}}):
        refusal = admit_stateless(params, (SL,))
        assert isinstance(refusal, Refusal), params
        assert refusal.code == -32602 and META_PROTOCOL_VERSION in refusal.message


def test_an_unsupported_version_names_the_supported_ones() -> None:
    refusal = admit_stateless({"_meta": {**META_OK, META_PROTOCOL_VERSION: "2099-01-01"}},
                              (SL,))
    assert refusal == Refusal(-32022, "Unsupported protocol version",
                              {"supported": [SL], "requested": "2099-01-01"})
    assert unsupported_version("x", ["a"]).data == {"supported": ["a"], "requested": "x"}


def test_only_restricts_the_rows() -> None:
    params = {"_meta": {**META_OK, META_PROTOCOL_VERSION: "2099-01-01"}}
    assert not isinstance(admit_stateless(params, (SL,), only=("envelope",)), Refusal)


def test_batches_only_in_a_revision_that_has_them() -> None:
    assert batch_refusal("2025-03-26", "2025-03-26") is None
    for negotiated in (None, "2024-11-05", "2025-06-18", "2025-11-25", SL):
        refusal = batch_refusal(negotiated, "R")
        assert refusal is not None and refusal.code == -32600 and "revision R" in refusal.message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=3),
    max_leaves=10,
)


# The first draw builds the recursive JSON strategy, which on a loaded or cold machine can
# take over a second (seen once on a fresh clone): a slow start is not a failure here.
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(
    st.sampled_from(["_meta", "name", "x"]),
    st.one_of(json_values, st.fixed_dictionaries({}, optional={
        META_PROTOCOL_VERSION: st.sampled_from([SL, "2025-11-25", 3, None]),
        META_CLIENT_CAPABILITIES: json_values,
    })),
))
def test_admission_never_raises_and_admits_only_a_whole_envelope(params: dict[str, Any]) -> None:
    outcome = admit_stateless(params, (SL,))
    if not isinstance(outcome, Refusal):
        version, capabilities, _ = outcome
        assert version == SL and type(capabilities) is dict
    else:
        assert outcome.code in (-32602, -32022)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(
    st.sampled_from(["_meta", "name"]),
    st.one_of(json_values, st.fixed_dictionaries({}, optional={
        META_PROTOCOL_VERSION: st.sampled_from([SL, "2025-11-25", "2099-01-01", 3]),
        META_CLIENT_CAPABILITIES: json_values,
    })),
))
def test_the_envelope_then_the_rest_is_the_whole_admission(params: dict[str, Any]) -> None:
    # The HTTP server admits the envelope, compares the mirrored headers, and hands what it
    # admitted to the connection, which runs only the rows after it: the same outcome.
    whole = admit_stateless(params, (SL,))
    envelope = admit_stateless(params, (SL,), only=ENVELOPE_ONLY)
    if isinstance(envelope, Refusal):
        assert whole == envelope
    else:
        assert admit_after_envelope(envelope, (SL,)) == whole


# -- both callers answer alike -------------------------------------------------------------


def _connection_answer(params: dict[str, Any]) -> dict[str, Any]:
    conn = ServerConnection(versions=[SL], capabilities={"tools": {}})
    conn.receive_message({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
    conn.events()
    [(message, _)] = conn.messages_to_send()
    return message["error"]  # type: ignore[no-any-return]


def _http_answer(params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    h = Harness(connection=lambda: ServerConnection(versions=[SL], capabilities={"tools": {}}))
    r = h.conn().send(body={"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                            "params": params},
                      headers=[("mcp-protocol-version", SL), ("mcp-method", "tools/list")])
    return r.status, r.json["error"]


def test_the_connection_and_the_http_server_refuse_a_bad_envelope_alike() -> None:
    for meta in ({}, {META_PROTOCOL_VERSION: SL}, {META_CLIENT_CAPABILITIES: {}}):
        status, http_error = _http_answer({"_meta": meta})
        assert status == 400
        assert http_error == _connection_answer({"_meta": meta})
        assert http_error["code"] == -32602


def test_the_connection_answers_an_unsupported_version_from_the_admission_rows() -> None:
    meta = {**META_OK, META_PROTOCOL_VERSION: "2099-01-01"}
    conn_error = _connection_answer({"_meta": meta})
    assert conn_error["code"] == -32022
    assert conn_error["data"] == {"supported": [SL], "requested": "2099-01-01"}


def test_a_batch_is_refused_alike_by_both() -> None:
    conn = ServerConnection(versions=[SL])
    conn.receive_message([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    conn.events()
    [(message, _)] = conn.messages_to_send()
    h = Harness(connection=lambda: ServerConnection(versions=[SL], capabilities={"tools": {}}))
    r = h.conn().send(body=[{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
                      headers=[("mcp-protocol-version", SL), ("mcp-method", "ping")])
    assert r.status == 400 and r.json["error"] == message["error"]
