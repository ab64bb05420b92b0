"""Sealed ``requestState`` across hosts, pure: the key ring (rotation loses nothing), the
clocks (each host's monotonic and wall clocks injected, skewed), the principal binding.

Every "host" here is a fresh :class:`ServerConnection` per request, as the HTTP server makes
one per stateless-era request, fed its own clocks: ``now`` (monotonic, private to the host)
and ``wall_now`` (seconds since the epoch, which hosts agree on within the skew allowance).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mcp_sansio import (
    NEED_DATA,
    ErrorCode,
    InvalidRequestState,
    KeyRing,
    MessageRejected,
    Request,
    ServerConnection,
    open_state,
    principal_key,
    seal_state,
)
from mcp_sansio._keyring import MIN_KEY_BYTES, key_id
from mcp_sansio._stateless import (
    DEFAULT_SKEW,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
)
from tests.pair import CLIENT_INFO, SERVER_INFO

SL = "2026-07-28"
TTL = 600.0
EPOCH = 1_790_000_000.0  # a wall-clock reading in 2026


def key(n: int) -> bytes:
    return bytes([n]) * MIN_KEY_BYTES


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass
class Host:
    """One server host: its clocks' offsets from a shared "true" time, and its keys."""

    keys: bytes | KeyRing
    monotonic_offset: float = 0.0  # where its monotonic clock stands (its boot time)
    wall_offset: float = 0.0  # how far its wall clock is off the true time
    principal: str | None = None
    wall: bool = True  # an adapter that passes the wall clock

    def connection(self) -> ServerConnection:
        conn = ServerConnection(info=SERVER_INFO, capabilities={"tools": {}}, versions=[SL],
                                request_state_key=self.keys, request_state_ttl=TTL)
        conn.request_state_principal = self.principal
        return conn

    def _feed(self, conn: ServerConnection, t: float, params: dict[str, Any]) -> list[Any]:
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            **params, "_meta": {META_PROTOCOL_VERSION: SL, META_CLIENT_CAPABILITIES: {},
                                META_CLIENT_INFO: CLIENT_INFO}}}
        conn.receive_message(message, now=self.monotonic_offset + t,
                             wall_now=EPOCH + t + self.wall_offset if self.wall else None)
        events = []
        while (event := conn.next_event()) is not NEED_DATA:
            events.append(event)
        return events

    def seal(self, t: float, state: str = "step-1", tool: str = "wizard") -> str:
        """Serve the first call at true time ``t``: answered input_required; the sealed
        state the client gets."""
        conn = self.connection()
        [request] = self._feed(conn, t, {"name": tool})
        assert isinstance(request, Request)
        conn.send_input_required(request.request_id, None, state)
        [(message, _)] = conn.messages_to_send()
        sealed = message["result"]["requestState"]
        assert isinstance(sealed, str) and sealed != state
        return sealed

    def open(self, t: float, sealed: str, tool: str = "wizard") -> str | int:
        """Serve the retry at true time ``t``: the opened state the handler sees, or the
        error code the core answered."""
        conn = self.connection()
        [event] = self._feed(conn, t, {"name": tool, "requestState": sealed})
        if isinstance(event, MessageRejected):
            [(reply, _)] = conn.messages_to_send()
            return int(reply["error"]["code"])
        assert isinstance(event, Request)
        state = event.params["requestState"]
        assert isinstance(state, str)
        return state


REFUSED = ErrorCode.INVALID_PARAMS


# -- clocks ---------------------------------------------------------------------------------


def test_expiry_is_judged_right_on_a_host_whose_monotonic_clock_is_far_off() -> None:
    ring = KeyRing([key(1)])
    a = Host(ring, monotonic_offset=1_695.8)  # booted half an hour ago
    b = Host(ring, monotonic_offset=9_000_000.0)  # booted months ago
    c = Host(ring, monotonic_offset=3.0)  # booted seconds ago
    sealed = a.seal(0)
    for host in (b, c):
        assert host.open(1, sealed) == "step-1"
        assert host.open(TTL - 1, sealed) == "step-1"
        assert host.open(TTL + DEFAULT_SKEW, sealed) == REFUSED  # expired, at the same time
    #   on every host (the monotonic clocks would have said "long valid" and "expired").


def test_without_a_wall_clock_the_state_holds_on_its_host_and_is_refused_on_the_wall_clock(
) -> None:
    ring = KeyRing([key(1)])
    alone = Host(ring, monotonic_offset=50.0, wall=False)
    sealed = alone.seal(0)
    assert alone.open(TTL - 1, sealed) == "step-1"
    assert alone.open(TTL, sealed) == REFUSED  # one host: no skew allowance
    # A host on the wall clock cannot judge a monotonic time: refused, never misjudged.
    assert Host(ring).open(1, sealed) == REFUSED
    assert alone.open(1, Host(ring).seal(0)) == REFUSED


@pytest.mark.parametrize(("skew", "opens_at_start", "opens_near_the_end"), [
    (0.0, True, True),
    (DEFAULT_SKEW / 2, True, True),  # opener ahead, within the allowance
    (-DEFAULT_SKEW / 2, True, True),  # opener behind, within the allowance
    (DEFAULT_SKEW * 2, True, False),  # opener ahead beyond it: the end comes too soon
    (-DEFAULT_SKEW * 2, False, True),  # opener behind beyond it: "issued in the future"
])
def test_skew_within_the_allowance_changes_nothing_and_beyond_it_is_refused(
        skew: float, opens_at_start: bool, opens_near_the_end: bool) -> None:
    ring = KeyRing([key(1)])
    sealer, opener = Host(ring), Host(ring, wall_offset=skew, monotonic_offset=777.0)
    sealed = sealer.seal(0)
    assert (opener.open(0, sealed) == "step-1") is opens_at_start
    assert (opener.open(TTL - 1, sealed) == "step-1") is opens_near_the_end


#: Wall-clock readings are seconds since the epoch (~1.8e9), where a float resolves about
#: 2.4e-7 s: "just before the end" must stay further from it than that, or the sum
#: issue + skew + elapsed rounds onto the limit itself (hypothesis found 599.9999999999999).
RESOLUTION = 1e-6


@given(skew=st.floats(-DEFAULT_SKEW, DEFAULT_SKEW),
       elapsed=st.floats(0, TTL - RESOLUTION),
       boot=st.floats(0, 1e9))
@example(skew=DEFAULT_SKEW, elapsed=TTL - 0.5, boot=0)  # the far corners
@example(skew=DEFAULT_SKEW, elapsed=TTL - RESOLUTION, boot=0)
@example(skew=-DEFAULT_SKEW, elapsed=0, boot=1e9)
def test_within_the_allowance_a_state_opens_for_its_whole_ttl(
        skew: float, elapsed: float, boot: float) -> None:
    ring = KeyRing([key(1)])
    sealed = Host(ring).seal(0)
    assert Host(ring, wall_offset=skew, monotonic_offset=boot).open(elapsed, sealed) == (
        "step-1")


@given(skew=st.floats(-DEFAULT_SKEW, DEFAULT_SKEW), late=st.floats(0, 1e6))
def test_within_the_allowance_no_state_outlives_its_ttl_by_more_than_twice_the_skew(
        skew: float, late: float) -> None:
    ring = KeyRing([key(1)])
    sealed = Host(ring).seal(0)
    assert Host(ring, wall_offset=skew).open(TTL + 2 * DEFAULT_SKEW + late, sealed) == REFUSED


def test_the_expiry_counts_from_the_wall_clock_given_when_sealing() -> None:
    conn = Host(KeyRing([key(1)])).connection()
    conn.receive_message({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "t", "_meta": {META_PROTOCOL_VERSION: SL, META_CLIENT_CAPABILITIES: {},
                               META_CLIENT_INFO: CLIENT_INFO}}}, now=5, wall_now=EPOCH)
    [request] = [conn.next_event()]
    conn.send_input_required(request.request_id, None, "s", wall_now=EPOCH + 100)
    sealed = conn.messages_to_send()[0][0]["result"]["requestState"]
    fields = json.loads(base64.urlsafe_b64decode(sealed.split(".")[1] + "=="))
    assert fields["i"] == EPOCH + 100 and fields["e"] == EPOCH + 100 + TTL
    assert fields["c"] == "w"


# -- the key ring -------------------------------------------------------------------------------


def test_a_state_names_its_key_and_opens_with_any_key_of_the_ring() -> None:
    old, new = key(1), key(2)
    ring = KeyRing([old])
    sealed_old = seal_state(ring, "s", method="m", name=None, expires_at=2)
    assert sealed_old.split(".")[0] == key_id(old)
    ring.rotate(new)
    assert ring.ids == (key_id(new), key_id(old))
    sealed_new = seal_state(ring, "t", method="m", name=None, expires_at=2)
    assert sealed_new.split(".")[0] == key_id(new)
    for sealed, state in ((sealed_old, "s"), (sealed_new, "t")):
        assert open_state(ring, sealed, method="m", name=None, now=1) == state
    ring.retire(key_id(old))
    with pytest.raises(InvalidRequestState, match="integrity"):
        open_state(ring, sealed_old, method="m", name=None, now=1)
    assert open_state(ring, sealed_new, method="m", name=None, now=1) == "t"
    # A bare key is a ring of one, with the same id.
    assert open_state(new, sealed_new, method="m", name=None, now=1) == "t"


def test_a_key_id_cannot_be_swapped() -> None:
    ring = KeyRing([key(1), key(2)])
    sealed = seal_state(ring, "s", method="m", name=None, expires_at=2)
    _, payload, tag = sealed.split(".")
    with pytest.raises(InvalidRequestState):
        open_state(ring, f"{key_id(key(2))}.{payload}.{tag}", method="m", name=None, now=1)


OPS = st.lists(st.one_of(
    st.just(("seal",)),
    st.tuples(st.just("add"), st.booleans()),  # a new key; True: it seals at once
    st.just(("promote",)),  # the newest accepting-only key starts sealing (step 2)
    st.just(("retire",)),  # the oldest key that does not seal goes (step 3)
    st.tuples(st.just("open"), st.integers(0, 1000)),
), max_size=40)


@given(OPS)
def test_any_interleaving_of_seal_rotate_and_open_opens_what_the_ring_still_holds(
        ops: list[tuple[Any, ...]]) -> None:
    ring = KeyRing([key(0)])
    fresh = iter(range(1, 256))
    sealed: list[tuple[str, str, str]] = []  # (token, the state, the id of its key)
    for op in ops:
        if op[0] == "seal":
            state = f"state-{len(sealed)}"
            token = seal_state(ring, state, method="tools/call", name="t", expires_at=10)
            sealed.append((token, state, ring.ids[0]))
        elif op[0] == "add":
            ring.add(key(next(fresh)), seal=op[1])
        elif op[0] == "promote" and len(ring.ids) > 1:
            ring.add(ring.keys()[-1], seal=True)
        elif op[0] == "retire" and len(ring.ids) > 1:
            ring.retire(ring.ids[-1])
        elif op[0] == "open" and sealed:
            token, state, kid = sealed[op[1] % len(sealed)]
            if kid in ring.ids:
                assert open_state(ring, token, method="tools/call", name="t", now=1) == state
            else:
                with pytest.raises(InvalidRequestState):
                    open_state(ring, token, method="tools/call", name="t", now=1)
    # Whatever the interleaving, every state whose key is still held opens.
    for token, state, kid in sealed:
        if kid in ring.ids:
            assert open_state(ring, token, method="tools/call", name="t", now=1) == state


def test_rotation_across_hosts_in_three_steps_loses_nothing() -> None:
    old, new = key(1), key(2)
    a, b = Host(KeyRing([old])), Host(KeyRing([old]))
    in_flight = [a.seal(0), b.seal(0)]
    for host in (a, b):  # step 1: everyone accepts the new key; nobody seals with it yet
        assert isinstance(host.keys, KeyRing)
        host.keys.add(new)
    in_flight.append(a.seal(1))
    assert isinstance(a.keys, KeyRing)
    a.keys.add(new, seal=True)  # step 2, on A first: B already opens what A now seals
    in_flight.append(a.seal(2))
    assert all(b.open(3, s) == a.open(3, s) == "step-1" for s in in_flight)
    assert isinstance(b.keys, KeyRing)
    b.keys.add(new, seal=True)
    late = b.seal(4)
    for host in (a, b):  # step 3, after the longest lifetime: the old key goes
        assert isinstance(host.keys, KeyRing)
        host.keys.retire(key_id(old))
    assert a.open(5, late) == "step-1"
    assert a.open(5, in_flight[0]) == REFUSED


def test_parse_reads_the_documented_format() -> None:
    k1, k2, k3 = key(1), key(2), bytes(range(40))
    text = (f"# requestState keys, the sealing one first\n"
            f"{b64(k1)}\n"
            f"  {base64.urlsafe_b64encode(k2).decode().rstrip('=')}, {b64(k3)}  # old\n\n")
    ring = KeyRing.parse(text)
    assert ring.keys() == (k1, k2, k3)
    assert ring.sealing_key() == (key_id(k1), k1)
    assert KeyRing.parse(f"{b64(k1)} {b64(k1)}").keys() == (k1,)  # a repeat counts once


@pytest.mark.parametrize(("text", "problem"), [
    ("", "no key"),
    ("# only a comment", "no key"),
    (f"{b64(key(1))} not*base64", "key 2: a key is not valid base64"),
    (b64(b"short"), "key 1: a key must be at least 32 bytes"),
])
def test_parse_names_the_bad_entry_by_position_never_by_content(text: str, problem: str
                                                                ) -> None:
    with pytest.raises(ValueError, match=problem) as caught:
        KeyRing.parse(text)
    assert "not*base64" not in str(caught.value)


def test_a_ring_shows_ids_never_keys_and_keeps_one_key() -> None:
    ring = KeyRing([key(7)])
    assert repr(ring) == f"<KeyRing {key_id(key(7))}>"
    with pytest.raises(ValueError):
        ring.retire(key_id(key(7)))
    with pytest.raises(ValueError):
        KeyRing([])
    with pytest.raises(ValueError):
        KeyRing([b"too short"])


class Source:
    """A store's view of the ring, updated behind the ring's back."""

    def __init__(self, *keys: bytes) -> None:
        self.current: list[bytes] = list(keys)
        self.calls = 0

    def keys(self) -> list[bytes]:
        self.calls += 1
        return self.current


def test_a_source_feeds_the_ring_and_a_change_takes_effect_at_once() -> None:
    source = Source(key(1))
    ring = KeyRing(source=source)
    first = seal_state(ring, "s", method="m", name=None, expires_at=2)
    source.current = [key(2), key(1)]  # another process rotated
    assert ring.sealing_key()[1] == key(2)
    assert open_state(ring, first, method="m", name=None, now=1) == "s"
    source.current = []  # the store is out of reach: the keys in hand stay
    assert ring.keys() == (key(2), key(1))
    source.current = [b"short"]  # a bad answer too
    assert ring.keys() == (key(2), key(1))
    source.current = [key(3)]
    with pytest.raises(InvalidRequestState):
        open_state(ring, first, method="m", name=None, now=1)
    assert source.calls >= 5


def test_a_source_that_has_nothing_yet_needs_keys_to_start_with() -> None:
    with pytest.raises(ValueError):
        KeyRing(source=Source())
    assert KeyRing([key(1)], source=Source()).keys() == (key(1),)


# -- the principal ------------------------------------------------------------------------------


ALICE = principal_key("alice", "client-1", "https://as.example")


@pytest.mark.parametrize(("other", "opens"), [
    (ALICE, True),
    (principal_key("bob", "client-1", "https://as.example"), False),  # another subject
    (principal_key("alice", "client-2", "https://as.example"), False),  # another client
    (principal_key("alice", "client-1", "https://other.example"), False),  # another issuer
    (None, False),  # not authenticated at all
])
def test_a_state_sealed_for_one_principal_is_refused_for_another(other: str | None,
                                                                 opens: bool) -> None:
    ring = KeyRing([key(1)])
    sealed = Host(ring, principal=ALICE).seal(0)
    assert (Host(ring, principal=other).open(1, sealed) == "step-1") is opens


def test_a_state_sealed_without_a_principal_does_not_open_for_one() -> None:
    ring = KeyRing([key(1)])
    sealed = Host(ring).seal(0)
    assert Host(ring).open(1, sealed) == "step-1"
    assert Host(ring, principal=ALICE).open(1, sealed) == REFUSED
    with pytest.raises(InvalidRequestState, match="another principal"):
        open_state(ring, seal_state(ring, "s", method="m", name=None, expires_at=2),
                   method="m", name=None, now=1, principal=ALICE)


def test_the_sealed_payload_carries_a_digest_not_the_principal() -> None:
    sealed = Host(KeyRing([key(1)]), principal=ALICE).seal(0)
    payload = base64.urlsafe_b64decode(sealed.split(".")[1] + "==").decode()
    assert "alice" not in payload and "client-1" not in payload
    assert "p" in json.loads(payload)


@given(st.one_of(st.text(), st.from_regex(r"[A-Za-z0-9_-]{8}\.[^.]*\.[^.]*", fullmatch=True)))
def test_anything_a_client_sends_as_state_is_refused_never_raised(junk: str) -> None:
    for keys in (KeyRing([key(1)]), key(1)):
        with pytest.raises(InvalidRequestState):
            open_state(keys, junk, method="m", name=None, now=1)


def test_request_binding_still_holds() -> None:
    ring = KeyRing([key(1)])
    sealed = Host(ring).seal(0, tool="wizard")
    assert Host(ring).open(1, sealed, tool="other") == REFUSED
