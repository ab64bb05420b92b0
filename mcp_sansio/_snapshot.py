"""A handshake-era session's negotiated state as a small record, and back.

Theory of operation
-------------------
A 2025-era session (2024-11-05 .. 2025-11-25) is negotiated once, by ``initialize``
(``basic/lifecycle.mdx``), and every later request of the session is judged against what was
agreed: the revision, the client's capabilities and identity, the server's own capabilities,
the log level the client set (``logging/setLevel``) and its resource subscriptions. When
several workers serve one endpoint without sticky sessions, the request after ``initialize``
may land on a worker that never saw it. :func:`snapshot_session` turns that agreement into a
JSON-able record -- what a :class:`~mcp_sansio.stores.SessionTable` keeps -- and
:func:`restore_session` makes a fresh connection from the application's factory speak that
session, as if it had answered the ``initialize`` itself.

What is *not* in the record is per process on purpose: requests in flight (each is answered
where it runs), timers (one process's monotonic clock) and the ids of the server's own
requests. A record is input from a store, so it is checked field by field against
:data:`FIELDS` before anything is applied: a record that fails is refused with
:class:`ValueError` (the caller answers as for an unknown session, 404), never half-applied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._connection import ServerConnection
from ._state import State
from ._stateless import LOG_RANK
from ._versions import FEATURES

__all__ = ["SNAPSHOT_FORMAT", "refresh_session", "restore_session", "snapshot_session"]

#: The record's format number: a worker that reads a record of a format it does not know
#: refuses it (and the client re-initializes) rather than guessing.
SNAPSHOT_FORMAT = 1

#: The lifecycle states a session can be shared in, by their name in a record: after the
#: InitializeResult went out (the initialized notification may land anywhere) and after it.
_STATES = {"initializing": State.INITIALIZING, "operating": State.OPERATING}


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_dict(value: Any) -> bool:
    return type(value) is dict


def _is_str_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def _is_level(value: Any) -> bool:
    return value is None or (type(value) is str and value in LOG_RANK)


def _is_uris(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


#: Each field of a record: the check its value must pass and what it holds (the wire names of
#: ``basic/lifecycle.mdx`` where there is one).
FIELDS: Mapping[str, tuple[Callable[[Any], bool], str]] = {
    "format": (lambda v: v == SNAPSHOT_FORMAT, "SNAPSHOT_FORMAT"),
    "protocolVersion": (_is_str, "the negotiated revision"),
    "state": (lambda v: v in _STATES, "'initializing' or 'operating'"),
    "clientCapabilities": (_is_dict, "InitializeRequest capabilities"),
    "clientInfo": (_is_dict, "InitializeRequest clientInfo"),
    "serverCapabilities": (_is_dict, "InitializeResult capabilities"),
    "serverInfo": (_is_dict, "InitializeResult serverInfo"),
    "instructions": (_is_str_or_none, "InitializeResult instructions"),
    "logLevel": (_is_level, "the level of the last logging/setLevel, or None"),
    "subscriptions": (_is_uris, "resource URIs subscribed to (resources/subscribe)"),
}


def snapshot_session(connection: ServerConnection) -> dict[str, Any]:
    """The negotiated state of a handshake-era server connection that answered
    ``initialize``, as a JSON-able record (see :data:`FIELDS`).

    :raises ValueError: the connection is not in a handshake-era session (not initialized
        yet, stateless, or closed).
    """
    state = connection.state
    name = next((n for n, s in _STATES.items() if s is state), None)
    version = connection.protocol_version
    if name is None or version is None or not FEATURES[version].handshake:
        raise ValueError(f"no handshake-era session to snapshot (state {state.value})")
    return {
        "format": SNAPSHOT_FORMAT,
        "protocolVersion": version,
        "state": name,
        "clientCapabilities": connection.peer_capabilities,
        "clientInfo": connection.peer_info,
        "serverCapabilities": connection.capabilities,
        "serverInfo": connection.info,
        "instructions": connection.server_instructions,
        "logLevel": connection.log_level,
        "subscriptions": sorted(connection.subscriptions),
    }


def _check(record: Any) -> None:
    if type(record) is not dict or set(record) != set(FIELDS):
        raise ValueError("not a session record (its fields differ)")
    for field, (check, meaning) in FIELDS.items():
        if not check(record[field]):
            raise ValueError(f"session record field {field!r} is not {meaning}")


def refresh_session(connection: ServerConnection, record: Mapping[str, Any]) -> None:
    """Bring a copy of a session up to date with a newer record of it (another worker
    saved it): the log level, the subscriptions, and ``initializing`` -> ``operating``.
    What was negotiated at ``initialize`` never changes, so a record that disagrees on it
    is of another session and refused.

    :raises ValueError: a malformed record, or one that is not this session's.
    """
    _check(record)
    current = snapshot_session(connection)
    fixed = ("protocolVersion", "clientCapabilities", "clientInfo")
    if any(record[field] != current[field] for field in fixed):
        raise ValueError("the record is of another session")
    connection.log_level = record["logLevel"]
    connection.subscriptions = frozenset(record["subscriptions"])
    if record["state"] == "operating":
        connection._state = State.OPERATING


def restore_session(connection: ServerConnection, record: Mapping[str, Any]
                    ) -> ServerConnection:
    """Make ``connection`` -- fresh from the application's factory, nothing received yet --
    serve the session ``record`` describes; returns it.

    :raises ValueError: the record is malformed, of another format, or names a revision the
        connection does not support; or the connection is not fresh.
    """
    if connection.state is not State.IDLE or connection.protocol_version is not None:
        raise ValueError("restore_session needs a fresh connection")
    _check(record)
    version = record["protocolVersion"]
    if version not in connection.versions or version not in FEATURES or (
            not FEATURES[version].handshake):
        raise ValueError(f"this server does not speak the session's revision {version!r}")
    # The same assignments the connection makes when it answers initialize itself
    # (Connection._on_initialize), then what later requests of the session changed.
    connection.protocol_version = version
    connection.peer_capabilities = dict(record["clientCapabilities"])
    connection.peer_info = dict(record["clientInfo"])
    connection.capabilities = dict(record["serverCapabilities"])
    connection.info = dict(record["serverInfo"])
    connection.server_instructions = record["instructions"]
    connection.log_level = record["logLevel"]
    connection.subscriptions = frozenset(record["subscriptions"])
    connection._state = _STATES[record["state"]]
    return connection
