"""Client capabilities declared with ``capabilities=``: merged with what the callbacks
imply, refused when unknown or unanswerable, and sent as the revision in force can express
them (``mcp_sansio/app/client_capabilities.py``)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_sansio.adapters import asyncio as aio
from mcp_sansio.adapters import threading as thr

from mcp_sansio import KNOWN_REVISIONS, ClientConnection, Era
from mcp_sansio.app.client_capabilities import (
    CLIENT_CAPABILITIES,
    declare,
    for_revision,
)
from tests import schemas
from tests.virtual_sessions import Pair, VClient


def answer(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "decline"}


CALLBACKS = {"elicitation": answer, "sampling": answer, "roots": []}


def test_table_matches_the_official_schemas() -> None:
    root = schemas.schema_root()  # skips (or fails on CI) without the schemas
    for revision in KNOWN_REVISIONS:
        doc = json.loads((root / revision / "schema.json").read_text())
        defs = doc.get("definitions") or doc["$defs"]
        props = defs["ClientCapabilities"]["properties"]
        defined = set(props)
        for key, value in props.items():
            if key not in ("experimental", "extensions"):
                defined |= {f"{key}.{sub}" for sub in value.get("properties", {})}
        ours = {path for path in CLIENT_CAPABILITIES
                if for_revision({path.split(".")[0]: {}} if "." not in path else
                                {path.split(".")[0]: {path.split(".")[1]: {}}},
                                revision) == ({path: {}} if "." not in path else
                                              {path.split(".")[0]: {path.split(".")[1]: {}}})}
        # tasks is defined by 2025-11-25 but refused by this client (REFUSED).
        assert ours == defined - {"tasks", "tasks.cancel", "tasks.list", "tasks.requests"}, \
            revision


def test_refusals() -> None:
    with pytest.raises(ValueError, match="experimental"):
        declare({}, {"elicitaton": {}}, CALLBACKS)
    with pytest.raises(ValueError, match="tasks"):
        declare({}, {"tasks": {}}, CALLBACKS)
    with pytest.raises(ValueError, match=r"elicitation\.URL"):
        declare({}, {"elicitation": {"URL": {}}}, CALLBACKS)
    with pytest.raises(ValueError, match="needs the sampling= callback"):
        declare({}, {"sampling": {"tools": {}}}, {"sampling": None})
    with pytest.raises(ValueError, match="boolean"):
        declare({}, {"roots": {"listChanged": "yes"}}, CALLBACKS)
    with pytest.raises(ValueError, match="object"):
        declare({}, {"extensions": True}, CALLBACKS)


def test_merge_adds_to_what_callbacks_imply() -> None:
    implied = {"elicitation": {"form": {}}, "roots": {"listChanged": False}}
    merged = declare(implied, {"elicitation": {"url": {}}, "roots": {"listChanged": True},
                               "extensions": {"io.example/x": {"a": 1}}}, CALLBACKS)
    assert merged == {"elicitation": {"form": {}, "url": {}},
                      "roots": {"listChanged": True},
                      "extensions": {"io.example/x": {"a": 1}}}
    assert implied == {"elicitation": {"form": {}}, "roots": {"listChanged": False}}


FULL = {"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}, "context": {}},
        "roots": {"listChanged": True}, "experimental": {"x": {}},
        "extensions": {"io.example/x": {}}}


def test_per_revision_shapes() -> None:
    assert for_revision(FULL, "2024-11-05") == {
        "sampling": {}, "roots": {"listChanged": True}, "experimental": {"x": {}}}
    assert for_revision(FULL, "2025-06-18") == {
        "elicitation": {}, "sampling": {}, "roots": {"listChanged": True},
        "experimental": {"x": {}}}
    assert for_revision(FULL, "2025-11-25") == {
        key: value for key, value in FULL.items() if key != "extensions"}
    assert for_revision(FULL, "2026-07-28") == {**FULL, "roots": {}}


@given(st.sampled_from(KNOWN_REVISIONS), st.sets(st.sampled_from(sorted(FULL))))
def test_shaping_only_removes(revision: str, keys: set[str]) -> None:
    caps = {key: FULL[key] for key in keys}
    shaped = for_revision(caps, revision)
    assert set(shaped) <= set(caps)
    for key, value in shaped.items():
        assert value.items() <= caps[key].items()
    assert for_revision(shaped, revision) == shaped  # idempotent


# -- through the client logic, on a virtual clock -------------------------------------------

DECLARED = {"elicitation": {"url": {}}, "extensions": {"io.example/x": {}}}


def sent_capabilities(pair: Pair) -> list[dict[str, Any]]:
    """The capabilities each client message declared (initialize, or stateless _meta)."""
    seen = []
    for chunk in pair.client.written:
        for line in chunk.splitlines():
            message = json.loads(line)
            params = message.get("params") or {}
            if message.get("method") == "initialize":
                seen.append(params["capabilities"])
            meta = params.get("_meta") or {}
            if "io.modelcontextprotocol/clientCapabilities" in meta:
                seen.append(meta["io.modelcontextprotocol/clientCapabilities"])
    return seen


def connect_and_record(pair: Pair, era: Era | None) -> list[dict[str, Any]]:
    assert not pair.client._start_connect(era)
    pair.pump()
    assert pair.client.initialized is not None
    return sent_capabilities(pair)


@pytest.mark.parametrize("server_versions, era, first, final", [
    (["2025-06-18"], Era.HANDSHAKE,
     {"elicitation": {"form": {}, "url": {}}}, {"elicitation": {}}),
    (["2025-11-25"], None,
     {"elicitation": {"form": {}, "url": {}}, "extensions": {"io.example/x": {}}},
     {"elicitation": {"form": {}, "url": {}}}),
    (["2026-07-28"], None,
     {"elicitation": {"form": {}, "url": {}}, "extensions": {"io.example/x": {}}},
     {"elicitation": {"form": {}, "url": {}}, "extensions": {"io.example/x": {}}}),
])
def test_declared_per_negotiated_revision(server_versions: list[str], era: Era | None,
                                          first: dict[str, Any], final: dict[str, Any]
                                          ) -> None:
    pair = Pair(elicitation=answer, client_options={"capabilities": DECLARED},
                server_options={"versions": server_versions})
    seen = connect_and_record(pair, era)
    assert seen[0] == first  # the first message offers the newest revision's shape
    assert pair.client.conn.capabilities == final
    if era is Era.HANDSHAKE or server_versions[0] != "2026-07-28":
        # initialize went out with the newest handshake revision's shape
        assert seen[-1] == {"elicitation": {"form": {}, "url": {}}}
    else:
        assert all(caps == final for caps in seen)


def test_direct_construction_and_refusal() -> None:
    with pytest.raises(ValueError, match="needs the elicitation= callback"):
        VClient._create(capabilities={"elicitation": {"url": {}}})
    client = VClient._create(elicitation=answer, capabilities={"elicitation": {"url": {}}})
    assert client.declared_capabilities == {"elicitation": {"form": {}, "url": {}}}
    # Built on a connection by hand: its capabilities are the base the declaration adds to.
    conn = ClientConnection(info={"name": "c", "version": "1"}, capabilities={"roots": {}},
                            versions=["2025-06-18"])
    client = VClient(conn, roots=[], capabilities={"roots": {"listChanged": True}})
    assert client.declared_capabilities == {"roots": {"listChanged": True}}
    assert conn.capabilities == {"roots": {"listChanged": True}}
    # ... and without capabilities=, the connection's are left exactly as they were.
    conn = ClientConnection(info={"name": "c", "version": "1"}, capabilities={"odd": {}})
    assert VClient(conn).declared_capabilities is None
    assert conn.capabilities == {"odd": {}}


# -- end to end ----------------------------------------------------------------------------

SERVER = """
import json
from mcp_sansio.adapters import threading as thr
server = thr.Server("caps")

@server.tool()
def caps(ctx: thr.Context) -> str:
    return json.dumps(ctx.client_capabilities)

thr.run_stdio(server)
"""


def structured(result: dict[str, Any]) -> dict[str, Any]:
    return json.loads(result["content"][0]["text"])  # type: ignore[no-any-return]


@pytest.mark.parametrize("era", [Era.HANDSHAKE, Era.STATELESS])
def test_asyncio_connect_stdio(era: Era) -> None:
    async def main() -> Any:
        async with aio.connect_stdio([sys.executable, "-c", SERVER], era=era,
                                     elicitation=answer, capabilities=DECLARED) as client:
            return await client.call_tool("caps", {})

    seen = structured(asyncio.run(main()))
    if era is Era.STATELESS:
        assert seen == {"elicitation": {"form": {}, "url": {}},
                        "extensions": {"io.example/x": {}}}
    else:
        assert seen == {"elicitation": {"form": {}, "url": {}}}


def test_threads_connect_stdio() -> None:
    with thr.connect_stdio([sys.executable, "-c", SERVER], era=Era.HANDSHAKE,
                           sampling=answer, capabilities={"sampling": {"tools": {}}}
                           ) as client:
        seen = structured(client.call_tool("caps", {}))
    assert seen == {"sampling": {"tools": {}}}
