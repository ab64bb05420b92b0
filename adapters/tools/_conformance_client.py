"""``mcp-sansio conformance-client URL``: the client the official conformance harness drives.

In client mode the harness (``@modelcontextprotocol/conformance``) starts a mock server for
each scenario and runs ``<command> <server-url>`` with the scenario in the environment:

* ``MCP_CONFORMANCE_SCENARIO`` -- the scenario's name (``initialize``, ``tools_call``,
  ``sse-retry``, ``request-metadata``, ``http-custom-headers``, ...);
* ``MCP_CONFORMANCE_PROTOCOL_VERSION`` -- the revision to speak. The dated revisions through
  2025-11-25 use the handshake: we offer that revision (and accept any older one the server
  counters with); 2026-07-28 is the stateless era: no ``initialize``, per-request ``_meta``;
* ``MCP_CONFORMANCE_CONTEXT`` -- scenario data as JSON (for instance the tool calls to make
  in ``http-custom-headers``).

The scenarios judge what crosses the wire; the client's part is to behave like an ordinary
application that uses everything the server offers. So most scenarios run the same generic
exercise: connect, then list the tools and call each one (with arguments made up from its
``inputSchema``), list and read the resources, list and get the prompts -- with callbacks
that answer the server's sampling, elicitation (accepting, with the defaults the requested
schema gives: SEP-1034) and roots requests. The few scenarios that ask for something
particular have their own function in :data:`SCENARIOS`. Everything the wire rules demand
(headers, ``_meta``, session ids, resuming a broken SSE stream after ``retry``,
``requestState``, ``x-mcp-header`` mirroring and validation) is the library's job, not
this module's: the harness checks the library through it.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp_sansio import HANDSHAKE_REVISIONS, STATELESS_REVISIONS, Era, __version__
from mcp_sansio.app.errors import ConnectionClosedError, McpError, RequestTimeout
from mcp_sansio.auth import AuthFlowError

__all__ = ["RUNTIME_ENV", "SCENARIOS", "main", "run", "settings_for"]

#: The environment variable naming the runtime to play the scenario on (default asyncio).
RUNTIME_ENV = "MCP_SANSIO_CONFORMANCE_RUNTIME"

log = logging.getLogger("mcp_sansio.conformance_client")

#: The harness kills a client after 30 s (its ``--timeout`` default); we give up a little
#: earlier so that the failure is ours to explain in the log.
OVERALL_TIMEOUT = 25.0
#: Idle timeout of each request: generous, the harness runs every scenario in parallel on
#: whatever cores the machine has.
REQUEST_TIMEOUT = 20.0

INFO = {"name": "mcp-sansio-conformance-client", "version": __version__}


def settings_for(protocol_version: str) -> tuple[list[str], Era]:
    """The revisions to accept and the era, for the harness's protocol version.

    A dated handshake revision: offer it, and accept any older one (a server MAY answer
    ``initialize`` with another revision it supports, ``basic/lifecycle.mdx``). A
    stateless-era revision: that revision only, without the handshake fallback.

    :raises ValueError: a revision this library does not know.
    """
    if protocol_version in STATELESS_REVISIONS:
        return [protocol_version], Era.STATELESS
    if protocol_version in HANDSHAKE_REVISIONS:
        # Dated revisions compare as strings.
        return [v for v in HANDSHAKE_REVISIONS if v <= protocol_version], Era.HANDSHAKE
    raise ValueError(f"unknown protocol version {protocol_version!r} "
                     f"(known: {', '.join(HANDSHAKE_REVISIONS + STATELESS_REVISIONS)})")


# -- answering the server's requests ----------------------------------------------------------


def schema_defaults(schema: Any) -> dict[str, Any]:
    """The ``default`` of each property of an elicitation's ``requestedSchema`` (SEP-1034:
    a client SHOULD pre-fill them; accepting unchanged returns them)."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    return {name: spec["default"] for name, spec in properties.items()
            if isinstance(spec, Mapping) and "default" in spec}


def elicitation(params: dict[str, Any]) -> dict[str, Any]:
    """Accept every form elicitation with the schema's defaults; decline URL mode (there is
    no user here to open the URL)."""
    if params.get("mode") == "url":
        log.info("elicitation (url mode) declined: %s", params.get("message"))
        return {"action": "decline"}
    content = schema_defaults(params.get("requestedSchema"))
    log.info("elicitation accepted with %s: %s", content, params.get("message"))
    return {"action": "accept", "content": content}


def sampling(params: dict[str, Any]) -> dict[str, Any]:
    """A canned assistant message (no model behind this client)."""
    log.info("sampling request answered with a canned message")
    return {"role": "assistant", "model": "mcp-sansio-conformance-client",
            "content": {"type": "text", "text": "This is a canned answer from the "
                        "mcp-sansio conformance client."},
            "stopReason": "endTurn"}


# -- made-up arguments ---------------------------------------------------------------------------

_SAMPLE: dict[str, Any] = {"string": "test", "integer": 1, "number": 1, "boolean": True,
                           "object": {}, "array": [], "null": None}


def sample_value(schema: Any) -> Any:
    """A value that fits a (simple) JSON schema: its default, first enum member or const,
    else one per type."""
    if not isinstance(schema, Mapping):
        return "test"
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return sample_arguments(schema)
    return _SAMPLE.get(kind if isinstance(kind, str) else "string", "test")


def sample_arguments(schema: Any) -> dict[str, Any]:
    """Arguments for a tool: a value for each required property of its ``inputSchema``."""
    if not isinstance(schema, Mapping):
        return {}
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return {}
    return {name: sample_value(properties.get(name)) for name in required
            if isinstance(name, str)}


# -- scenarios -----------------------------------------------------------------------------------

Scenario = Callable[[Any, Mapping[str, Any]], Awaitable[None]]


async def _attempt(what: str, call: Awaitable[Any]) -> Any:
    """One step of the generic exercise: a JSON-RPC error is the server's answer (logged,
    and the exercise goes on); a broken connection or a timeout ends the run."""
    try:
        result = await call
    except McpError as exc:
        log.warning("%s: the server answered with an error: %s", what, exc)
        return None
    log.info("%s: ok", what)
    return result


async def _capabilities(client: Any) -> Mapping[str, Any]:
    """The server's capabilities. Stateless era: when the era probe settled the era without
    a ``DiscoverResult`` (a stateless-era error named the versions, as in
    ``request-metadata``), ask with ``server/discover`` now, at the version we settled on."""
    caps = client.server_capabilities
    if client.era is Era.STATELESS and not caps:
        result = await _attempt("server/discover", client.discover())
        if isinstance(result, Mapping) and isinstance(result.get("capabilities"), Mapping):
            caps = result["capabilities"]
    return caps if isinstance(caps, Mapping) else {}


async def call_tools(client: Any, tools: list[dict[str, Any]]) -> None:
    for tool in tools:
        name = tool.get("name")
        if isinstance(name, str):
            await _attempt(f"tools/call {name}", client.call_tool(
                name, sample_arguments(tool.get("inputSchema"))))


async def exercise(client: Any, context: Mapping[str, Any]) -> None:
    """The generic client: use everything the server offers (see the module docstring).
    ``context["toolCalls"]`` (``[{"name", "arguments"}]``), when given, replaces the tool
    calls made up from the schemas."""
    caps = await _capabilities(client)
    calls = context.get("toolCalls")
    if "tools" in caps or calls:
        tools = await client.list_tools()
        log.info("tools/list: %s", [t.get("name") for t in tools])
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, Mapping) and isinstance(call.get("name"), str):
                    await _attempt(f"tools/call {call['name']}", client.call_tool(
                        call["name"], call.get("arguments") or {}))
        else:
            await call_tools(client, tools)
    if "resources" in caps:
        resources = await client.list_resources()
        log.info("resources/list: %s", [r.get("uri") for r in resources])
        for resource in resources:
            uri = resource.get("uri")
            if isinstance(uri, str):
                await _attempt(f"resources/read {uri}", client.read_resource(uri))
    if "prompts" in caps:
        prompts = await client.list_prompts()
        log.info("prompts/list: %s", [p.get("name") for p in prompts])
        for prompt in prompts:
            name = prompt.get("name")
            if not isinstance(name, str):
                continue
            arguments = {a["name"]: "test" for a in prompt.get("arguments") or []
                         if isinstance(a, Mapping) and isinstance(a.get("name"), str)
                         and a.get("required")}
            await _attempt(f"prompts/get {name}", client.get_prompt(name, arguments))


async def json_schema_preservation(client: Any, context: Mapping[str, Any]) -> None:
    """``json-schema-2020-12-preservation``: send the focal tool's ``inputSchema`` back,
    verbatim, through the echo tool -- what the harness compares is what we kept of it."""
    tools = {t.get("name"): t for t in await client.list_tools()}
    focal = tools.get("json_schema_2020_12_tool")
    if focal is None or "json_schema_echo" not in tools:
        raise RuntimeError(f"the scenario's tools are missing (got {sorted(map(str, tools))})")
    await client.call_tool("json_schema_echo", {"schema": focal.get("inputSchema")})
    log.info("echoed the inputSchema of json_schema_2020_12_tool")


#: Scenarios that need more than (or other than) the generic :func:`exercise`.
SCENARIOS: dict[str, Scenario] = {
    "json-schema-2020-12-preservation": json_schema_preservation,
}


# -- authorization -------------------------------------------------------------------------------

#: The client ID metadata document URL the harness's ``auth/basic-cimd`` mock expects as the
#: ``client_id`` (it does not fetch it; a real client hosts its document there).
CIMD_URL = "https://conformance-test.local/client-metadata.json"
#: Where the mocks' authorization endpoints redirect to; never contacted (the client reads
#: the redirect's ``Location`` instead of following it).
REDIRECT_URI = "http://127.0.0.1:3000/callback"


def _text(context: Mapping[str, Any], name: str) -> str | None:
    value = context.get(name)
    return value if isinstance(value, str) else None


def machine_auth_for(scenario: str, context: Mapping[str, Any]) -> Any:
    """The ``auth=`` of the extension scenarios without a browser (client credentials with
    a secret or a signed assertion, workload identity, enterprise-managed ID-JAG), from the
    scenario's context; None for the others."""
    # Lazy: OAuth only: a stdio start does without it.
    from mcp_sansio.auth import ClientCredentials, IdentityAssertionGrant, JWTBearerGrant

    client_id = _text(context, "client_id") or ""
    if scenario == "auth/client-credentials-basic":
        return ClientCredentials(client_id, _text(context, "client_secret"))
    if scenario == "auth/client-credentials-jwt":
        return ClientCredentials(client_id, private_key=_text(context, "private_key_pem"),
                                 signing_alg=_text(context, "signing_algorithm"))
    if scenario == "auth/wif-jwt-bearer":
        return JWTBearerGrant(_text(context, "valid_jwt") or "", client_id=client_id)
    if scenario == "auth/enterprise-managed-authorization":
        return IdentityAssertionGrant(
            id_token=_text(context, "idp_id_token") or "",
            idp_token_endpoint=_text(context, "idp_token_endpoint") or "",
            idp_client=ClientCredentials(_text(context, "idp_client_id") or ""),
            client=ClientCredentials(client_id, _text(context, "client_secret")))
    return None


def oauth_for(context: Mapping[str, Any], scenario: str = "",
              runtime: str = "asyncio") -> Any:
    """The ``auth=`` of an ``auth/*`` scenario: a grant without a browser for the machine
    scenarios, else :class:`~..auth.session.OAuth` whose user step follows the mocks'
    redirect (they approve at once), asking for DPoP-bound tokens where the authorization
    server offers them. Off asyncio the user step is the blocking one (trio runs it in a
    worker thread)."""
    # Lazy: OAuth only: a stdio start does without it.
    from mcp_sansio.auth import ClientConfig, ClientCredentials

    from ..auth.flow import follow_redirect, follow_redirect_sync
    from ..auth.session import OAuth

    machine = machine_auth_for(scenario, context)
    if machine is not None:
        return machine

    pre: dict[str, ClientCredentials] = {}
    client_id, issuer = context.get("client_id"), context.get("issuer")
    if isinstance(client_id, str) and isinstance(issuer, str):
        secret = context.get("client_secret")
        pre[issuer] = ClientCredentials(client_id, secret if isinstance(secret, str) else None)
    config = ClientConfig(REDIRECT_URI, client_name=INFO["name"],
                          client_id_metadata_url=CIMD_URL, pre_registered=pre)
    step = follow_redirect if runtime == "asyncio" else follow_redirect_sync
    return OAuth(step, config=config, dpop=True)


# -- running -------------------------------------------------------------------------------------


class _Awaiting:
    """The threads adapter's blocking client, seen as an asynchronous one: its methods are
    awaited like the other runtimes' (each call blocks the loop of this one-client process,
    which has nothing else to do)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._client, name)
        if not callable(value):
            return value

        async def call(*args: Any, **kwargs: Any) -> Any:
            return value(*args, **kwargs)

        return call


async def run(url: str, scenario: str, protocol_version: str,
              context: Mapping[str, Any] | None = None, *,
              request_timeout: float = REQUEST_TIMEOUT, runtime: str = "asyncio") -> None:
    """Connect to ``url`` in the era of ``protocol_version`` and play ``scenario`` with the
    client of ``runtime`` (``asyncio``, ``trio`` -- then run this under ``trio.run`` --, or
    ``threading``).

    :raises ValueError: an unknown protocol version.
    :raises ConnectionClosedError, McpError, RequestTimeout, OSError: the run failed.
    """
    versions, era = settings_for(protocol_version)
    play = SCENARIOS.get(scenario, exercise)
    log.info("scenario %r at %s (%s era, versions %s) on %s against %s", scenario,
             protocol_version, era.value, ", ".join(versions), runtime, url)
    auth = (oauth_for(context or {}, scenario, runtime) if scenario.startswith("auth/")
            else None)
    options: dict[str, Any] = dict(era=era, versions=versions, sampling=sampling,
                                   elicitation=elicitation, roots=[], info=INFO, auth=auth,
                                   request_timeout=request_timeout)
    if runtime == "threading":
        # Lazy: the chosen runtime only.
        from ..threading import connect_http as connect_threads

        with connect_threads(url, **options) as blocking:
            await _played(_Awaiting(blocking), play, context)
    else:
        if runtime == "trio":
            from ..trio import connect_http  # lazy: the chosen runtime only (trio is optional)
        else:
            from ..asyncio import connect_http  # lazy: the chosen runtime only
        async with connect_http(url, **options) as client:
            await _played(client, play, context)
    log.info("scenario %r done", scenario)


async def _played(client: Any, play: Scenario, context: Mapping[str, Any] | None) -> None:
    log.info("connected: %s (%s era) with %s", client.protocol_version,
             client.era.value if client.era else "?", client.server_info.get("name"))
    await play(client, context or {})


def main(url: str) -> int:
    """Run the scenario the harness names in the environment against ``url``; 0 when the
    client did its part, 1 when it could not (the reason is logged)."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    protocol_version = (os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
                        or HANDSHAKE_REVISIONS[-1])
    try:
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    except ValueError as exc:
        log.error("MCP_CONFORMANCE_CONTEXT is not JSON: %s", exc)
        return 1
    if not isinstance(context, dict):
        context = {}
    runtime = os.environ.get(RUNTIME_ENV) or "asyncio"
    try:
        if runtime == "trio":
            import trio  # lazy: trio is optional

            async def bounded() -> None:
                with trio.fail_after(OVERALL_TIMEOUT):
                    await run(url, scenario, protocol_version, context, runtime="trio")

            try:
                trio.run(bounded)
            except trio.TooSlowError:
                raise TimeoutError from None
        else:
            asyncio.run(asyncio.wait_for(run(url, scenario, protocol_version, context,
                                             runtime=runtime), OVERALL_TIMEOUT))
    except ValueError as exc:
        log.error("%s", exc)
        return 1
    except (ConnectionClosedError, McpError, RequestTimeout, RuntimeError,
            AuthFlowError) as exc:
        log.error("scenario %r failed: %s: %s", scenario, type(exc).__name__, exc)
        return 1
    except TimeoutError:  # after RequestTimeout, which is one
        log.error("scenario %r did not finish within %g s", scenario, OVERALL_TIMEOUT)
        return 1
    except OSError as exc:
        log.error("scenario %r failed: %s: %s", scenario, type(exc).__name__, exc)
        return 1
    return 0
