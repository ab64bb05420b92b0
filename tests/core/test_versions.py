"""Version negotiation (lifecycle.mdx, "Version Negotiation"), the whole matrix."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import (
    HANDSHAKE_REVISIONS,
    NEED_DATA,
    ClientConnection,
    CloseReason,
    ConnectionClosed,
    Initialized,
    ServerConnection,
    State,
)
from mcp_sansio._versions import FEATURES, KNOWN_REVISIONS, negotiate_server_version, newest
from tests.pair import CLIENT_INFO, SERVER_INFO, ConnectionPair

SETS = [(rev,) for rev in HANDSHAKE_REVISIONS] + [
    HANDSHAKE_REVISIONS, HANDSHAKE_REVISIONS[:2], HANDSHAKE_REVISIONS[1:3],
]


@pytest.mark.parametrize(("client_set", "server_set"), list(itertools.product(SETS, SETS)))
def test_negotiation_matrix(client_set: tuple[str, ...], server_set: tuple[str, ...]) -> None:
    pair = ConnectionPair(
        ClientConnection(info=CLIENT_INFO, versions=client_set),
        ServerConnection(info=SERVER_INFO, versions=server_set),
    )
    pair.client.initialize(now=0)
    pair.pump()
    offered = pair.client_sent[0]["params"]["protocolVersion"]
    assert offered == max(client_set)  # the client offers its newest
    answered = pair.server_sent[0]["result"]["protocolVersion"]
    # The server echoes a version it supports, else offers its own newest.
    assert answered == (offered if offered in server_set else max(server_set))
    if answered in client_set:
        assert pair.client.state is State.OPERATING is pair.server.state
        assert pair.client.protocol_version == answered == pair.server.protocol_version
        assert isinstance(pair.client_events[0], Initialized)
    else:
        # The client SHOULD disconnect: it closes with a reason, and sends nothing more.
        [event] = pair.client_events
        assert isinstance(event, ConnectionClosed)
        assert event.reason is CloseReason.VERSION_REJECTED
        assert answered in event.detail
        assert pair.client.state is State.CLOSED
        assert len(pair.client_sent) == 1  # no notifications/initialized


@given(requested=st.one_of(
    st.sampled_from(KNOWN_REVISIONS), st.text(max_size=12),
    st.from_regex(r"\A20[0-9]{2}-[01][0-9]-[0-3][0-9]\Z"),
))
def test_unknown_versions_are_not_an_error_for_the_server(requested: str) -> None:
    server = ServerConnection(info=SERVER_INFO)
    server.receive_data(json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": requested, "capabilities": {}, "clientInfo": CLIENT_INFO},
    }).encode() + b"\n")
    while server.next_event() is not NEED_DATA:
        pass
    [reply] = [json.loads(x) for x in server.data_to_send().splitlines()]
    expected = requested if requested in HANDSHAKE_REVISIONS else HANDSHAKE_REVISIONS[-1]
    assert reply["result"]["protocolVersion"] == expected
    assert server.state is State.INITIALIZING


def test_negotiate_server_version_function() -> None:
    assert negotiate_server_version("2025-03-26", HANDSHAKE_REVISIONS) == "2025-03-26"
    assert negotiate_server_version("1999-01-01", HANDSHAKE_REVISIONS) == "2025-11-25"
    assert negotiate_server_version(None, ("2024-11-05",)) == "2024-11-05"
    assert newest(["2025-06-18", "2024-11-05", "zzz"]) == "2025-06-18"


def test_feature_table_covers_every_known_revision() -> None:
    assert set(FEATURES) == set(KNOWN_REVISIONS)
    assert [r for r in KNOWN_REVISIONS if FEATURES[r].batching] == ["2025-03-26"]
    assert [r for r in KNOWN_REVISIONS if FEATURES[r].handshake] == list(HANDSHAKE_REVISIONS)


def test_a_connection_needs_a_known_revision() -> None:
    with pytest.raises(ValueError, match="no known revision"):
        ClientConnection(versions=["1999-01-01"])
    with pytest.raises(ValueError):
        ServerConnection(versions=["1999-01-01"])


@given(st.lists(st.sampled_from([*KNOWN_REVISIONS, "1999-01-01"]), min_size=1, max_size=6))
def test_constructor_derives_the_same_eras_every_time(versions: list[str]) -> None:
    # The version plan is remembered per distinct versions tuple (_connection.py
    # _VERSION_PLANS): a second connection with the same versions, or one built after the
    # table started over, must read exactly as the first.
    from mcp_sansio import _connection

    handshake = tuple(v for v in versions if FEATURES.get(v) and FEATURES[v].handshake)
    stateless = tuple(v for v in versions if FEATURES.get(v) and not FEATURES[v].handshake)
    if not handshake and not stateless:
        with pytest.raises(ValueError, match="no known revision"):
            ServerConnection(versions=versions)
        return
    for round_ in range(3):
        if round_ == 2:
            for n in range(_connection._VERSION_PLANS_LIMIT + 1):  # make the table start over
                ServerConnection(versions=(*KNOWN_REVISIONS, f"x-{n}"))
        conn = ServerConnection(versions=versions)
        assert conn.versions == tuple(versions)
        assert conn._handshake_versions == handshake
        assert conn._stateless_versions == stateless
        expected = newest(handshake) if handshake else newest(stateless)
        assert conn.revision == expected
    assert len(_connection._VERSION_PLANS) <= _connection._VERSION_PLANS_LIMIT


def test_unhashable_versions_are_refused_as_before() -> None:
    with pytest.raises(TypeError):
        ServerConnection(versions=[["2025-11-25"]])  # type: ignore[list-item]


def test_the_url_elicitation_error_column_is_2025_11_25_only() -> None:
    # -32042 arrived with URL-mode elicitation in 2025-11-25 and left in 2026-07-28
    # (changelog.mdx); the testing kit's error-code strategy reads this column.
    assert [r for r in KNOWN_REVISIONS if FEATURES[r].url_elicitation_error] == ["2025-11-25"]


@pytest.mark.parametrize("revision", KNOWN_REVISIONS)
def test_the_error_code_strategy_offers_minus_32042_where_the_table_says(revision: str) -> None:
    from hypothesis import find, settings
    from hypothesis.errors import NoSuchExample

    from mcp_sansio.testing._strategies import error_codes

    # -32042 lies outside the strategy's integer ranges: only the defined-codes list has it.
    try:
        find(error_codes(revision), lambda code: code == -32042,
             settings=settings(max_examples=300, database=None))
    except NoSuchExample:
        found = False
    else:
        found = True
    assert found == FEATURES[revision].url_elicitation_error
