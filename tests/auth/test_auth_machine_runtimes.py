"""Grants without a browser and DPoP, end to end on every runtime over loopback: our client
(``connect_http(url, auth=...)`` on asyncio, trio and threads) against our MCP server on the
same runtime protecting itself with ``ProtectedResource(dpop=...)``, and a loopback
authorization server that checks what each grant carries (tests/auth_machine_world.py).
What is asserted is what crossed the wire, never timings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp_sansio.adapters.auth import (
    ClientCredentials,
    IdentityAssertionGrant,
    JWTBearerGrant,
    OAuth,
    TokenFile,
)

from mcp_sansio.auth import ClientCredentialsGrant
from tests.auth.test_auth_client_adapters import session
from tests.auth.test_auth_server import serving, whoami_server
from tests.auth_machine_world import (
    CLIENT_ID,
    IDP_CLIENT,
    JWT_BEARER,
    SECRET,
    MachineAS,
    machine_world,
    protected,
)

SERVER_RUNTIMES = {"asyncio": "asyncio", "trio": "trio", "threads": "threading"}


def run(runtime: str, world: MachineAS, port: int, auth: Any, *, calls: int = 2,
        **resource: Any) -> list[dict[str, Any]]:
    """Serve on ``runtime`` and call ``whoami`` ``calls`` times with ``auth``."""
    with serving(SERVER_RUNTIMES[runtime], whoami_server(), auth=protected(world, **resource),
                 port=port):
        return [json.loads(text) for text in session(runtime, world.resource, auth,
                                                     calls=calls)]


@pytest.mark.parametrize("runtime", list(SERVER_RUNTIMES))
def test_client_credentials_with_a_secret_and_dpop_required(runtime: str) -> None:
    with machine_world(as_nonce=True) as (world, port):
        auth = OAuth(grant=ClientCredentialsGrant(ClientCredentials(CLIENT_ID, SECRET),
                                                  scope="mcp:read"), dpop=True)
        answers = run(runtime, world, port, auth, rs_nonce=True)
        assert [a["sub"] for a in answers] == [CLIENT_ID, CLIENT_ID]
        (first, retried) = world.token_requests()  # the AS asked for its nonce once
        assert first["form"]["grant_type"] == "client_credentials"
        assert first["authorization"].startswith("Basic ")
        assert first["form"]["scope"] == "mcp:read"
        assert first["form"]["resource"] == world.resource
        assert retried["dpop"] != first["dpop"]  # a fresh proof, with the nonce


@pytest.mark.parametrize("runtime", list(SERVER_RUNTIMES))
def test_private_key_jwt_client_credentials_as_the_bare_credentials(runtime: str) -> None:
    with machine_world() as (world, port):
        pem = world.client_key.as_pem(private=True).decode()
        # ``auth=ClientCredentials(...)`` alone: the client-credentials grant, bearer tokens
        # on a server that allows them.
        answers = run(runtime, world, port,
                      ClientCredentials(CLIENT_ID, private_key=pem), dpop="allowed")
        assert answers[0]["client"] == CLIENT_ID
        (request,) = world.token_requests()
        assert request["authorization"] is None
        assert request["form"]["client_assertion_type"].endswith(":jwt-bearer")
        assert request["dpop"] == []


def test_client_secret_post_when_the_server_lists_only_that() -> None:
    with machine_world() as (world, port):
        world.metadata = lambda: {**MachineAS.metadata(world),  # type: ignore[method-assign]
                                  "token_endpoint_auth_methods_supported":
                                      ["client_secret_post"]}
        answers = run("asyncio", world, port, ClientCredentials(CLIENT_ID, SECRET),
                      dpop="allowed", calls=1)
        assert answers[0]["sub"] == CLIENT_ID
        (request,) = world.token_requests()
        assert request["form"]["client_secret"] == SECRET
        assert request["authorization"] is None


@pytest.mark.parametrize("runtime", list(SERVER_RUNTIMES))
def test_workload_identity_from_a_token_file_reread_when_rotated(
        runtime: str, tmp_path: Path) -> None:
    with machine_world(expires_in=1) as (world, port):
        path = tmp_path / "token"
        path.write_text(world.platform_token("workload-7") + "\n")
        token_file = TokenFile(path)
        auth = OAuth(grant=JWTBearerGrant(token_file, client_id=CLIENT_ID), dpop=True)

        def rotate(i: int) -> None:
            if i == 1:  # the platform rotated the file; the token (1 s) is due again
                path.write_text(world.platform_token("workload-8"))

        with serving(SERVER_RUNTIMES[runtime], whoami_server(), auth=protected(world),
                     port=port):
            answers = [json.loads(t) for t in session(runtime, world.resource, auth,
                                                      calls=2, between=rotate)]
        assert answers[0]["sub"] == "workload-7"
        assert answers[1]["sub"] == "workload-8"  # re-requested with the new file
        grants = [r["form"]["grant_type"] for r in world.token_requests()]
        assert set(grants) == {JWT_BEARER}


@pytest.mark.parametrize("runtime", list(SERVER_RUNTIMES))
def test_enterprise_managed_authorization(runtime: str) -> None:
    with machine_world() as (world, port):
        grant = IdentityAssertionGrant(
            id_token=world.id_token("ada@example.com"),
            idp_token_endpoint=f"{world.issuer}/idp/token",
            idp_client=ClientCredentials(IDP_CLIENT),
            client=ClientCredentials(CLIENT_ID, SECRET))
        answers = run(runtime, world, port, OAuth(grant=grant, dpop=True), calls=1)
        assert answers[0]["sub"] == "ada@example.com"
        exchange, bearer = world.requests
        assert exchange["path"] == "/idp/token"
        assert exchange["form"]["audience"] == world.issuer
        assert exchange["form"]["resource"] == world.resource
        assert bearer["form"]["grant_type"] == JWT_BEARER
        assert bearer["authorization"].startswith("Basic ")


def test_a_refused_grant_is_a_named_error_and_not_retried() -> None:
    from mcp_sansio.adapters import errors

    with machine_world() as (world, port):
        with pytest.raises(errors.AuthFlowError) as caught:
            run("asyncio", world, port, ClientCredentials(CLIENT_ID, "wrong"), calls=1)
        assert caught.value.step == "token"
        assert "invalid_client" in str(caught.value)
        assert len(world.token_requests()) == 1


def _probe(world: MachineAS, port: int, **options: Any) -> tuple[int, str]:
    import io

    from mcp_sansio.adapters.tools._cli import probe

    out = io.StringIO()
    with serving("asyncio", whoami_server(), auth=protected(world, dpop="allowed"),
                 port=port):
        code = probe(out, [], url=world.resource, store=False, timeout=60.0, **options)
    return code, out.getvalue()


def test_probe_client_credentials_reads_the_secret_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SANSIO_CLIENT_SECRET", SECRET)
    with machine_world() as (world, port):
        code, out = _probe(world, port, client_credentials=CLIENT_ID)
        assert code == 0 and "whoami" in out
        assert world.token_requests()[0]["form"]["grant_type"] == "client_credentials"


def test_probe_client_credentials_signs_with_a_key_file(tmp_path: Path) -> None:
    with machine_world() as (world, port):
        key = tmp_path / "client.pem"
        key.write_bytes(world.client_key.as_pem(private=True))
        code, out = _probe(world, port, client_credentials=CLIENT_ID,
                           client_key_file=str(key))
        assert code == 0 and "whoami" in out
        assert "client_assertion" in world.token_requests()[0]["form"]


def test_probe_client_credentials_without_a_secret_is_a_usage_error(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MCP_SANSIO_CLIENT_SECRET", raising=False)
    with machine_world() as (world, port):
        code, _ = _probe(world, port, client_credentials=CLIENT_ID)
    assert code == 2
    assert "MCP_SANSIO_CLIENT_SECRET" in capsys.readouterr().err


def test_what_auth_accepts() -> None:
    from mcp_sansio.adapters.auth.session import as_oauth

    bare = as_oauth(ClientCredentials(CLIENT_ID, SECRET))
    assert isinstance(bare.config.grant, ClientCredentialsGrant)
    assert as_oauth(bare) is bare
    assert as_oauth(JWTBearerGrant("t")).config.grant == JWTBearerGrant("t")
    with pytest.raises(TypeError, match="auth must be"):
        as_oauth("a token")
    with pytest.raises(ValueError, match="user step"):
        OAuth()
