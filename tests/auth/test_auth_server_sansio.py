"""The sans-IO HTTP server with ``auth=``, in memory: the metadata document's routes (methods,
the ``Host`` check, absent without ``auth``), the legacy HTTP+SSE transport bound to its
principal, the clock tokens are judged at, and a property: whatever ``Authorization``
header and query a request carries, it is refused with a challenge or served, never raised."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio.auth import (
    AccessInfo,
    InvalidToken,
    ProtectedResource,
    parse_challenges,
)
from tests.http_util import Harness, init_body

RESOURCE = "http://localhost/mcp"
ISSUER = "https://auth.example.com"


class Tokens:
    """A verifier that knows a few opaque tokens, and records the ``now`` it was asked at."""

    def __init__(self) -> None:
        self.seen_at: list[float] = []
        self.known = {
            "ada": AccessInfo("ada", frozenset({"mcp:read"}), claims={"iss": ISSUER}),
            "ada-again": AccessInfo("ada", frozenset({"mcp:read", "mcp:write"}),
                                    claims={"iss": ISSUER}),
            "bob": AccessInfo("bob", frozenset({"mcp:read"}), claims={"iss": ISSUER}),
            "ada-elsewhere": AccessInfo("ada", frozenset({"mcp:read"}),
                                        claims={"iss": "https://other.example.com"}),
        }

    def verify(self, token: str, now: float) -> AccessInfo:
        self.seen_at.append(now)
        if token not in self.known:
            raise InvalidToken("unknown token")
        return self.known[token]


def harness(tokens: Tokens | None = None, **options: Any) -> Harness:
    auth = ProtectedResource(RESOURCE, [ISSUER], tokens or Tokens(),
                             scopes_supported=["mcp:read"], required_scopes=["mcp:read"])
    return Harness(auth=auth, **options)


def bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


def test_the_metadata_document_routes() -> None:
    h = harness()
    for target in ("/.well-known/oauth-protected-resource/mcp",
                   "/.well-known/oauth-protected-resource"):
        got = h.conn().send("GET", target=target, headers=[("origin", "https://evil.example")])
        assert got.status == 200  # public: any origin may read it
        assert got.headers["access-control-allow-origin"] == "*"
        assert json.loads(got.body)["resource"] == RESOURCE
        head = h.conn().send("HEAD", target=target)
        assert head.status == 200 and head.body == b""
        post = h.conn().send("POST", {}, target=target)
        assert post.status == 405 and post.headers["allow"] == "GET, HEAD"
    # DNS rebinding: the Host check still applies
    got = h.conn().send("GET", target="/.well-known/oauth-protected-resource/mcp",
                        headers=[("host", "evil.example")], defaults=False)
    assert got.status == 403
    # without auth there is no such document
    assert Harness().conn().send(
        "GET", target="/.well-known/oauth-protected-resource/mcp").status == 404


def test_a_legacy_session_is_bound_to_its_principal() -> None:
    h = harness(legacy_sse_path="/sse")
    stream = h.conn().send("GET", target="/sse", headers=bearer("ada"))
    assert stream.status == 200
    endpoint = stream.events[0].data.decode()  # the target is a str
    assert h.conn().send(body=init_body("2024-11-05"), target=endpoint,
                         headers=bearer("bob")).status == 404
    assert h.conn().send(body=init_body("2024-11-05"), target=endpoint,
                         headers=bearer("ada")).status == 202
    # an unauthenticated GET opens nothing
    refused = h.conn().send("GET", target="/sse")
    assert refused.status == 401 and len(h.server.sessions) == 1


def test_the_same_subject_from_another_issuer_is_another_principal() -> None:
    h = harness()
    opened = h.conn().send(body=init_body(), headers=bearer("ada"))
    assert opened.status == 200
    session = [("mcp-session-id", opened.headers["mcp-session-id"]),
               ("mcp-protocol-version", "2025-11-25")]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert h.conn().send(body=ping, headers=[*bearer("ada-elsewhere"), *session]).status == 404
    # a refreshed token of the same principal with more scope is welcome, and it is what
    # the session's handlers see from now on
    assert h.conn().send(body=ping, headers=[*bearer("ada-again"), *session]).status == 200
    (live,) = h.server.sessions.values()
    assert live.auth is not None and live.auth.scopes == {"mcp:read", "mcp:write"}


def test_tokens_are_judged_at_the_wall_time_when_given() -> None:
    tokens = Tokens()
    h = harness(tokens)
    conn = h.conn()
    conn.send(body=init_body(), headers=bearer("ada"))
    assert tokens.seen_at == [h.now]  # no wall_time: the server's clock
    conn = h.conn()
    conn.wire.send_request("POST", "/mcp", [
        ("host", "localhost:8000"), ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"), *bearer("bob")],
        json.dumps(init_body()).encode())
    conn.channel.receive_data(conn.wire.data_to_send(), now=h.now, wall_time=1.8e9)
    assert tokens.seen_at[-1] == 1.8e9


_TOKENISH = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)


@settings(max_examples=150, deadline=None)
@given(scheme=st.sampled_from(["Bearer", "bearer", "Basic", "", "Bearer  "]),
       credential=st.one_of(st.sampled_from(["ada", "bob", "nobody"]), _TOKENISH),
       query=st.sampled_from(["", "?access_token=ada", "?x=1", "?access_token="]),
       twice=st.booleans())
def test_any_authorization_is_refused_with_a_challenge_or_served(
        scheme: str, credential: str, query: str, twice: bool) -> None:
    h = harness()
    value = f"{scheme} {credential}".strip()
    headers = [("authorization", value)] * (2 if twice else 1)
    got = h.conn().send(body=init_body(), headers=headers, target="/mcp" + query)
    assert got.status in (200, 400, 401, 403)
    if got.status == 200:
        assert not query.startswith("?access_token") and not twice
        assert credential in ("ada", "bob") and scheme.strip().lower() == "bearer"
    else:
        (challenge,) = parse_challenges(got.headers["www-authenticate"])
        assert challenge.scheme == "bearer"
        assert challenge.params["resource_metadata"] == (
            "http://localhost/.well-known/oauth-protected-resource/mcp")
