"""Disagreements between the checker and our server, each settled against the spec text:
the side that was wrong changed, and these tests hold both sides to the settlement."""

from __future__ import annotations

from typing import Any

from tests.http_util import Harness, stateless_meta


def _stateless(method: str, version: str, request_id: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {"uri": "memo://x", "_meta": stateless_meta(version)}}


def test_a_modern_request_naming_a_handshake_revision_is_an_unsupported_version() -> None:
    # 2026-07-28 basic/versioning.mdx, "Backward Compatibility ...": per-request _meta selects
    # the stateless era on a dual-era server; "Protocol Version Negotiation": a version the
    # server does not implement (that way) is -32022 listing the supported ones, HTTP 400
    # (basic/transports/streamable-http.mdx, "Protocol Version Header").
    h = Harness()
    r = h.conn().send(body=_stateless("resources/read", "2024-11-05"),
                      headers=[("mcp-protocol-version", "2024-11-05"),
                               ("mcp-method", "resources/read"), ("mcp-name", "memo://x")])
    assert r.status == 400
    assert r.json["id"] == 7
    assert r.json["error"]["code"] == -32022
    assert r.json["error"]["data"]["requested"] == "2024-11-05"
    assert "2026-07-28" in r.json["error"]["data"]["supported"]
    assert not h.server.sessions


def test_a_request_without_its_session_is_answered_with_its_own_id() -> None:
    # JSON-RPC 2.0 s. 5: the id of an error is null only when the request's id could not be
    # read; a handshake-era request missing Mcp-Session-Id has a readable one.
    h = Harness()
    r = h.conn().send(body={"jsonrpc": "2.0", "id": "abc", "method": "tools/list"},
                      headers=[("mcp-protocol-version", "2025-06-18")])
    assert r.status == 400
    assert r.json["id"] == "abc"
    assert r.json["error"]["code"] == -32600


def test_unsubscribe_without_a_string_uri_is_invalid_params() -> None:
    # Found by seeded random sessions: UnsubscribeRequest (schema) requires the string uri;
    # JSON-RPC 2.0 s. 5.1: -32602. The server answered {} -- the server changed.
    import sys

    from mcp_sansio.adapters.testing_stdio import StdioTransport

    from mcp_sansio import testing as kit

    machine = kit.PeerMachine.configure(
        lambda: StdioTransport([sys.executable, "-P", "-m", "mcp_sansio", "serve-example"]),
        reply_timeout=5.0, settle_time=0.1)
    session = machine()
    session.open_session("2025-06-18")
    try:
        assert session.alive
        missing = session.request("resources/unsubscribe", {})
        wrong = session.request("resources/unsubscribe", {"uri": [1]})
        both = {missing.request_id, wrong.request_id}
        replies: list[dict[str, object]] = []
        session._on_error = lambda pending, message: replies.append(message)  # type: ignore[method-assign]
        session._on_result = lambda pending, message: replies.append(message)  # type: ignore[method-assign]
        assert session.wait_until(lambda: not both & set(session._pending))
    finally:
        session.teardown()
    codes = [r["error"]["code"] for r in replies if r["id"] in both]  # type: ignore[index]
    assert codes == [-32602, -32602], replies
