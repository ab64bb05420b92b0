"""The connection's sub-states on their own: listen streams, input_required retries, and the
pure functions of the handshake and the era probe.

The connection tests (test_stateless.py, test_lifecycle.py) cover them through the engine;
these pin each module's contract directly, so a change inside one is caught where it is made.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import CloseReason, InputRequired, Notification, SubscriptionAcknowledged
from mcp_sansio._handshake import (
    answer_initialize,
    discover_result,
    initialize_params,
    judge_probe_answer,
    read_initialize_result,
)
from mcp_sansio._listen import LISTEN_ACK, ListenStreams
from mcp_sansio._mrtr import InputRetries, check_input_requests
from mcp_sansio._stateless import META_SERVER_INFO, META_SUBSCRIPTION_ID

SL = "2026-07-28"
INFO = {"name": "t", "version": "1"}

# -- listen streams ----------------------------------------------------------------------------


def test_a_server_honours_only_what_its_capabilities_declare() -> None:
    streams = ListenStreams()
    ack = streams.open(7, {"notifications": {"toolsListChanged": True,
                                             "promptsListChanged": True,
                                             "resourceSubscriptions": ["a", 3, "b"]}},
                       {"tools": {"listChanged": True}, "resources": {"subscribe": True}})
    assert ack["method"] == LISTEN_ACK
    assert ack["params"] == {"notifications": {"toolsListChanged": True,
                                               "resourceSubscriptions": ["a", "b"]},
                             "_meta": {META_SUBSCRIPTION_ID: 7}}
    fanned = list(streams.fan_out("notifications/tools/list_changed", None))
    assert fanned == [(7, {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                           "params": {"_meta": {META_SUBSCRIPTION_ID: 7}}})]
    assert list(streams.fan_out("notifications/prompts/list_changed", None)) == []
    assert [i for i, _ in streams.fan_out("notifications/resources/updated", {"uri": "b"})] == [7]
    assert list(streams.fan_out("notifications/resources/updated", {"uri": "c"})) == []
    streams.discard(7)
    assert 7 not in streams and list(streams.fan_out(
        "notifications/tools/list_changed", None)) == []


def test_a_client_needs_the_acknowledgement_first_then_only_what_it_granted() -> None:
    streams = ListenStreams()
    streams.expect(1)
    tagged = {"_meta": {META_SUBSCRIPTION_ID: 1}}
    early = streams.receive("notifications/tools/list_changed", tagged)
    assert early == ("notifications/tools/list_changed arrived before the listen stream was "
                     "acknowledged", 1)
    ack = streams.receive(LISTEN_ACK, {**tagged, "notifications": {"toolsListChanged": True}})
    assert ack == SubscriptionAcknowledged(request_id=1,
                                           notifications={"toolsListChanged": True})
    assert isinstance(streams.receive(LISTEN_ACK, {**tagged, "notifications": {}}), tuple)
    assert streams.receive("notifications/tools/list_changed", tagged) == Notification(
        method="notifications/tools/list_changed", params=tagged)
    refused = streams.receive("notifications/prompts/list_changed", tagged)
    assert isinstance(refused, tuple) and refused[1] == 1
    untagged = streams.receive("notifications/tools/list_changed", {})
    assert isinstance(untagged, tuple) and untagged[1] is None


@given(st.sampled_from([LISTEN_ACK, "notifications/tools/list_changed",
                        "notifications/resources/updated"]),
       st.dictionaries(st.sampled_from(["_meta", "notifications", "uri"]),
                       st.none() | st.integers() | st.lists(st.integers(), max_size=2)
                       | st.dictionaries(st.sampled_from([META_SUBSCRIPTION_ID, "x"]),
                                         st.integers(0, 2) | st.lists(st.integers()),
                                         max_size=2), max_size=3))
def test_receiving_anything_never_raises(method: str, params: dict[str, Any]) -> None:
    streams = ListenStreams()
    streams.expect(1)
    streams.receive(method, params)


# -- input_required retries --------------------------------------------------------------------


def test_a_retry_repeats_the_request_with_the_answers_and_the_state() -> None:
    retries = InputRetries()
    sent = {"name": "t", "arguments": {"a": 1},
            "_meta": {"progressToken": 5, "io.modelcontextprotocol/protocolVersion": SL}}
    event = retries.receive(3, "tools/call", sent,
                            {"inputRequests": {"k": {"method": "roots/list"}},
                             "requestState": "s"})
    assert event == InputRequired(request_id=3, method="tools/call",
                                  input_requests={"k": {"method": "roots/list"}},
                                  request_state="s")
    assert retries.retry(3, {}) == "inputResponses must answer exactly the keys ['k'], got []"
    method, params = retries.retry(3, {"k": {"roots": []}})  # type: ignore[misc]
    assert method == "tools/call"
    assert params == {"name": "t", "arguments": {"a": 1},
                      "_meta": {"io.modelcontextprotocol/protocolVersion": SL},
                      "inputResponses": {"k": {"roots": []}}, "requestState": "s"}
    retries.done(3)
    assert retries.retry(3, {}) == "request 3 is not waiting for input"


def test_a_malformed_input_required_is_not_kept() -> None:
    retries = InputRetries()
    for payload in ({}, {"inputRequests": []}, {"requestState": 3}, {"inputRequests": {}}):
        assert retries.receive(1, "tools/call", None, payload) is None
    assert retries == {}


def test_embedded_input_requests_must_be_declared_by_the_retried_request() -> None:
    roots = {"k": {"method": "roots/list"}}
    assert check_input_requests(roots, SL, {"roots": {}}) is None
    assert "'roots'" in (check_input_requests(roots, SL, {}) or "")
    assert "not an input request method" in (
        check_input_requests({"k": {"method": "tools/list"}}, SL, {}) or "")
    assert "not an input request method" in (check_input_requests({"k": 3}, SL, {}) or "")


# -- handshake and probe -----------------------------------------------------------------------


def test_initialize_params_offer_the_newest_handshake_revision() -> None:
    params = initialize_params(("2024-11-05", "2025-06-18"), {}, INFO)
    assert params == {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": INFO}


def test_answer_initialize_negotiates_and_refuses_bad_params() -> None:
    good = {"protocolVersion": "2099-01-01", "capabilities": {}, "clientInfo": INFO}
    answer = answer_initialize(good, ("2025-06-18", "2025-11-25"), {"tools": {}}, INFO, "hi")
    assert answer is not None and answer.version == "2025-11-25"
    assert answer.result == {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                             "serverInfo": INFO, "instructions": "hi"}
    assert answer_initialize({**good, "clientInfo": {"name": "x"}}, ("2025-11-25",), {}, INFO,
                             None) is None


def test_read_initialize_result_says_why_to_close() -> None:
    ok = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": INFO}
    assert read_initialize_result(True, ok, ("2025-11-25",)) is None
    assert read_initialize_result(True, ok, ("2025-06-18",))[0] is (  # type: ignore[index]
        CloseReason.VERSION_REJECTED)
    assert read_initialize_result(True, {**ok, "instructions": 3}, ("2025-11-25",))[0] is (  # type: ignore[index]
        CloseReason.INITIALIZE_FAILED)
    assert read_initialize_result(False, {"code": -32602, "message": "no"}, ())[0] is (  # type: ignore[index]
        CloseReason.INITIALIZE_FAILED)


def test_discover_result_leaves_out_the_handshake_era_tasks_capability() -> None:
    result = discover_result((SL,), {"tools": {}, "tasks": {}}, INFO, None, 0, "private")
    assert result == {"resultType": "complete", "supportedVersions": [SL],
                      "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
                      "_meta": {META_SERVER_INFO: INFO}}


def test_the_probe_settles_on_the_newest_common_stateless_revision_or_falls_back() -> None:
    discover = {"supportedVersions": [SL], "capabilities": {}}
    assert judge_probe_answer(True, discover, (SL,)).version == SL
    none_common = judge_probe_answer(True, {**discover, "supportedVersions": ["2099"]}, (SL,))
    assert none_common.version is None and "none of" in none_common.detail
    fallback = judge_probe_answer(False, {"code": -32601, "message": "nope"}, (SL,))
    assert fallback.version is None and "-32601" in fallback.detail
    unsupported = {"code": -32022, "message": "x", "data": {"supported": [SL]}}
    assert judge_probe_answer(False, unsupported, (SL,)).version == SL
