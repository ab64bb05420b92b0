"""The resource-server pieces of mcp_sansio.auth: metadata, challenges, bearer extraction,
request decisions, the JWT verifier (joserfc) and the introspection verifier."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joserfc import jwt
from joserfc.jwk import ECKey, OctKey, RSAKey

from mcp_sansio.auth import (
    AccessInfo,
    HTTPResponse,
    InsufficientScope,
    IntrospectionVerifier,
    InvalidRequest,
    InvalidToken,
    Refusal,
    authorize_request,
    bearer_challenge,
    bearer_params,
    extract_bearer_token,
    metadata_url,
    parse_challenges,
    protected_resource_metadata,
)
from mcp_sansio.auth.jwt import JWTVerifier, UnknownKey

RESOURCE = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
PRM = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
NOW = 1_800_000_000


# -- metadata and challenges -------------------------------------------------------------------


def test_the_protected_resource_metadata_document() -> None:
    doc = protected_resource_metadata(RESOURCE, [ISSUER], scopes_supported=["mcp:read"],
                                      resource_name="Example")
    assert doc == {"resource": RESOURCE, "authorization_servers": [ISSUER],
                   "bearer_methods_supported": ["header"], "scopes_supported": ["mcp:read"],
                   "resource_name": "Example"}
    assert metadata_url(RESOURCE) == PRM
    assert metadata_url("https://mcp.example.com/") == \
        "https://mcp.example.com/.well-known/oauth-protected-resource"
    with pytest.raises(ValueError):
        protected_resource_metadata(RESOURCE, [])


def test_challenges_parse_back_to_what_was_built() -> None:
    header = bearer_challenge(resource_metadata=PRM, scope="files:read files:write",
                              error="insufficient_scope", error_description="need write")
    (challenge,) = parse_challenges(header)
    assert challenge.scheme == "bearer"
    assert challenge.params == {"resource_metadata": PRM, "scope": "files:read files:write",
                                "error": "insufficient_scope",
                                "error_description": "need write"}
    assert challenge.scopes == ("files:read", "files:write")
    assert bearer_challenge() == "Bearer"


@pytest.mark.parametrize(("name", "value"), [
    ("scope", 'a"b'), ("scope", "a\\b"), ("scope", ""), ("error", "é"),
    ("resource_metadata", 'https://x/"'),
])
def test_the_challenge_builder_refuses_values_rfc_6750_does_not_allow(name: str,
                                                                      value: str) -> None:
    with pytest.raises(ValueError, match=name):
        bearer_challenge(**{name: value})


def test_several_challenges_on_one_line_and_a_token68() -> None:
    found = parse_challenges('Basic realm="x", Newauth abc==, Bearer scope="a", '
                             'resource_metadata="https://m/x"')
    assert [c.scheme for c in found] == ["basic", "newauth", "bearer"]
    assert found[1].token68 == "abc=="
    assert found[2].params == {"scope": "a", "resource_metadata": "https://m/x"}
    assert bearer_params(["Basic realm=x", 'Bearer error="invalid_token"']) == {
        "error": "invalid_token"}
    assert bearer_params(["Basic realm=x"]) is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_parsing_any_header_value_never_fails(value: str) -> None:
    for challenge in parse_challenges(value):
        assert challenge.scheme == challenge.scheme.lower()
        assert all(name == name.lower() for name in challenge.params)


@settings(max_examples=200, deadline=None)
@given(scope=st.lists(st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E,
                                            exclude_characters='"\\'), min_size=1,
                              max_size=8), min_size=1, max_size=4),
       description=st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E,
                                         exclude_characters='"\\'), min_size=1, max_size=20))
def test_built_challenges_parse_back(scope: list[str], description: str) -> None:
    header = bearer_challenge(resource_metadata=PRM, scope=" ".join(scope),
                              error="insufficient_scope", error_description=description)
    assert bearer_params([header]) == {"resource_metadata": PRM, "scope": " ".join(scope),
                                       "error": "insufficient_scope",
                                       "error_description": description}


# -- bearer tokens -----------------------------------------------------------------------------


def test_the_bearer_token_comes_from_the_header_only() -> None:
    assert extract_bearer_token([("Authorization", "Bearer abc.def-_~+/=")], "/mcp") == \
        "abc.def-_~+/="
    assert extract_bearer_token([(b"authorization", b"bearer xyz")], b"/mcp") == "xyz"
    assert extract_bearer_token([], "/mcp") is None
    assert extract_bearer_token([("Authorization", "Basic dXNlcjpwdw==")], "/mcp") is None


@pytest.mark.parametrize(("headers", "target"), [
    ([], "/mcp?access_token=abc"),
    ([("Authorization", "Bearer abc")], "/mcp?x=1&access_token=abc"),
    ([("Authorization", "Bearer a"), ("authorization", "Bearer b")], "/mcp"),
    ([("Authorization", "Bearer a b")], "/mcp"),
    ([("Authorization", "Bearer ")], "/mcp"),
    ([("Authorization", 'Bearer "quoted"')], "/mcp"),
])
def test_tokens_in_the_query_or_malformed_are_refused(headers: list[tuple[str, str]],
                                                      target: str) -> None:
    with pytest.raises(InvalidRequest):
        extract_bearer_token(headers, target)


class _Verifier:
    def verify(self, token: str, now: float) -> AccessInfo:
        if token == "good":
            return AccessInfo("alice", frozenset({"mcp:read"}))
        if token == "narrow":
            raise InsufficientScope(frozenset({"mcp:admin"}))
        raise InvalidToken("unknown token")


def _decide(headers: list[tuple[str, str]], target: str = "/mcp",
            scopes: tuple[str, ...] = ("mcp:read",)) -> AccessInfo | Refusal:
    return authorize_request(headers, target, _Verifier(), NOW, resource_metadata=PRM,
                             required_scopes=scopes)


def _challenge_of(refusal: AccessInfo | Refusal) -> tuple[int, dict[str, str]]:
    assert isinstance(refusal, Refusal)
    ((name, value),) = refusal.headers
    assert name == "WWW-Authenticate"
    params = bearer_params([value])
    assert params is not None
    return refusal.status, params


def test_request_decisions() -> None:
    info = _decide([("Authorization", "Bearer good")])
    assert isinstance(info, AccessInfo) and info.subject == "alice"
    # No token: 401 naming the metadata and the scope, and no error code (RFC 6750 §3.1).
    assert _challenge_of(_decide([])) == (401, {"resource_metadata": PRM, "scope": "mcp:read"})
    status, params = _challenge_of(_decide([("Authorization", "Bearer bad")]))
    assert (status, params["error"]) == (401, "invalid_token")
    status, params = _challenge_of(_decide([("Authorization", "Bearer good")],
                                           scopes=("mcp:read", "mcp:write")))
    assert (status, params["error"]) == (403, "insufficient_scope")
    assert params["scope"] == "mcp:read mcp:write"  # all of them, in one challenge
    status, params = _challenge_of(_decide([("Authorization", "Bearer narrow")]))
    assert (status, params["error"], params["scope"]) == (403, "insufficient_scope",
                                                         "mcp:admin mcp:read")
    status, params = _challenge_of(_decide([], "/mcp?access_token=good"))
    assert (status, params["error"]) == (400, "invalid_request")
    # Without required scopes, a challenge carries no scope parameter.
    assert _challenge_of(_decide([], scopes=())) == (401, {"resource_metadata": PRM})


# -- JWT access tokens ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rsa() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": "k1", "alg": "RS256"})


def _jwks(*keys: RSAKey | ECKey) -> dict[str, object]:
    return {"keys": [k.as_dict(private=False) for k in keys]}


def _sign(key: RSAKey | ECKey, alg: str = "RS256", **claims: object) -> str:
    base: dict[str, object] = {"iss": ISSUER, "aud": RESOURCE, "sub": "alice",
                               "exp": NOW + 300, "iat": NOW, "scope": "mcp:read mcp:write",
                               "client_id": "c1"}
    base.update(claims)
    base = {k: v for k, v in base.items() if v is not None}
    kid = key.kid
    return jwt.encode({"alg": alg, "kid": kid}, base, key)


def test_a_good_jwt_gives_the_principal_and_scopes(rsa: RSAKey) -> None:
    verifier = JWTVerifier(_jwks(rsa), issuer=ISSUER, audience=RESOURCE,
                           required_scopes=["mcp:read"])
    info = verifier.verify(_sign(rsa), NOW)
    assert info.subject == "alice" and info.client_id == "c1"
    assert info.scopes == {"mcp:read", "mcp:write"}
    assert info.expires_at == NOW + 300
    info = verifier.verify(_sign(rsa, aud=["other", RESOURCE], scope=None,
                                 scp=["mcp:read"]), NOW)
    assert info.scopes == {"mcp:read"}


@pytest.mark.parametrize(("claims", "why"), [
    ({"aud": "https://other.example.com"}, "not for this resource"),
    ({"aud": None}, "not for this resource"),
    ({"iss": "https://evil.example.com"}, "iss"),
    ({"iss": None}, "iss"),
    ({"exp": NOW - 31}, "exp"),
    ({"exp": None}, "exp"),
    ({"nbf": NOW + 120}, "nbf"),
])
def test_jwt_claims_are_checked(rsa: RSAKey, claims: dict[str, object], why: str) -> None:
    verifier = JWTVerifier(_jwks(rsa), issuer=ISSUER, audience=RESOURCE)
    with pytest.raises(InvalidToken, match=why):
        verifier.verify(_sign(rsa, **claims), NOW)


def test_expiry_uses_the_given_now_with_leeway(rsa: RSAKey) -> None:
    verifier = JWTVerifier(_jwks(rsa), issuer=ISSUER, audience=RESOURCE, leeway=0)
    token = _sign(rsa)
    verifier.verify(token, NOW + 299)
    with pytest.raises(InvalidToken):
        verifier.verify(token, NOW + 300)


def test_missing_required_scopes_are_insufficient_not_invalid(rsa: RSAKey) -> None:
    verifier = JWTVerifier(_jwks(rsa), issuer=ISSUER, audience=RESOURCE,
                           required_scopes=["mcp:admin"])
    with pytest.raises(InsufficientScope) as caught:
        verifier.verify(_sign(rsa), NOW)
    assert caught.value.required == {"mcp:admin"}


def test_signatures_are_checked_and_symmetric_or_unknown_keys_refused(rsa: RSAKey) -> None:
    verifier = JWTVerifier(_jwks(rsa), issuer=ISSUER, audience=RESOURCE)
    other = RSAKey.generate_key(2048, parameters={"kid": "k1"})
    with pytest.raises(InvalidToken):
        verifier.verify(_sign(other), NOW)  # same kid, wrong key: bad signature
    stranger = RSAKey.generate_key(2048, parameters={"kid": "k2"})
    with pytest.raises(UnknownKey):
        verifier.verify(_sign(stranger), NOW)
    verifier.set_jwks(_jwks(rsa, stranger))  # the adapter refetched after key rotation
    assert verifier.verify(_sign(stranger), NOW).subject == "alice"
    secret = OctKey.generate_key(256)
    hs = jwt.encode({"alg": "HS256"}, {"iss": ISSUER, "aud": RESOURCE, "exp": NOW + 60},
                    secret)
    with pytest.raises(InvalidToken):
        verifier.verify(hs, NOW)
    none = ".".join(base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode()
                    for part in ({"alg": "none"}, {"iss": ISSUER, "aud": RESOURCE,
                                                   "exp": NOW + 60})) + "."
    with pytest.raises(InvalidToken):
        verifier.verify(none, NOW)


def test_an_ec_key_works_too() -> None:
    key = ECKey.generate_key("P-256", parameters={"kid": "e1"})
    verifier = JWTVerifier(_jwks(key), issuer=ISSUER, audience=RESOURCE)
    assert verifier.verify(_sign(key, alg="ES256"), NOW).subject == "alice"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_string_is_a_token_or_invalid(text: str) -> None:
    verifier = _garbage_verifier()
    with pytest.raises(InvalidToken):
        verifier.verify(text, NOW)


_GARBAGE: list[JWTVerifier] = []


def _garbage_verifier() -> JWTVerifier:
    if not _GARBAGE:
        key = ECKey.generate_key("P-256", parameters={"kid": "e1"})
        _GARBAGE.append(JWTVerifier(_jwks(key), issuer=ISSUER, audience=RESOURCE))
    return _GARBAGE[0]


def test_a_broken_jwks_is_refused_up_front() -> None:
    with pytest.raises(ValueError, match="JWKS"):
        JWTVerifier({"keys": [{"kty": "nope"}]}, issuer=ISSUER, audience=RESOURCE)


def test_the_jwt_verifier_answers_requests(rsa: RSAKey) -> None:
    verifier = JWTVerifier(_jwks(rsa), issuer=ISSUER, audience=RESOURCE)
    info = authorize_request([("Authorization", f"Bearer {_sign(rsa)}")], "/mcp", verifier,
                             NOW, resource_metadata=PRM, required_scopes=["mcp:read"])
    assert isinstance(info, AccessInfo)
    refusal = authorize_request([("Authorization", f"Bearer {_sign(rsa, aud='x')}")], "/mcp",
                                verifier, NOW, resource_metadata=PRM)
    assert isinstance(refusal, Refusal) and refusal.status == 401


# -- introspection (RFC 7662) ---------------------------------------------------------------------


def _introspector() -> IntrospectionVerifier:
    return IntrospectionVerifier(ISSUER + "/introspect", client_id="rs", client_secret="pw",
                                 resource=RESOURCE, issuer=ISSUER)


def test_the_introspection_request() -> None:
    request = _introspector().request("tok")
    assert (request.method, request.url) == ("POST", ISSUER + "/introspect")
    assert request.body == b"token=tok&token_type_hint=access_token"
    assert request.header("authorization") == "Basic " + base64.b64encode(b"rs:pw").decode()


def _answer(doc: object, status: int = 200) -> HTTPResponse:
    return HTTPResponse(status, (), json.dumps(doc).encode())


def test_an_active_token_for_this_resource() -> None:
    info = _introspector().decide(_answer({
        "active": True, "sub": "alice", "scope": "mcp:read", "aud": [RESOURCE],
        "iss": ISSUER, "exp": NOW + 10, "client_id": "c1"}), NOW)
    assert (info.subject, info.scopes, info.client_id) == ("alice", {"mcp:read"}, "c1")


@pytest.mark.parametrize("response", [
    _answer({"active": False}),
    _answer({"active": True, "iss": ISSUER, "exp": NOW}),
    _answer({"active": True, "iss": ISSUER, "aud": "https://other"}),
    _answer({"active": True, "iss": "https://evil"}),
    _answer({"active": "true", "iss": ISSUER}),
    _answer({"active": True, "iss": ISSUER}, status=500),
    HTTPResponse(200, (), b"not json"),
    _answer([1]),
])
def test_inactive_or_foreign_introspection_answers_are_invalid(response: HTTPResponse) -> None:
    with pytest.raises(InvalidToken):
        _introspector().decide(response, NOW)


def test_an_introspection_answer_without_audience_is_refused_unless_vouched_for() -> None:
    # MCP "Token Handling": the server MUST validate the token was issued for it; an answer
    # naming no audience cannot show that, so it is refused by default.
    answer = _answer({"active": True, "sub": "alice", "iss": ISSUER, "exp": NOW + 10})
    with pytest.raises(InvalidToken, match="no audience"):
        _introspector().decide(answer, NOW)
    vouched = IntrospectionVerifier(ISSUER + "/introspect", client_id="rs", client_secret="pw",
                                    resource=RESOURCE, issuer=ISSUER, require_audience=False)
    assert vouched.decide(answer, NOW).subject == "alice"


# -- properties of the request decision -----------------------------------------------------------

_HEADER_VALUE = st.one_of(
    st.text(max_size=40),
    st.builds(lambda s, t: f"{s} {t}", st.sampled_from(["Bearer", "bearer", "Basic", "DPoP"]),
              st.text(max_size=30)),
)


@settings(max_examples=300, deadline=None)
@given(headers=st.lists(st.tuples(st.sampled_from(["Authorization", "authorization", "X-A"]),
                                  _HEADER_VALUE), max_size=3),
       target=st.one_of(st.text(max_size=40),
                        st.builds(lambda q: "/mcp?" + q, st.text(max_size=30))),
       scopes=st.lists(st.sampled_from(["mcp:read", "mcp:write"]), max_size=2))
def test_every_request_gets_a_decision_with_a_readable_challenge(
        headers: list[tuple[str, str]], target: str, scopes: list[str]) -> None:
    decision = authorize_request(headers, target, _Verifier(), NOW, resource_metadata=PRM,
                                 required_scopes=scopes)
    if isinstance(decision, AccessInfo):
        assert set(scopes) <= decision.scopes
        return
    assert decision.status in (400, 401, 403)
    status, params = _challenge_of(decision)
    assert params["resource_metadata"] == PRM
    assert params.get("error") == {400: "invalid_request", 401: params.get("error"),
                                   403: "insufficient_scope"}[status]


def test_importing_mcp_sansio_auth_does_not_need_joserfc() -> None:
    import subprocess
    import sys

    code = ("import sys, mcp_sansio.auth\n"
            "assert 'joserfc' not in sys.modules, 'joserfc imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
