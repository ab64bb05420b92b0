"""The OAuth client flow (mcp_sansio.auth): each step against a fake world, each rule table,
each way a server can be wrong, and a property: any response sequence ends, soon."""

from __future__ import annotations

import base64
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mcp_sansio.auth import (
    STEPS,
    AuthFlowError,
    AuthorizationDenied,
    Authorized,
    ClientConfig,
    ClientCredentials,
    HTTPRequest,
    HTTPResponse,
    IssuerMismatch,
    LimitExceeded,
    MemoryStorage,
    MetadataError,
    OAuthClientFlow,
    PKCENotSupported,
    RegistrationError,
    TokenError,
    UserAuthorization,
    as_metadata_urls,
    choose_auth_method,
    rules,
)
from tests.auth_world import REDIRECT, World, counter_entropy, drive, json_response, new_flow

NOW = 1000.0


def urls(world: World) -> list[str]:
    return [f"{r.method} {r.url}" for r in world.requests]


# -- the whole flow -------------------------------------------------------------------------


def test_a_401_leads_through_every_step_in_the_spec_order() -> None:
    world = World()
    flow = new_flow(world)
    done = drive(flow, world, flow.start(NOW, world.challenge()))
    assert urls(world) == [
        "GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        "GET https://auth.example.com/.well-known/oauth-authorization-server",
        "POST https://auth.example.com/register",
        "POST https://auth.example.com/token",
    ]
    assert done.tokens.access_token == "access-1"
    assert done.tokens.authorization_header() == ("Authorization", "Bearer access-1")
    assert done.tokens.expires_at == NOW + 3600
    # RFC 8707: the resource goes in both the authorization and the token request.
    (asked,) = world.authorization_requests
    assert asked["resource"] == world.server
    assert world.token_requests[0]["resource"] == world.server
    # PKCE S256 (the fake server checks verifier against challenge; it issued a token).
    assert asked["code_challenge_method"] == "S256"
    assert 43 <= len(world.token_requests[0]["code_verifier"]) <= 128
    # Scope: no challenge scope, so the resource's scopes_supported.
    assert asked["scope"] == "mcp:read"
    # Dynamic registration as a public native client (loopback redirect, 2026-07-28).
    (registration,) = world.registered
    assert registration["application_type"] == "native"
    assert registration["redirect_uris"] == [REDIRECT]
    assert registration["token_endpoint_auth_method"] == "none"
    assert "refresh_token" in registration["grant_types"]
    assert world.token_requests[0]["client_id"] == "client-1"


def test_the_user_step_carries_the_authorization_url_and_state() -> None:
    world = World()
    flow = new_flow(world)
    action = flow.start(NOW, world.challenge())
    while isinstance(action, HTTPRequest):
        action = flow.receive_response(world.answer(action), NOW)
    assert isinstance(action, UserAuthorization)
    assert action.url.startswith(world.issuer + "/authorize?")
    query = parse_qs(urlsplit(action.url).query)
    assert query["state"] == [action.state]
    assert query["response_type"] == ["code"]
    assert action.redirect_uri == REDIRECT


def test_pkce_verifier_and_state_come_from_the_injected_entropy() -> None:
    runs = []
    for _ in range(2):
        world = World()
        flow = new_flow(world)
        drive(flow, world, flow.start(NOW, world.challenge()))
        runs.append((world.authorization_requests[0]["state"],
                     world.token_requests[0]["code_verifier"]))
    assert runs[0] == runs[1]  # same entropy source, same values: nothing else is random


def test_the_flow_asks_for_nothing_when_calls_come_out_of_order() -> None:
    world = World()
    flow = new_flow(world)
    with pytest.raises(RuntimeError):
        flow.receive_response(HTTPResponse(200), NOW)
    action = flow.start(NOW, world.challenge())
    with pytest.raises(RuntimeError):
        flow.receive_redirect("http://127.0.0.1/cb?code=x", NOW)
    assert isinstance(action, HTTPRequest)


# -- scope selection --------------------------------------------------------------------------


def test_the_challenge_scope_wins_over_scopes_supported() -> None:
    world = World()
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge(scope="files:read files:write")))
    assert world.authorization_requests[0]["scope"] == "files:read files:write"


def test_no_scope_anywhere_means_no_scope_parameter() -> None:
    world = World()
    del world.prm["scopes_supported"]
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert "scope" not in world.authorization_requests[0]


def test_step_up_on_403_asks_for_the_union_of_scopes_and_is_bounded() -> None:
    world = World()
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge(scope="a")))
    flow.request_succeeded()
    forbidden = world.challenge(scope="b", status=403, error="insufficient_scope")
    drive(flow, world, flow.start(NOW, forbidden))
    assert world.authorization_requests[-1]["scope"].split() == ["a", "b"]
    # No refresh on step-up: a refresh cannot widen the scope.
    assert world.token_requests[-1]["grant_type"] == "authorization_code"
    # The server keeps refusing: after MAX_CONSECUTIVE_CHALLENGES the failure is permanent.
    for _ in range(rules.MAX_CONSECUTIVE_CHALLENGES - 1):
        drive(flow, world, flow.start(NOW, forbidden))
    with pytest.raises(LimitExceeded) as caught:
        flow.start(NOW, forbidden)
    assert caught.value.step == "challenge" and caught.value.url == world.server


# -- discovery ---------------------------------------------------------------------------------


def test_without_resource_metadata_the_path_then_root_well_known_urls_are_tried() -> None:
    world = World()
    root = "https://mcp.example.com/.well-known/oauth-protected-resource"
    world.overrides[world.prm_url()] = HTTPResponse(404)
    world.overrides[root] = json_response(world.prm)
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge(with_metadata=False)))
    assert urls(world)[:2] == [f"GET {world.prm_url()}", f"GET {root}"]


def test_the_challenge_resource_metadata_url_comes_first() -> None:
    world = World()
    elsewhere = "https://meta.example.com/prm"
    world.overrides[elsewhere] = json_response(world.prm)
    flow = new_flow(world)
    challenge = HTTPResponse(401, (("www-authenticate",
                                    f'Bearer resource_metadata="{elsewhere}"'),))
    drive(flow, world, flow.start(NOW, challenge))
    assert urls(world)[0] == f"GET {elsewhere}"


def test_authorization_server_metadata_urls_follow_the_spec_order() -> None:
    assert as_metadata_urls("https://auth.example.com/tenant1") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert as_metadata_urls("https://auth.example.com") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]


def test_openid_configuration_is_the_fallback() -> None:
    world = World(issuer="https://auth.example.com/tenant1")
    world.overrides["https://auth.example.com/.well-known/oauth-authorization-server/tenant1"] \
        = HTTPResponse(404)
    world.overrides["https://auth.example.com/.well-known/openid-configuration/tenant1"] = \
        HTTPResponse(404)
    world.overrides["https://auth.example.com/tenant1/.well-known/openid-configuration"] = \
        json_response(world.asm)
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert urls(world)[1:4] == [f"GET {u}" for u in as_metadata_urls(world.issuer)]


def test_an_issuer_mismatch_in_metadata_is_refused() -> None:
    world = World()
    world.asm["issuer"] = "https://evil.example.com"
    flow = new_flow(world)
    with pytest.raises(IssuerMismatch) as caught:
        drive(flow, world, flow.start(NOW, world.challenge()))
    assert caught.value.step == "authorization-server-metadata"
    assert caught.value.url == \
        "https://auth.example.com/.well-known/oauth-authorization-server"


@pytest.mark.parametrize("methods", [None, ["plain"], "S256", []])
def test_an_authorization_server_without_s256_is_refused(methods: object) -> None:
    world = World()
    if methods is None:
        del world.asm["code_challenge_methods_supported"]
    else:
        world.asm["code_challenge_methods_supported"] = methods
    flow = new_flow(world)
    with pytest.raises(PKCENotSupported) as caught:
        drive(flow, world, flow.start(NOW, world.challenge()))
    assert caught.value.step == "authorization"
    assert not world.authorization_requests  # the user was never sent anywhere


@pytest.mark.parametrize(("doc", "why"), [
    ({"resource": "https://mcp.example.com/mcp"}, "authorization_servers"),
    ({"resource": "https://mcp.example.com/mcp", "authorization_servers": []},
     "authorization_servers"),
    ({"resource": "https://mcp.example.com/mcp", "authorization_servers": ["not a url"]},
     "authorization_servers"),
    ({"authorization_servers": ["https://auth.example.com"]}, "resource"),
    ({"resource": "https://other.example.com/", "authorization_servers":
      ["https://auth.example.com"]}, "does not identify"),
    ([1, 2], "not a JSON object"),
])
def test_malformed_resource_metadata_is_a_clear_error(doc: object, why: str) -> None:
    world = World()
    world.overrides[world.prm_url()] = json_response(doc)
    flow = new_flow(world)
    with pytest.raises(MetadataError) as caught:
        drive(flow, world, flow.start(NOW, world.challenge()))
    assert caught.value.step == "protected-resource-metadata"
    assert caught.value.url == world.prm_url()
    assert why in str(caught.value)


def test_a_parent_resource_covers_the_server_url() -> None:
    world = World()
    world.prm["resource"] = "https://MCP.example.com"
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert world.authorization_requests[0]["resource"] == "https://MCP.example.com"


@pytest.mark.parametrize("field", ["authorization_endpoint", "token_endpoint"])
def test_metadata_without_a_required_endpoint_is_refused(field: str) -> None:
    world = World()
    world.asm[field] = 42
    flow = new_flow(world)
    with pytest.raises(MetadataError, match=field):
        drive(flow, world, flow.start(NOW, world.challenge()))


def test_not_json_and_oversized_and_redirect_loops_end_with_named_errors() -> None:
    world = World()
    world.overrides[world.prm_url()] = HTTPResponse(200, (), b"<html>")
    flow = new_flow(world)
    with pytest.raises(MetadataError, match="not JSON"):
        drive(flow, world, flow.start(NOW, world.challenge()))

    world = World()
    world.overrides[world.prm_url()] = HTTPResponse(200, (), b" " * (2 << 20))
    flow = new_flow(world)
    with pytest.raises(LimitExceeded, match="exceeds") as caught:
        drive(flow, world, flow.start(NOW, world.challenge()))
    assert caught.value.url == world.prm_url()

    world = World()
    world.overrides[world.prm_url()] = HTTPResponse(302, (("Location", world.prm_url()),))
    flow = new_flow(world)
    with pytest.raises(LimitExceeded, match="redirects"):
        drive(flow, world, flow.start(NOW, world.challenge()))
    assert len(world.requests) == rules.MAX_REDIRECTS + 1


def test_a_redirect_to_the_metadata_is_followed() -> None:
    world = World()
    moved = "https://mcp.example.com/moved"
    world.overrides[world.prm_url()] = HTTPResponse(301, (("Location", "/moved"),))
    world.overrides[moved] = json_response(world.prm)
    flow = new_flow(world)
    assert isinstance(drive(flow, world, flow.start(NOW, world.challenge())), Authorized)
    assert urls(world)[:2] == [f"GET {world.prm_url()}", f"GET {moved}"]


# -- the redirect (RFC 9207, state, errors) ----------------------------------------------------


@pytest.mark.parametrize(("advertised", "iss", "ok"), [
    (True, "https://auth.example.com", True),
    (True, None, False),
    (True, "https://auth.example.com/", False),  # no normalisation (2026-07-28)
    (False, "https://evil.example.com", False),
    (False, None, True),
    (False, "https://auth.example.com", True),
])
def test_the_iss_check_follows_the_table(advertised: bool, iss: str | None, ok: bool) -> None:
    world = World(redirect_iss=iss)
    world.asm["authorization_response_iss_parameter_supported"] = advertised
    flow = new_flow(world)
    if ok:
        assert isinstance(drive(flow, world, flow.start(NOW, world.challenge())), Authorized)
    else:
        with pytest.raises(IssuerMismatch) as caught:
            drive(flow, world, flow.start(NOW, world.challenge()))
        assert caught.value.step == "authorization-response"
        assert not world.token_requests  # the code never reached a token endpoint


def _to_user_step(world: World, flow: OAuthClientFlow) -> UserAuthorization:
    action = flow.start(NOW, world.challenge())
    while isinstance(action, HTTPRequest):
        action = flow.receive_response(world.answer(action), NOW)
    assert isinstance(action, UserAuthorization)
    return action


def test_a_wrong_state_or_an_error_redirect_or_no_code_is_refused() -> None:
    world = World()
    flow = new_flow(world)
    step = _to_user_step(world, flow)
    with pytest.raises(AuthorizationDenied, match="state"):
        flow.receive_redirect(f"{REDIRECT}?code=c&state=other&iss={world.issuer}", NOW)

    flow = new_flow(world)
    step = _to_user_step(world, flow)
    with pytest.raises(AuthorizationDenied) as caught:
        flow.receive_redirect(f"{REDIRECT}?error=access_denied&state={step.state}"
                              f"&iss={world.issuer}", NOW)
    assert caught.value.error == "access_denied"

    flow = new_flow(world)
    step = _to_user_step(world, flow)
    with pytest.raises(AuthorizationDenied, match="no code"):
        flow.receive_redirect(f"{REDIRECT}?state={step.state}&iss={world.issuer}", NOW)


# -- registration ------------------------------------------------------------------------------


def test_pre_registered_credentials_come_first() -> None:
    world = World()
    world.asm["client_id_metadata_document_supported"] = True
    flow = new_flow(world, pre_registered={world.issuer: ClientCredentials("pre")},
                    client_id_metadata_url="https://app.example.com/client.json")
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert not world.registered
    assert world.authorization_requests[0]["client_id"] == "pre"


def test_a_client_id_metadata_document_beats_dynamic_registration() -> None:
    world = World()
    world.asm["client_id_metadata_document_supported"] = True
    doc = "https://app.example.com/client.json"
    flow = new_flow(world, client_id_metadata_url=doc)
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert not world.registered
    assert world.authorization_requests[0]["client_id"] == doc


def test_a_metadata_document_is_not_used_where_the_server_does_not_support_it() -> None:
    world = World()
    flow = new_flow(world, client_id_metadata_url="https://app.example.com/client.json")
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert len(world.registered) == 1


def test_no_way_to_register_names_the_issuer_and_the_foreign_credentials() -> None:
    world = World()
    del world.asm["registration_endpoint"]
    flow = new_flow(world, pre_registered={"https://old.example.com": ClientCredentials("x")})
    with pytest.raises(RegistrationError) as caught:
        drive(flow, world, flow.start(NOW, world.challenge()))
    assert caught.value.url == world.issuer
    assert "https://old.example.com" in str(caught.value)


def test_a_refused_registration_is_a_clear_error() -> None:
    world = World()
    world.overrides[world.asm["registration_endpoint"]] = json_response(
        {"error": "invalid_redirect_uri"}, 400)
    flow = new_flow(world)
    with pytest.raises(RegistrationError, match="invalid_redirect_uri"):
        drive(flow, world, flow.start(NOW, world.challenge()))


def test_a_web_redirect_registers_as_a_web_application() -> None:
    config = ClientConfig("https://app.example.com/callback")
    assert config.derived_application_type() == "web"
    assert ClientConfig("http://localhost:8080/cb").derived_application_type() == "native"
    assert ClientConfig("com.example.app:/cb").derived_application_type() == "native"
    assert ClientConfig(REDIRECT, application_type="web").derived_application_type() == "web"


# -- client authentication ---------------------------------------------------------------------


@pytest.mark.parametrize(("secret", "registered", "supported", "expected"), [
    (None, None, ("client_secret_basic",), "none"),
    ("s", None, ("none",), "none"),
    ("s", None, ("client_secret_basic",), "client_secret_basic"),
    ("s", None, ("client_secret_post",), "client_secret_post"),
    ("s", None, ("none", "client_secret_post", "client_secret_basic"), "client_secret_basic"),
    ("s", "client_secret_post", ("client_secret_basic",), "client_secret_post"),
])
def test_the_client_authentication_method(secret: str | None, registered: str | None,
                                          supported: tuple[str, ...], expected: str) -> None:
    client = ClientCredentials("id", secret, registered)
    assert choose_auth_method(client, supported) == expected


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_a_confidential_client_authenticates_at_the_token_endpoint(method: str) -> None:
    world = World()
    world.asm["token_endpoint_auth_methods_supported"] = [method]
    flow = new_flow(world, pre_registered={world.issuer: ClientCredentials("id", "s:cret")})
    drive(flow, world, flow.start(NOW, world.challenge()))
    (request,) = [r for r in world.requests if r.url.endswith("/token")]
    form = world.token_requests[0]
    if method == "client_secret_basic":
        header = request.header("authorization")
        assert header is not None and header.startswith("Basic ")
        # RFC 6749 §2.3.1: both parts form-encoded before base64 (":" -> %3A).
        assert base64.b64decode(header[6:]) == b"id:s%3Acret"
        assert "client_secret" not in form
    else:
        assert form["client_id"] == "id" and form["client_secret"] == "s:cret"
        assert request.header("authorization") is None


# -- tokens over time --------------------------------------------------------------------------


def test_fresh_tokens_are_used_without_any_request() -> None:
    world = World()
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge()))
    before = len(world.requests)
    action = flow.start(NOW + 10)
    assert isinstance(action, Authorized) and action.tokens.access_token == "access-1"
    assert len(world.requests) == before
    assert flow.current_tokens(NOW + 10) is not None


def test_tokens_are_refreshed_before_they_expire() -> None:
    world = World()
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge()))
    almost = NOW + world.token_lifetime - rules.REFRESH_MARGIN / 2
    assert flow.current_tokens(almost) is None
    done = drive(flow, world, flow.start(almost), now=almost)
    assert world.token_requests[-1]["grant_type"] == "refresh_token"
    assert world.token_requests[-1]["resource"] == world.server
    assert done.tokens.access_token == "access-2"
    assert done.tokens.expires_at == almost + world.token_lifetime
    assert len(world.authorization_requests) == 1  # the user was not asked again


def test_a_401_with_a_token_refreshes_then_reauthorizes_if_refresh_fails() -> None:
    world = World()
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge()))
    flow.request_succeeded()
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert world.token_requests[-1]["grant_type"] == "refresh_token"
    flow.request_succeeded()
    world.refresh_tokens.clear()  # the server forgot every refresh token
    done = drive(flow, world, flow.start(NOW, world.challenge()))
    assert [f["grant_type"] for f in world.token_requests[-2:]] == [
        "refresh_token", "authorization_code"]
    assert done.tokens.access_token == "access-3"


def test_a_token_error_names_the_step_and_the_endpoint() -> None:
    world = World()
    world.overrides[world.asm["token_endpoint"]] = json_response({"error": "invalid_client"},
                                                                 401)
    flow = new_flow(world)
    with pytest.raises(TokenError) as caught:
        drive(flow, world, flow.start(NOW, world.challenge()))
    assert caught.value.step == "token" and caught.value.error == "invalid_client"
    assert caught.value.url == world.asm["token_endpoint"]


@pytest.mark.parametrize("doc", [
    {"token_type": "Bearer"}, {"access_token": "", "token_type": "Bearer"},
    {"access_token": "a", "token_type": "mac"}, {"access_token": "a"},
    {"access_token": "a", "token_type": "bearer", "expires_in": -5},
])
def test_an_unusable_token_response_is_refused(doc: dict[str, object]) -> None:
    world = World()
    world.overrides[world.asm["token_endpoint"]] = json_response(doc)
    flow = new_flow(world)
    with pytest.raises(TokenError):
        drive(flow, world, flow.start(NOW, world.challenge()))


def test_a_new_authorization_server_means_new_registration_and_new_tokens() -> None:
    world = World()
    storage = MemoryStorage()
    flow = OAuthClientFlow(world.server, ClientConfig(REDIRECT), entropy=counter_entropy(),
                           storage=storage)
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert storage.get_client(world.issuer) is not None
    flow.request_succeeded()
    # The resource moves to another authorization server.
    moved = World(issuer="https://auth2.example.com")
    moved.prm = dict(world.prm, authorization_servers=[moved.issuer])
    done = drive(flow, moved, flow.start(NOW, moved.challenge()))
    assert len(moved.registered) == 1  # re-registered with the new server
    assert not any(f["grant_type"] == "refresh_token" for f in moved.token_requests)
    assert done.tokens.issuer == moved.issuer
    assert storage.get_issuer(flow.resource) == moved.issuer
    # The old server's credentials stay bound to the old issuer.
    old = storage.get_client(world.issuer)
    assert old is not None and old.client_id == "client-1"


def test_storage_round_trips_through_json() -> None:
    world = World()
    flow = new_flow(world)
    done = drive(flow, world, flow.start(NOW, world.challenge()))
    tokens = done.tokens
    assert type(tokens).from_json(json.loads(json.dumps(tokens.to_json()))) == tokens
    client = ClientCredentials("id", "secret", "client_secret_post", 0)
    assert ClientCredentials.from_json(client.to_json()) == client
    assert not client.expired(NOW)  # RFC 7591: 0 means the secret never expires
    assert ClientCredentials("id", "s", None, NOW).expired(NOW)


def test_every_error_names_a_known_step() -> None:
    assert set(STEPS) >= {"protected-resource-metadata", "authorization-server-metadata",
                          "registration", "authorization", "authorization-response", "token",
                          "refresh", "challenge"}


# -- property: any answers at all end the flow, in tokens or a named error, soon --------------

_BODY = st.one_of(
    st.binary(max_size=64),
    st.sampled_from([b"{}", b"[]", b"null", b'{"issuer": 1}', b'{"access_token": "x"}']),
    st.dictionaries(st.sampled_from(
        ["resource", "authorization_servers", "issuer", "authorization_endpoint",
         "token_endpoint", "registration_endpoint", "code_challenge_methods_supported",
         "access_token", "token_type", "client_id", "expires_in", "refresh_token"]),
        st.one_of(st.none(), st.integers(), st.text(max_size=10),
                  st.sampled_from(["https://auth.example.com", "https://mcp.example.com/mcp",
                                   "https://auth.example.com/token", "Bearer"]),
                  st.lists(st.sampled_from(["S256", "https://auth.example.com"]),
                           max_size=2)),
        max_size=8).map(lambda d: json.dumps(d).encode()),
)

_RESPONSE = st.builds(
    HTTPResponse,
    st.sampled_from([200, 200, 200, 201, 301, 302, 400, 401, 404, 500]),
    st.lists(st.tuples(st.sampled_from(["Location", "Content-Type", "X"]),
                       st.sampled_from(["/x", "https://mcp.example.com/a", "", "::"])),
             max_size=2).map(tuple),
    _BODY,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answers=st.lists(st.one_of(_RESPONSE, st.none()), max_size=80),
       redirects=st.lists(st.text(max_size=40), max_size=5),
       challenge=st.text(max_size=60), real_world=st.booleans())
def test_any_answers_end_in_tokens_or_a_named_error_within_the_bound(
    answers: list[HTTPResponse | None], redirects: list[str], challenge: str,
    real_world: bool,
) -> None:
    """Hostile or broken servers: each request is answered by the next drawn response (None:
    the honest world answers), each user step by a drawn string or the honest redirect. The
    flow must end -- Authorized or an AuthFlowError naming a known step -- within
    MAX_REQUESTS requests, and never with another exception."""
    world = World()
    flow = new_flow(world)
    answers_it = iter(answers)
    redirects_it = iter(redirects)
    requests = 0
    try:
        action = flow.start(NOW, HTTPResponse(401, (("WWW-Authenticate", challenge),))
                            if not real_world else world.challenge())
        while not isinstance(action, Authorized):
            if isinstance(action, HTTPRequest):
                requests += 1
                assert requests <= rules.MAX_REQUESTS
                drawn = next(answers_it, None)
                action = flow.receive_response(drawn or world.answer(action), NOW)
            else:
                text = next(redirects_it, None)
                action = flow.receive_redirect(
                    world.authorize(action) if text is None else text, NOW)
    except AuthFlowError as error:
        assert error.step in STEPS
        assert str(error).startswith(error.step)
        event(f"{type(error).__name__} at {error.step}")
        return
    event("authorized")
    assert action.tokens.access_token


@pytest.mark.parametrize(("status", "error"), [(403, None), (403, "invalid_token"),
                                               (500, None), (200, None)])
def test_only_401_and_403_insufficient_scope_start_the_flow(status: int,
                                                            error: str | None) -> None:
    world = World()
    flow = new_flow(world)
    with pytest.raises(AuthFlowError) as caught:
        flow.start(NOW, world.challenge(status=status, error=error))
    assert caught.value.step == "challenge" and not world.requests


def test_offline_access_is_asked_for_only_where_the_server_lists_it() -> None:
    world = World()
    world.asm["scopes_supported"] = ["mcp:read", "offline_access"]
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert world.authorization_requests[0]["scope"].split() == ["mcp:read", "offline_access"]

    world = World()
    world.asm["scopes_supported"] = ["mcp:read"]
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert world.authorization_requests[0]["scope"] == "mcp:read"

    world = World()
    world.asm["scopes_supported"] = ["mcp:read", "offline_access"]
    flow = new_flow(world, request_offline_access=False)
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert world.authorization_requests[0]["scope"] == "mcp:read"


def test_a_secret_is_not_sent_where_the_server_authenticates_nobody() -> None:
    assert choose_auth_method(ClientCredentials("id", "s"), ("none",)) == "none"
    assert choose_auth_method(ClientCredentials("id", "s", "none"),
                              ("client_secret_basic",)) == "none"


def test_refresh_sends_the_resource_exactly_as_published() -> None:
    world = World(server="https://mcp.example.com/mcp")
    world.prm["resource"] = "https://mcp.example.com"
    flow = new_flow(world)
    drive(flow, world, flow.start(NOW, world.challenge()))
    flow.request_succeeded()
    drive(flow, world, flow.start(NOW, world.challenge()))
    assert [f["resource"] for f in world.token_requests] == ["https://mcp.example.com"] * 2
    assert world.token_requests[-1]["grant_type"] == "refresh_token"


def test_a_repeated_response_parameter_is_refused() -> None:
    world = World()
    flow = new_flow(world)
    step = _to_user_step(world, flow)
    with pytest.raises(AuthorizationDenied, match="iss repeated"):
        flow.receive_redirect(f"{REDIRECT}?code=c&state={step.state}&iss={world.issuer}"
                              "&iss=https://evil.example.com", NOW)
    assert not world.token_requests


@pytest.mark.parametrize("where", ["prm", "token_endpoint", "authorization_endpoint",
                                   "registration_endpoint"])
def test_authorization_servers_must_be_https_beyond_loopback(where: str) -> None:
    world = World()
    if where == "prm":
        world.prm["authorization_servers"] = ["http://auth.example.com"]
    else:
        world.asm[where] = world.asm[where].replace("https://", "http://")
    flow = new_flow(world)
    with pytest.raises(MetadataError, match="not https"):
        drive(flow, world, flow.start(NOW, world.challenge()))
    assert not world.authorization_requests


def test_loopback_and_the_test_switch_may_use_plain_http() -> None:
    world = World(issuer="http://127.0.0.1:8000", server="http://localhost:9000/mcp")
    flow = new_flow(world)
    assert isinstance(drive(flow, world, flow.start(NOW, world.challenge())), Authorized)
    world = World(issuer="http://auth.test")
    flow = new_flow(world, allow_insecure_http=True)
    assert isinstance(drive(flow, world, flow.start(NOW, world.challenge())), Authorized)


@pytest.mark.parametrize("url", ["http://app.example.com/client.json",
                                 "https://app.example.com", "https://app.example.com/"])
def test_a_client_id_metadata_url_must_be_https_with_a_path(url: str) -> None:
    with pytest.raises(ValueError, match="https URL with a path"):
        ClientConfig(REDIRECT, client_id_metadata_url=url)
