"""DPoP (RFC 9449), pure: proofs refused for any mismatch of method, URL, time, key, token
hash or a replayed ``jti`` and accepted otherwise (Hypothesis); the resource server's
decision (schemes, ``cnf.jkt`` binding, challenges with ``algs``, nonces, metadata); the
replay cache's bound; a hand-made corpus of broken proofs."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joserfc import jwt
from joserfc.jwk import ECKey

from mcp_sansio.auth import ProtectedResource, Refusal, parse_challenges
from mcp_sansio.auth.dpop import (
    PROOF_CHECKS,
    DPoPKey,
    InvalidProof,
    MemoryReplayCache,
    NonceSource,
    ProofVerifier,
    UseNonce,
    access_token_hash,
    htu_of,
)
from mcp_sansio.auth.jwt import JWTVerifier

NOW = 1_800_000_000.0
URL = "https://mcp.example.com/mcp"
KEY = DPoPKey(ECKey.generate_key("P-256", private=True).as_dict(private=True))
OTHER = DPoPKey(ECKey.generate_key("P-256", private=True).as_dict(private=True))
ISSUER = "https://auth.example.com"
SIGNING = ECKey.generate_key("P-256", parameters={"kid": "as", "alg": "ES256"})

MUTATIONS = ["none", "method", "url", "time", "key", "ath", "replay", "typ", "alg",
             "private-jwk", "no-jti"]


def b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


@settings(max_examples=80, deadline=None)
@given(mutation=st.sampled_from(MUTATIONS),
       method=st.sampled_from(["GET", "POST", "DELETE"]),
       path=st.from_regex(r"/[a-z]{0,8}(/[a-z0-9]{1,5}){0,2}", fullmatch=True),
       skew=st.floats(-250, 250), token=st.from_regex(r"[A-Za-z0-9._~-]{1,40}",
                                                       fullmatch=True),
       jti=st.from_regex(r"[A-Za-z0-9]{8,22}", fullmatch=True))
def test_a_proof_is_accepted_exactly_when_everything_matches(
        mutation: str, method: str, path: str, skew: float, token: str, jti: str) -> None:
    url = "https://mcp.example.com" + path
    verifier = ProofVerifier()
    iat = NOW + skew
    key = KEY
    claims_url, claims_method, claims_token = url, method, token
    if mutation == "method":
        claims_method = "PUT"
    elif mutation == "url":
        claims_url = url.rstrip("/") + "/other"
    elif mutation == "time":
        iat = NOW + (400 if skew >= 0 else -400)
    elif mutation == "ath":
        claims_token = token + "x"
    proof = key.proof(claims_method, claims_url, now=iat, jti=jti, access_token=claims_token)
    if mutation == "key":
        # Signed by another key than the one its header names.
        header, payload, _ = proof.split(".")
        forged = OTHER.proof(claims_method, claims_url, now=iat, jti=jti,
                             access_token=claims_token).split(".")[2]
        proof = f"{header}.{payload}.{forged}"
    elif mutation in ("typ", "alg", "private-jwk", "no-jti"):
        header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": KEY.public_jwk}
        claims = {"jti": jti, "htm": method, "htu": htu_of(url), "iat": int(iat),
                  "ath": access_token_hash(token)}
        if mutation == "typ":
            header["typ"] = "JWT"
        elif mutation == "alg":
            header["alg"] = "HS256"
        elif mutation == "private-jwk":
            header["jwk"] = KEY.private_jwk()
        else:
            del claims["jti"]
        signing = KEY._key  # the same key: only the named defect differs
        if mutation == "alg":
            proof = f"{b64(header)}.{b64(claims)}.AAAA"
        else:
            proof = jwt.encode(header, claims, signing, algorithms=["ES256"])
    if mutation == "replay":
        verifier.check([proof], method=method, url=url, now=NOW, access_token=token)
    if mutation == "none":
        result = verifier.check([proof], method=method, url=url, now=NOW, access_token=token)
        assert result.jkt == KEY.thumbprint and result.jti == jti
    else:
        with pytest.raises(InvalidProof) as caught:
            verifier.check([proof], method=method, url=url, now=NOW, access_token=token)
        assert str(caught.value).split(":")[0] in {name for name, _ in PROOF_CHECKS}


def test_htu_ignores_query_fragment_default_port_and_case() -> None:
    assert htu_of("HTTPS://MCP.example.com:443/mcp?x=1#f") == "https://mcp.example.com/mcp"
    assert htu_of("http://h:8080") == "http://h:8080/"


def test_two_headers_or_a_comma_list_are_refused() -> None:
    proof = KEY.proof("POST", URL, now=NOW, jti="j1")
    for values in ([proof, proof], [f"{proof}, {proof}"], []):
        with pytest.raises(InvalidProof, match="single"):
            ProofVerifier().check(values, method="POST", url=URL, now=NOW, access_token=None)


@pytest.mark.parametrize("garbage", ["", "a.b", "a.b.c", "eyJ9.eyJ9.x", "x" * 5000,
                                     "e30.W10.AAAA"])
def test_garbage_proofs_are_refused_by_name(garbage: str) -> None:
    with pytest.raises(InvalidProof):
        ProofVerifier().check([garbage], method="POST", url=URL, now=NOW, access_token=None)


def test_nonces_rotate_and_are_shared_by_secret() -> None:
    a, b = NonceSource(b"k", period=60), NonceSource(b"k", period=60)
    nonce = a.current(NOW)
    assert b.valid(nonce, NOW) and b.valid(nonce, NOW + 60)  # this window and the next
    assert not b.valid(nonce, NOW + 180)
    assert not NonceSource(b"other", period=60).valid(nonce, NOW)
    verifier = ProofVerifier(nonces=a)
    with pytest.raises(UseNonce):
        verifier.check([KEY.proof("POST", URL, now=NOW, jti="n1")], method="POST", url=URL,
                       now=NOW, access_token=None)
    verifier.check([KEY.proof("POST", URL, now=NOW, jti="n2", nonce=nonce)], method="POST",
                   url=URL, now=NOW, access_token=None)


def test_the_replay_cache_is_bounded_and_forgets_expired_entries() -> None:
    cache = MemoryReplayCache(max_entries=3)
    assert cache.first_use("a", NOW + 10, NOW)
    assert not cache.first_use("a", NOW + 10, NOW)
    assert cache.first_use("a", NOW + 30, NOW + 11)  # expired: usable again
    for key in "bcde":
        assert cache.first_use(key, NOW + 100, NOW + 12)
    assert len(cache) <= 3


# -- the resource server -----------------------------------------------------------------


def access_token(jkt: str | None, scope: str = "mcp") -> str:
    claims: dict[str, Any] = {"iss": ISSUER, "aud": URL, "sub": "ada", "scope": scope,
                              "exp": int(NOW) + 600}
    if jkt is not None:
        claims["cnf"] = {"jkt": jkt}
    return jwt.encode({"alg": "ES256", "kid": "as"}, claims, SIGNING)


def resource(mode: str, *, nonces: NonceSource | None = None) -> ProtectedResource:
    verifier = JWTVerifier({"keys": [SIGNING.as_dict(private=False)]}, issuer=ISSUER,
                           audience=URL)
    return ProtectedResource(URL, [ISSUER], verifier, dpop=mode,
                             dpop_proofs=ProofVerifier(nonces=nonces))


def decide(rs: ProtectedResource, scheme: str, token: str, proof: str | None,
           method: str = "POST") -> Any:
    headers = [("authorization", f"{scheme} {token}")]
    if proof is not None:
        headers.append(("dpop", proof))
    return rs.authorize(headers, "/mcp", NOW, method=method)


def challenge_schemes(refusal: Refusal) -> dict[str, dict[str, str]]:
    out = {}
    for name, value in refusal.headers:
        if name == "WWW-Authenticate":
            for c in parse_challenges(value):
                out[c.scheme] = dict(c.params)
    return out


def test_a_bound_token_with_its_proof_is_accepted() -> None:
    token = access_token(KEY.thumbprint)
    info = decide(resource("required"), "DPoP", token,
                  KEY.proof("POST", URL, now=NOW, jti="ok", access_token=token))
    assert info.subject == "ada"


def test_a_proof_by_another_key_than_the_tokens_is_refused() -> None:
    token = access_token(KEY.thumbprint)
    refusal = decide(resource("required"), "DPoP", token,
                     OTHER.proof("POST", URL, now=NOW, jti="k", access_token=token))
    assert isinstance(refusal, Refusal) and refusal.status == 401
    assert "cnf.jkt" in refusal.reason
    assert challenge_schemes(refusal)["dpop"]["error"] == "invalid_token"


def test_bearer_is_refused_when_dpop_is_required_with_a_dpop_challenge_naming_algs() -> None:
    refusal = decide(resource("required"), "Bearer", access_token(None), None)
    assert isinstance(refusal, Refusal) and refusal.status == 401
    schemes = challenge_schemes(refusal)
    assert set(schemes) == {"dpop"}
    assert "ES256" in schemes["dpop"]["algs"].split()
    assert schemes["dpop"]["resource_metadata"].endswith("/.well-known/oauth-protected-"
                                                         "resource/mcp")


def test_allowed_takes_plain_bearer_tokens_but_not_a_bound_one_as_bearer() -> None:
    rs = resource("allowed")
    assert decide(rs, "Bearer", access_token(None), None).subject == "ada"
    refusal = decide(rs, "Bearer", access_token(KEY.thumbprint), None)
    assert isinstance(refusal, Refusal) and refusal.status == 401
    assert "RFC 9449 §7.2" in refusal.reason
    assert set(challenge_schemes(refusal)) == {"dpop", "bearer"}


def test_a_missing_proof_and_a_stale_nonce_are_answered_by_name() -> None:
    nonces = NonceSource(b"rs")
    rs = resource("required", nonces=nonces)
    token = access_token(KEY.thumbprint)
    missing = decide(rs, "DPoP", token, None)
    assert challenge_schemes(missing)["dpop"]["error"] == "invalid_dpop_proof"
    asked = decide(rs, "DPoP", token,
                   KEY.proof("POST", URL, now=NOW, jti="a", access_token=token))
    assert challenge_schemes(asked)["dpop"]["error"] == "use_dpop_nonce"
    nonce = dict(asked.headers)["DPoP-Nonce"]
    assert nonces.valid(nonce, NOW)
    ok = decide(rs, "DPoP", token, KEY.proof("POST", URL, now=NOW, jti="b",
                                             access_token=token, nonce=nonce))
    assert ok.subject == "ada"


def test_the_method_of_the_request_is_checked() -> None:
    token = access_token(KEY.thumbprint)
    refusal = decide(resource("required"), "DPoP", token,
                     KEY.proof("POST", URL, now=NOW, jti="m", access_token=token),
                     method="GET")
    assert isinstance(refusal, Refusal) and "htm" in refusal.reason


def test_metadata_advertises_dpop() -> None:
    doc = resource("required").document()
    assert doc["dpop_bound_access_tokens_required"] is True
    assert "ES256" in doc["dpop_signing_alg_values_supported"]
    assert resource("allowed").document()["dpop_bound_access_tokens_required"] is False
    plain = ProtectedResource(URL, [ISSUER], resource("allowed").verifier).document()
    assert "dpop_signing_alg_values_supported" not in plain


def test_an_unknown_mode_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="dpop"):
        resource("sometimes")


def test_proofs_made_now_verify_on_the_wall_clock() -> None:
    """The key and the verifier agree on real time too (``iat`` is whole seconds)."""
    now = time.time()
    ProofVerifier().check([KEY.proof("GET", URL, now=now, jti="w")], method="GET", url=URL,
                          now=now, access_token=None)


def test_a_verdict_that_waits_for_an_answer_still_checks_the_key_binding() -> None:
    """A verifier that must ask (introspection) raises VerificationPending; the decision it
    finishes with holds the token to the proof's key all the same."""
    from mcp_sansio.auth import AccessInfo, HTTPRequest, HTTPResponse, VerificationPending

    class Asking:
        def verify(self, token: str, now: float) -> AccessInfo:
            def finish(response: HTTPResponse, when: float) -> AccessInfo:
                return AccessInfo("ada", frozenset({"mcp"}),
                                  claims={"cnf": {"jkt": response.body.decode()}})
            raise VerificationPending(HTTPRequest("POST", "https://as/introspect"), finish,
                                      "asking")

    rs = ProtectedResource(URL, [ISSUER], Asking(), dpop="required")
    token = "opaque-token"
    headers = [("authorization", f"DPoP {token}"),
               ("dpop", KEY.proof("POST", URL, now=NOW, jti="p1", access_token=token))]
    with pytest.raises(VerificationPending) as pending:
        rs.authorize(headers, "/mcp", NOW, method="POST")
    good = rs.conclude(pending.value, HTTPResponse(200, (), KEY.thumbprint.encode()), NOW)
    assert good.subject == "ada"
    bad = rs.conclude(pending.value, HTTPResponse(200, (), OTHER.thumbprint.encode()), NOW)
    assert isinstance(bad, Refusal) and bad.status == 401
    assert challenge_schemes(bad)["dpop"]["error"] == "invalid_token"  # a DPoP challenge


def test_workers_sharing_the_replay_cache_through_the_event_bus_refuse_a_replay() -> None:
    import asyncio

    from mcp_sansio.adapters.auth.verify import shared_replay_cache

    from mcp_sansio.stores import MemoryEventBus

    async def main() -> None:
        bus = MemoryEventBus()
        async with shared_replay_cache(bus) as one, shared_replay_cache(bus) as two:
            first, second = ProofVerifier(replay=one), ProofVerifier(replay=two)
            proof = KEY.proof("POST", URL, now=NOW, jti="shared")
            first.check([proof], method="POST", url=URL, now=NOW, access_token=None)
            await asyncio.sleep(0)  # the publication goes out
            with pytest.raises(InvalidProof, match="jti"):
                second.check([proof], method="POST", url=URL, now=NOW, access_token=None)
            one.receive(b"not json", NOW)  # another worker's garbage is ignored
            second.check([KEY.proof("POST", URL, now=NOW, jti="fresh")], method="POST",
                         url=URL, now=NOW, access_token=None)

    asyncio.run(main())
