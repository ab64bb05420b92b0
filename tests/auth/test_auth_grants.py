"""Grants without a browser in the sans-IO flow: what each token request carries (client
authentication by secret or signed assertion, the JWT bearer and ID-JAG grants, DPoP
proofs and nonces), re-requests at expiry, and the property that any sequence of answers
-- garbage included -- from the IdP, the authorization server and the resource server ends
in tokens or a named error within a bounded number of requests."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import parse_qs

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from joserfc import jwt
from joserfc.jwk import ECKey

from mcp_sansio.auth import (
    AuthFlowError,
    Authorized,
    ClientConfig,
    ClientCredentials,
    ClientCredentialsGrant,
    HTTPRequest,
    HTTPResponse,
    IdentityAssertionGrant,
    JWTBearerGrant,
    OAuthClientFlow,
    TokenError,
)
from mcp_sansio.auth.dpop import ProofVerifier
from tests.auth_world import counter_entropy, json_response

SERVER = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
PRM_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
AS_URL = "https://auth.example.com/.well-known/oauth-authorization-server"
TOKEN_URL = "https://auth.example.com/token"
IDP_URL = "https://idp.example.com/token"
NOW = 1_800_000_000.0
CLIENT_KEY = ECKey.generate_key("P-256", private=True)
DPOP_JWK = ECKey.generate_key("P-256", private=True).as_dict(private=True)
JAG = "urn:ietf:params:oauth:token-type:id-jag"

GRANTS: dict[str, Any] = {
    "basic": ClientCredentialsGrant(ClientCredentials("c1", "a b:c")),
    "jwt": ClientCredentialsGrant(ClientCredentials(
        "c1", private_key=CLIENT_KEY.as_pem(private=True).decode())),
    "wif": JWTBearerGrant(lambda now: "platform.jwt.token", client_id="c1"),
    "id-jag": IdentityAssertionGrant(id_token="id.token.x", idp_token_endpoint=IDP_URL,
                                     idp_client=ClientCredentials("idp-c"),
                                     client=ClientCredentials("c1", "sec")),
}


def good(request: HTTPRequest, *, scopes: list[str] | None = None) -> HTTPResponse:
    """What a well-behaved IdP, authorization server and MCP server answer."""
    if request.url == PRM_URL:
        doc: dict[str, Any] = {"resource": SERVER, "authorization_servers": [ISSUER]}
        if scopes is not None:
            doc["scopes_supported"] = scopes
        return json_response(doc)
    if request.url == AS_URL:
        return json_response({
            "issuer": ISSUER, "authorization_endpoint": f"{ISSUER}/authorize",
            "token_endpoint": TOKEN_URL,
            "token_endpoint_auth_methods_supported": ["client_secret_basic",
                                                      "private_key_jwt"],
            "dpop_signing_alg_values_supported": ["ES256"]})
    if request.url == IDP_URL:
        return json_response({"access_token": "the.id.jag", "issued_token_type": JAG,
                              "token_type": "N_A"})
    if request.url == TOKEN_URL:
        bound = request.header("DPoP") is not None
        return json_response({"access_token": "at-1", "expires_in": 120,
                              "token_type": "DPoP" if bound else "Bearer"})
    return HTTPResponse(404)


def flow_for(grant: Any, *, dpop: bool = False, **config: Any) -> OAuthClientFlow:
    return OAuthClientFlow(SERVER, ClientConfig(grant=grant, dpop=dpop, **config),
                           entropy=counter_entropy(), dpop_keys=lambda: DPOP_JWK)


def run(flow: OAuthClientFlow, answer: Any = good, *, now: float = NOW,
        challenge: HTTPResponse | None = None) -> tuple[Any, list[HTTPRequest]]:
    seen: list[HTTPRequest] = []
    action = flow.start(now, challenge)
    while not isinstance(action, Authorized):
        assert isinstance(action, HTTPRequest), action
        seen.append(action)
        action = flow.receive_response(answer(action), now)
    return action.tokens, seen


def form(request: HTTPRequest) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.body.decode()).items()}


def test_client_secret_basic_form_encodes_before_base64() -> None:
    tokens, seen = run(flow_for(GRANTS["basic"]))
    token = seen[-1]
    assert form(token) == {"grant_type": "client_credentials", "resource": SERVER}
    raw = base64.b64decode(token.header("Authorization").split()[1]).decode()
    assert raw == "c1:a+b%3Ac"  # RFC 6749 §2.3.1
    assert tokens.access_token == "at-1" and tokens.token_type == "Bearer"


def test_private_key_jwt_signs_a_fresh_assertion_for_the_issuer() -> None:
    _, seen = run(flow_for(GRANTS["jwt"]))
    fields = form(seen[-1])
    assert fields["client_assertion_type"] == (
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    claims = jwt.decode(fields["client_assertion"], CLIENT_KEY).claims
    assert claims["iss"] == claims["sub"] == "c1"
    assert claims["aud"] == ISSUER
    assert claims["exp"] > NOW and claims["jti"]
    assert seen[-1].header("Authorization") is None


def test_scopes_come_from_the_grant_else_the_challenge_else_the_metadata() -> None:
    _, seen = run(flow_for(GRANTS["basic"]), lambda r: good(r, scopes=["a", "b"]))
    assert form(seen[-1])["scope"] == "a b"
    challenge = HTTPResponse(401, (("WWW-Authenticate", 'Bearer scope="x"'),))
    _, seen = run(flow_for(GRANTS["basic"]), lambda r: good(r, scopes=["a"]),
                  challenge=challenge)
    assert form(seen[-1])["scope"] == "x"
    grant = ClientCredentialsGrant(ClientCredentials("c1", "s"), scope="only")
    _, seen = run(flow_for(grant), lambda r: good(r, scopes=["a"]))
    assert form(seen[-1])["scope"] == "only"


def test_tokens_are_reused_while_fresh_and_re_requested_at_expiry() -> None:
    flow = flow_for(GRANTS["basic"])
    run(flow)
    _tokens, seen = run(flow, now=NOW + 10)  # fresh: nothing asked
    assert seen == []
    _, seen = run(flow, now=NOW + 100)  # within the refresh margin of its 120 s
    assert [form(r)["grant_type"] for r in seen if r.method == "POST"] == [
        "client_credentials"]


def test_workload_identity_and_id_jag_send_the_jwt_bearer_grant() -> None:
    _, seen = run(flow_for(GRANTS["wif"]))
    assert form(seen[-1]) == {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                              "assertion": "platform.jwt.token", "resource": SERVER,
                              "client_id": "c1"}
    _, seen = run(flow_for(GRANTS["id-jag"]))
    exchange, bearer = seen[-2:]
    assert exchange.url == IDP_URL
    assert form(exchange) == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": JAG, "subject_token": "id.token.x",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "audience": ISSUER, "resource": SERVER, "client_id": "idp-c"}
    assert form(bearer)["assertion"] == "the.id.jag"
    assert bearer.header("Authorization").startswith("Basic ")


def test_a_refused_grant_is_not_retried() -> None:
    def refuse(request: HTTPRequest) -> HTTPResponse:
        if request.url == TOKEN_URL:
            return json_response({"error": "invalid_grant"}, 400)
        return good(request)

    with pytest.raises(TokenError) as caught:
        run(flow_for(GRANTS["wif"]), refuse)
    assert caught.value.error == "invalid_grant"


def test_dpop_token_request_answers_the_nonce_once_and_binds_the_key() -> None:
    verifier = ProofVerifier()
    nonces: list[str | None] = []

    def answer(request: HTTPRequest) -> HTTPResponse:
        if request.url == TOKEN_URL:
            proof = request.header("DPoP")
            assert proof is not None
            verifier.check([proof], method="POST", url=TOKEN_URL, now=NOW,
                           access_token=None)
            nonce = json.loads(base64.urlsafe_b64decode(proof.split(".")[1] + "==")).get(
                "nonce")
            nonces.append(nonce)
            if nonce != "n-1":
                return HTTPResponse(400, (("DPoP-Nonce", "n-1"),),
                                    b'{"error": "use_dpop_nonce"}')
        return good(request)

    flow = flow_for(GRANTS["basic"], dpop=True)
    tokens, _ = run(flow, answer)
    assert nonces == [None, "n-1"]
    assert tokens.dpop_bound and tokens.authorization_header()[1].startswith("DPoP ")
    # Each MCP request gets its own proof, with the resource server's nonce once it asked.
    (name, first), = flow.proof_headers(tokens, "POST", SERVER, now=NOW, jti="r1")
    asked = HTTPResponse(401, (("WWW-Authenticate", 'DPoP error="use_dpop_nonce"'),
                               ("DPoP-Nonce", "rs-7")))
    again, seen = run(flow, answer, challenge=asked)
    assert seen == [] and again == tokens  # no new token: only the nonce was missing
    ((_, second),) = flow.proof_headers(tokens, "POST", SERVER, now=NOW, jti="r2")
    claims = json.loads(base64.urlsafe_b64decode(second.split(".")[1] + "=="))
    assert claims["nonce"] == "rs-7" and claims["htm"] == "POST" and claims["htu"] == SERVER
    assert name == "DPoP" and first != second


def test_dpop_is_not_used_where_the_server_does_not_offer_it() -> None:
    def answer(request: HTTPRequest) -> HTTPResponse:
        if request.url == AS_URL:
            doc = json.loads(good(request).body)
            del doc["dpop_signing_alg_values_supported"]
            return json_response(doc)
        return good(request)

    tokens, seen = run(flow_for(GRANTS["basic"], dpop=True), answer)
    assert seen[-1].header("DPoP") is None and not tokens.dpop_bound


# -- any answers end well ------------------------------------------------------------------

GARBAGE = st.one_of(
    st.builds(HTTPResponse, st.integers(100, 599),
              st.lists(st.tuples(st.sampled_from(["Content-Type", "DPoP-Nonce", "Location",
                                                  "WWW-Authenticate"]),
                                 st.text(max_size=20)), max_size=3).map(tuple),
              st.binary(max_size=60)),
    st.builds(json_response,
              st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                           lambda kids: st.lists(kids, max_size=3)
                           | st.dictionaries(st.sampled_from(
                               ["access_token", "token_type", "expires_in", "error",
                                "issued_token_type", "issuer", "token_endpoint", "resource",
                                "authorization_servers"]), kids, max_size=4), max_leaves=8),
              st.sampled_from([200, 400, 401])),
    st.just(HTTPResponse(400, (("DPoP-Nonce", "again"),), b'{"error": "use_dpop_nonce"}')),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(GRANTS)), dpop=st.booleans(), data=st.data(),
       challenges=st.lists(st.sampled_from([
           HTTPResponse(401), HTTPResponse(401, (("WWW-Authenticate",
                                                  'DPoP error="use_dpop_nonce"'),
                                                 ("DPoP-Nonce", "x"))),
           HTTPResponse(403, (("WWW-Authenticate", 'Bearer error="insufficient_scope", '
                                                   'scope="more"'),)),
           HTTPResponse(401, (("WWW-Authenticate", 'Bearer resource_metadata="::"'),))]),
           max_size=6))
def test_any_answers_end_in_tokens_or_a_named_error_within_the_bounds(
        kind: str, dpop: bool, data: st.DataObject, challenges: list[HTTPResponse]) -> None:
    flow = flow_for(GRANTS[kind], dpop=dpop)
    limit = flow.config.max_requests
    runs = 0
    for challenge in [None, *challenges]:
        runs += 1
        requests = 0
        try:
            action = flow.start(NOW, challenge)
            while not isinstance(action, Authorized):
                assert isinstance(action, HTTPRequest)
                requests += 1
                assert requests <= limit
                answer = data.draw(st.one_of(st.just(good(action)), GARBAGE))
                action = flow.receive_response(answer, NOW)
        except AuthFlowError as exc:
            assert exc.step and str(exc)
            if exc.step == "challenge" and "in a row" in str(exc):
                break  # the consecutive-challenge bound ended it
            continue
        assert action.tokens.access_token
    assert runs <= flow.config.max_consecutive_challenges + 2
