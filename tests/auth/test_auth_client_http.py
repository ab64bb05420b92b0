"""The sans-IO HTTP client's side of authorization: a refused exchange hands its response
headers up (:attr:`TransportFailed.headers`, so the adapters' hook reads the challenge
without asking again), and an authorization challenge to ``initialize`` is not taken for a
server of the old HTTP+SSE transport."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import NEED_DATA, ClientConnection, Era, RequestCancelled
from mcp_sansio.http import HTTPClient
from mcp_sansio.http._client import AUTH_CHALLENGE_STATUSES, Transport, TransportFailed
from tests.http_util import CLIENT_INFO

URL = "http://localhost:8000/mcp"
CHALLENGE = 'Bearer resource_metadata="http://localhost:8000/.well-known/x", scope="a"'


def _client(**options: Any) -> HTTPClient:
    conn = ClientConnection(info=CLIENT_INFO, versions=["2025-11-25"])
    return HTTPClient(conn, URL, **options)


def _answer(client: HTTPClient, head: bytes, body: bytes = b"") -> list[Any]:
    """Answer the client's last request; its events, and what it sends next."""
    out = client.data_to_send()
    assert out, "the client sent nothing"
    out[-1][0].receive_data(head + b"content-length: %d\r\n\r\n" % len(body) + body, now=0)
    events = []
    while (event := client.next_event()) is not NEED_DATA:
        events.append(event)
    return events


def _requests(client: HTTPClient) -> list[bytes]:
    return [data.split(b"\r\n", 1)[0] for _, data in client.data_to_send() if data]


@pytest.mark.parametrize("status", sorted(AUTH_CHALLENGE_STATUSES))
def test_a_challenged_initialize_fails_with_the_challenge_and_no_legacy_fallback(
        status: int) -> None:
    client = _client()
    client.connect(now=0, era=Era.HANDSHAKE)
    _answer(client, b"HTTP/1.1 %d Refused\r\nWWW-Authenticate: %s\r\n" % (
        status, CHALLENGE.encode()))
    assert not any(line.startswith(b"GET") for line in _requests(client))  # no HTTP+SSE try
    assert client.transport is not Transport.LEGACY
    failure = client.connect_failure
    assert failure is not None and failure.status == status
    assert ("www-authenticate", CHALLENGE) in failure.headers


def test_a_401_without_a_challenge_still_tries_the_legacy_transport() -> None:
    # Not an authorization challenge (no WWW-Authenticate): the transports page's
    # backwards-compatibility rule (any 4xx to initialize) applies as before.
    client = _client()
    client.connect(now=0, era=Era.HANDSHAKE)
    _answer(client, b"HTTP/1.1 401 Unauthorized\r\n")
    assert client.transport is Transport.LEGACY
    assert any(line.startswith(b"GET") for line in _requests(client))


def test_a_refused_call_carries_the_response_headers() -> None:
    client = _client(standalone_stream=False)
    init_id = client.connect(now=0, era=Era.HANDSHAKE)
    result = json.dumps({"jsonrpc": "2.0", "id": init_id, "result": {
        "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"}}}).encode()
    _answer(client, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"mcp-session-id: s1\r\n", result)
    _answer(client, b"HTTP/1.1 202 Accepted\r\n")  # notifications/initialized
    rid = client.connection.send_request("tools/list", now=0)
    events = _answer(client, b"HTTP/1.1 403 Forbidden\r\nWWW-Authenticate: "
                             b'Bearer error="insufficient_scope", scope="a b"\r\n')
    (failed,) = [e for e in events if isinstance(e, TransportFailed)]
    assert failed.status == 403 and failed.request_ids == (rid,)
    assert dict(failed.headers)["www-authenticate"] == (
        'Bearer error="insufficient_scope", scope="a b"')
    assert any(isinstance(e, RequestCancelled) and e.request_id == rid for e in events)


def test_a_success_then_a_failure_without_status_carries_no_stale_headers() -> None:
    failed = TransportFailed(status=None, detail="the server is unreachable")
    assert failed.headers == ()


@given(status=st.integers(400, 599), challenged=st.booleans())
def test_which_refusals_of_initialize_try_the_legacy_transport(status: int,
                                                               challenged: bool) -> None:
    # transports.mdx "Backwards Compatibility": any 4xx -> try HTTP+SSE; except an
    # authorization challenge (401/403 with WWW-Authenticate), which is for the auth hook.
    client = _client()
    client.connect(now=0, era=Era.HANDSHAKE)
    header = b"WWW-Authenticate: Bearer\r\n" if challenged else b""
    _answer(client, b"HTTP/1.1 %d X\r\n" % status + header)
    legacy = any(line.startswith(b"GET") for line in _requests(client))
    is_challenge = challenged and status in AUTH_CHALLENGE_STATUSES
    assert legacy == (status < 500 and not is_challenge)
    if not legacy:
        failure = client.connect_failure
        assert failure is not None and failure.status == status
        assert (("www-authenticate", "Bearer") in failure.headers) == challenged
