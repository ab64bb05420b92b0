"""The sans-IO HTTP server parking an exchange on an asynchronous decision (http/_park.py),
driven by the two verifiers that need one: RFC 7662 introspection and the JWKS cache.

In memory, on a virtual clock: a parked request is answered only once the decision comes
(active, inactive, wrong audience, an error status, a transport failure, no answer in time),
a later answer for it is ignored, a client that leaves while parked is forgotten, the
connection's next request waits behind the parked one, and a property: whatever the order of
answers, timeouts and departures, every request is answered at most once and nothing stays
parked."""

from __future__ import annotations

import json
import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from joserfc import jwt
from joserfc.jwk import ECKey

from mcp_sansio.auth import (
    HTTPResponse,
    IntrospectionVerifier,
    ProtectedResource,
    VerificationPending,
    parse_challenges,
)
from mcp_sansio.auth.jwt import JWKSCache
from mcp_sansio.http._park import DEFAULT_DECISION_TIMEOUT
from tests.http_util import Harness, init_body

RESOURCE = "http://localhost/mcp"
ISSUER = "https://auth.example.com"
INTROSPECT = ISSUER + "/introspect"
JWKS = ISSUER + "/jwks"
WALL = 1_800_000_000.0


def introspection() -> IntrospectionVerifier:
    return IntrospectionVerifier(INTROSPECT, client_id="rs", client_secret="s3cret",
                                 resource=RESOURCE, issuer=ISSUER)


def harness(verifier: Any, **options: Any) -> Harness:
    auth = ProtectedResource(RESOURCE, [ISSUER], verifier, required_scopes=["mcp:read"])
    return Harness(auth=auth, **options)


def bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


def answer(**doc: Any) -> HTTPResponse:
    return HTTPResponse(200, (("content-type", "application/json"),), json.dumps(doc).encode())


ACTIVE = {"active": True, "sub": "ada", "scope": "mcp:read", "aud": RESOURCE, "iss": ISSUER,
          "exp": WALL + 3600}


def test_an_introspected_token_waits_for_the_answer_then_is_remembered() -> None:
    verifier = introspection()
    h = harness(verifier)
    got = h.conn().send(body=init_body(), headers=bearer("opaque-1"))
    assert got.status is None  # parked: nothing answered yet
    (need,) = h.server.pending_decisions()
    assert h.server.pending_decisions() == []  # handed out once
    assert isinstance(need.question, VerificationPending)
    request = need.question.request
    assert (request.method, request.url) == ("POST", INTROSPECT)
    assert b"token=opaque-1" in request.body
    assert need.deadline == h.now + DEFAULT_DECISION_TIMEOUT
    assert h.server.decide(need.handle, answer(**ACTIVE), now=h.now, wall_time=WALL)
    h.run()
    assert got.status == 200 and got.done
    # the answer is remembered: the next request with that token is decided at once
    again = h.conn().send(body=init_body(), headers=bearer("opaque-1"))
    assert again.status == 200 and h.server.pending_decisions() == []
    assert verifier.requests == 1
    # a second answer for the same handle is ignored
    assert not h.server.decide(need.handle, answer(**ACTIVE))


def _decided(verdict: Any) -> tuple[int | None, dict[str, str]]:
    h = harness(introspection())
    got = h.conn().send(body=init_body(), headers=bearer("opaque-2"))
    (need,) = h.server.pending_decisions()
    assert h.server.decide(need.handle, verdict, now=h.now, wall_time=WALL)
    h.run()
    assert got.done
    return got.status, got.headers


def test_the_verdicts_of_an_introspection() -> None:
    status, headers = _decided(answer(active=False))
    assert status == 401
    (challenge,) = parse_challenges(headers["www-authenticate"])
    assert challenge.params["error"] == "invalid_token"
    status, headers = _decided(answer(**{**ACTIVE, "aud": "https://elsewhere.example/mcp"}))
    assert status == 401
    status, headers = _decided(answer(**{**ACTIVE, "scope": "mcp:other"}))
    assert status == 403
    (challenge,) = parse_challenges(headers["www-authenticate"])
    assert challenge.params["error"] == "insufficient_scope"
    # no verdict on the token: 503, without a challenge (RFC 7662 section 2.3)
    status, headers = _decided(HTTPResponse(500, (), b"oops"))
    assert status == 503 and "www-authenticate" not in headers
    status, headers = _decided(ConnectionRefusedError("introspection endpoint down"))
    assert status == 503
    status, _ = _decided("not an answer")  # an adapter bug: still an answer, never a hang
    assert status == 503


def test_no_answer_in_time_is_a_503_and_a_late_answer_is_dropped() -> None:
    h = harness(introspection(), decision_timeout=5.0)
    got = h.conn().send(body=init_body(), headers=bearer("opaque-3"))
    (need,) = h.server.pending_decisions()
    assert h.server.next_deadline() is not None
    h.advance(4.9)
    assert got.status is None
    h.advance(0.2)
    assert got.status == 503 and got.done
    assert b"no answer within 5 s" in got.body
    assert not h.server.decide(need.handle, answer(**ACTIVE))


def test_a_client_that_leaves_while_parked_is_forgotten() -> None:
    h = harness(introspection())
    conn = h.conn()
    conn.send(body=init_body(), headers=bearer("opaque-4"))
    (need,) = h.server.pending_decisions()
    conn.close()
    assert conn.channel.closed
    assert not h.server.decide(need.handle, answer(**ACTIVE))
    assert h.server.sessions == {}
    # a broken socket, the same
    conn = h.conn()
    conn.send(body=init_body(), headers=bearer("opaque-5"))
    (need,) = h.server.pending_decisions()
    conn.channel.connection_lost(now=h.now)
    h.run()
    assert not h.server.decide(need.handle, answer(**ACTIVE))
    h.advance(DEFAULT_DECISION_TIMEOUT * 2)  # its timer finds nothing to do
    assert h.server.sessions == {}


def test_the_next_request_on_the_connection_waits_behind_a_parked_one() -> None:
    h = harness(introspection())
    body = json.dumps(init_body()).encode()
    one = (b"POST /mcp HTTP/1.1\r\nhost: localhost:8000\r\n"
           b"accept: application/json, text/event-stream\r\n"
           b"content-type: application/json\r\nauthorization: Bearer opaque-6\r\n"
           b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    channel = h.server.new_channel(now=h.now)
    channel.receive_data(one + one, now=h.now)  # pipelined
    h.run()
    (need,) = h.server.pending_decisions()
    assert b"HTTP/1.1" not in h.raw_out.get(channel, b"")
    h.server.decide(need.handle, answer(**ACTIVE), now=h.now, wall_time=WALL)
    h.run()
    # the second is decided from the remembered answer, after the first
    assert bytes(h.raw_out[channel]).count(b"HTTP/1.1 200") == 2
    assert len(h.server.sessions) == 2


def test_an_adapter_may_take_needs_through_a_callback() -> None:
    h = harness(introspection())
    seen: list[Any] = []
    h.server.on_decision_needed = seen.append
    h.conn().send(body=init_body(), headers=bearer("opaque-7"))
    assert len(seen) == 1 and h.server.pending_decisions() == []


# -- the JWKS cache ------------------------------------------------------------------------


def _key(kid: str) -> ECKey:
    return ECKey.generate_key("P-256", parameters={"kid": kid, "alg": "ES256"})


def _token(key: ECKey, sub: str = "ada") -> str:
    claims = {"iss": ISSUER, "aud": RESOURCE, "sub": sub, "scope": "mcp:read",
              "exp": int(time.time()) + 100_000}
    return jwt.encode({"alg": "ES256", "kid": key.kid}, claims, key)


def _jwks(*keys: ECKey) -> HTTPResponse:
    return HTTPResponse(200, (), json.dumps(
        {"keys": [k.as_dict(private=False) for k in keys]}).encode())


def _pending(call: Any) -> VerificationPending:
    try:
        call()
    except VerificationPending as pending:
        return pending
    raise AssertionError("the verifier decided at once")


def test_the_jwks_cache_fetches_first_on_rotation_on_age_within_bounds() -> None:
    old, new, stranger = _key("old"), _key("new"), _key("stranger")
    cache = JWKSCache(JWKS, issuer=ISSUER, audience=RESOURCE, max_age=3600, min_refetch=60)
    now = time.time()
    first = _pending(lambda: cache.verify(_token(old), now))
    assert first.request.url == JWKS
    assert first.finish(_jwks(old), now).subject == "ada"
    assert cache.verify(_token(old), now + 1).subject == "ada"  # held: decided at once
    # rotation: a token with the new kid asks for the set again (past min_refetch)
    rotated = _pending(lambda: cache.verify(_token(new, "bob"), now + 61))
    assert rotated.finish(_jwks(old, new), now + 61).subject == "bob"
    # a made-up kid within min_refetch: refused at once, nothing asked
    try:
        cache.verify(_token(stranger), now + 62)
    except VerificationPending:
        raise AssertionError("asked again within min_refetch") from None
    except Exception as exc:
        assert type(exc).__name__ == "UnknownKey"
    # too old: asked again; an authorization server that is down leaves the held keys on
    aged = _pending(lambda: cache.verify(_token(old), now + 3700))
    assert aged.fail("endpoint down", now + 3700).subject == "ada"
    assert aged.finish(HTTPResponse(500, (), b""), now + 3700).subject == "ada"


def test_a_protected_server_judges_a_rotated_key_once_the_set_came() -> None:
    old, new = _key("old"), _key("new")
    cache = JWKSCache(JWKS, issuer=ISSUER, audience=RESOURCE, min_refetch=0)
    h = harness(cache)
    wall = time.time()
    got = h.conn().send(body=init_body(), headers=bearer(_token(old)))
    (need,) = h.server.pending_decisions()  # the first fetch
    h.server.decide(need.handle, _jwks(old), wall_time=wall)
    h.run()
    assert got.status == 200
    conn = h.conn()
    conn.wire.send_request("POST", "/mcp", [
        ("host", "localhost:8000"), ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"), *bearer(_token(new))],
        json.dumps(init_body()).encode())
    conn.responses.append(rotated := type(got)())
    conn.channel.receive_data(conn.wire.data_to_send(), now=h.now, wall_time=wall)
    h.run()
    (need,) = h.server.pending_decisions()
    assert rotated.status is None
    h.server.decide(need.handle, _jwks(old, new), wall_time=wall)
    h.run()
    assert rotated.status == 200
    # the set could not be fetched at all: no verdict, 503 (not 401)
    h2 = harness(JWKSCache(JWKS, issuer=ISSUER, audience=RESOURCE))
    refused = h2.conn().send(body=init_body(), headers=bearer(_token(old)))
    (need,) = h2.server.pending_decisions()
    h2.server.decide(need.handle, HTTPResponse(404, (), b""), wall_time=wall)
    h2.run()
    assert refused.status == 503


# -- a property: every order of answers, timeouts and departures ---------------------------

STEP = st.sampled_from(["send", "active", "inactive", "error", "late", "tick", "close"])


@settings(max_examples=60)
@given(st.lists(STEP, max_size=25))
def test_every_parked_request_ends_once_whatever_happens(steps: list[str]) -> None:
    h = harness(introspection())
    needs: list[Any] = []
    h.server.on_decision_needed = needs.append
    sent: list[tuple[Any, Any]] = []
    count = 0
    for step in steps:
        if step == "send":
            count += 1
            conn = h.conn()
            sent.append((conn, conn.send(body=init_body(), headers=bearer(f"t{count}"))))
        elif step in ("active", "inactive", "error", "late") and needs:
            need = needs.pop(0)
            verdict: Any = {"active": answer(**ACTIVE), "inactive": answer(active=False),
                            "error": OSError("down"), "late": answer(**ACTIVE)}[step]
            if step == "late":
                h.advance(DEFAULT_DECISION_TIMEOUT)
            h.server.decide(need.handle, verdict, now=h.now, wall_time=WALL)
            h.run()
        elif step == "tick":
            h.advance(DEFAULT_DECISION_TIMEOUT / 3)
        elif step == "close" and sent:
            conn, _ = sent.pop(0)
            conn.close()
    h.advance(DEFAULT_DECISION_TIMEOUT + 1)
    assert h.server._parked == {}
    for conn, response in sent:
        assert response.done, "a request still waits after its deadline"
        assert response.status in (200, 401, 503)
        assert len(conn.responses) == 1


# -- the exchange seam (a parser that is not h11: ASGI, another HTTP/1.1 parser) ------------


def test_a_parked_exchange_on_the_exchange_seam() -> None:
    from mcp_sansio.http._exchange import (
        PeerClosed,
        RequestData,
        RequestEnded,
        RequestStarted,
        ResponseStarted,
    )
    from mcp_sansio.http._headers import Headers

    h = harness(introspection())
    server = h.server

    def post(token: str) -> Any:
        channel = server.new_exchange(now=h.now)
        raw = [("host", "localhost:8000"), ("accept", "application/json, text/event-stream"),
               ("content-type", "application/json"), ("authorization", f"Bearer {token}")]
        channel.receive_event(RequestStarted(method="POST", target="/mcp", headers=(
            Headers.from_raw([(k.encode(), v.encode()) for k, v in raw]))), now=h.now)
        channel.receive_event(RequestData(json.dumps(init_body()).encode()), now=h.now)
        channel.receive_event(RequestEnded(), now=h.now)
        h.run()
        return channel

    channel = post("seam-1")
    (need,) = server.pending_decisions()
    assert channel.events_to_send() == []
    server.decide(need.handle, answer(**ACTIVE), now=h.now, wall_time=WALL)
    h.run()
    (head, *_) = channel.events_to_send()
    assert isinstance(head, ResponseStarted) and head.status == 200
    # the peer goes away while parked: forgotten
    channel = post("seam-2")
    (need,) = server.pending_decisions()
    channel.receive_event(PeerClosed(), now=h.now)
    assert not server.decide(need.handle, answer(**ACTIVE))
