"""A shared HTTPServer (shared=True): sessions and SSE events go through the stores as
effects the adapter drives, so a second server object -- another worker -- serves a session
the first opened, replays what the first stored, and sees a DELETE made on the first. Here
the workers are sans-IO servers in one test, sharing the in-memory stores; the effects are
carried out synchronously between pumps (tests/stores/test_http_shared_asyncio.py does it over real
sockets and a real Redis)."""

from __future__ import annotations

import json
from collections.abc import Coroutine
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio import Request
from mcp_sansio.http import HTTPServer, ResponseMode
from mcp_sansio.http._shared import (
    DropSession,
    ForgetStream,
    ForwardAnswer,
    Lookup,
    SaveSession,
    StoreEvent,
    WorkerLiveness,
    new_stream_id,
    stream_writer,
)
from mcp_sansio.stores import MemoryEventLog, MemorySessionTable
from tests.http.test_http_server import Deferred, tools_call
from tests.http_util import Harness, init_body

WALL = 1_800_000_000.0  # the wall clock at the harness's time 0


def drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run an in-memory store's coroutine: it never suspends (no I/O)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("an in-memory store suspended")


class Worker(Harness):
    """A Harness whose server is shared: after each pump it carries out the effects against
    the stores -- holding lookups back while ``hold`` is set."""

    def __init__(self, tag: str, table: MemorySessionTable, log: MemoryEventLog,
                 **options: Any) -> None:
        options.setdefault("new_session_id", lambda: f"sid-{tag}-{next(_ids)}")
        super().__init__(shared=True, stream_tag=tag, **options)
        self.table = table
        self.log = log
        self.hold = False
        self.held: list[Lookup] = []
        self.hold_saves = False
        self.held_saves: list[SaveSession] = []
        self.done: list[Any] = []  # every effect carried out

    def run(self) -> None:
        while True:
            super().run()
            effects = self.server.shared_effects()
            if not effects:
                return
            for effect in effects:
                self.carry_out(effect)

    def carry_out(self, effect: Any) -> None:
        self.done.append(effect)
        wall = self.wall()
        if isinstance(effect, StoreEvent):
            drive(self.log.append(effect.event_id, effect.data, wall_time=wall))
        elif isinstance(effect, ForgetStream):
            drive(self.log.forget(effect.stream_id))
        elif isinstance(effect, SaveSession):
            timeout = self.server.session_idle_timeout or 3600.0
            if effect.refresh:
                drive(self.table.touch(effect.session_id, expires_at=wall + timeout,
                                       wall_time=wall))
            else:
                drive(self.table.put(effect.session_id, effect.record,
                                     expires_at=wall + timeout, wall_time=wall))
            if not self.hold_saves:
                self.server.stored(effect, now=self.now)
            elif effect.channels:
                self.held_saves.append(effect)
        elif isinstance(effect, DropSession):
            drive(self.table.delete(effect.session_id))
            self.server.stored(effect, now=self.now)
        elif isinstance(effect, ForwardAnswer):
            pass  # a bus: the test delivers it (HTTPServer.deliver_answer)
        elif self.hold:
            self.held.append(effect)
        else:
            self.answer(effect)

    def wall(self) -> float:
        """This worker's wall clock (tests of skewed hosts move it off the harness's)."""
        return WALL + self.now

    def answer(self, lookup: Lookup) -> None:
        wall = self.wall()
        if lookup.kind == "session":
            found = drive(self.table.get(lookup.key, wall_time=wall))
        else:
            found = drive(self.log.replay(lookup.key, wall_time=wall))
        self.server.resolve(lookup, found, now=self.now)


_ids = iter(range(1, 10**6))


def workers(n: int = 2, **options: Any) -> list[Worker]:
    table, log = MemorySessionTable(), MemoryEventLog()
    return [Worker(f"w{i}", table, log, **options) for i in range(n)]


def request(n: int, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": n, "method": method}
    if params is not None:
        message["params"] = params
    return message


def test_a_session_opened_on_one_worker_is_served_by_another() -> None:
    a, b = workers()
    sid = a.initialize()
    assert any(isinstance(e, SaveSession) for e in a.done)
    r = b.conn().send(body=request(1, "tools/list"), headers=b.session_headers(sid))
    assert r.status == 200 and r.json["result"] == {"tools": []}
    assert b.server.session(sid) is not None  # adopted: the next request is local
    assert [type(e) for e in b.done].count(Lookup) == 1
    r = b.conn().send(body=request(2, "ping"), headers=b.session_headers(sid))
    assert r.status == 200
    assert [type(e) for e in b.done].count(Lookup) == 1


def test_an_unknown_session_is_404_on_every_worker() -> None:
    a, b = workers()
    a.initialize()
    r = b.conn().send(body=request(1, "ping"), headers=b.session_headers("nobody"))
    assert r.status == 404
    assert b.server.sessions == {}


def test_the_negotiated_state_travels_setlevel_included() -> None:
    a, b, c = workers(3)
    sid = a.initialize(version="2025-06-18")
    r = b.conn().send(body=request(1, "logging/setLevel", {"level": "error"}),
                      headers=b.session_headers(sid, "2025-06-18"))
    assert r.status == 200
    c.conn().send(body=request(2, "ping"), headers=c.session_headers(sid, "2025-06-18"))
    adopted = c.server.session(sid)
    assert adopted is not None
    assert adopted.connection.log_level == "error"
    assert adopted.connection.protocol_version == "2025-06-18"


def test_delete_on_another_worker_ends_the_session_everywhere_it_is_asked() -> None:
    a, b, c = workers(3)
    sid = a.initialize()
    r = b.conn().send("DELETE", headers=b.session_headers(sid))
    assert r.status == 200
    assert any(isinstance(e, DropSession) for e in b.done)
    # a worker that never held it asks the table: gone
    assert c.conn().send(body=request(1, "ping"), headers=c.session_headers(sid)).status == 404
    # the worker that opened it still holds a copy until the bus says so (forget_session)
    a.server.forget_session(sid, now=a.now)
    a.run()
    assert a.conn().send(body=request(1, "ping"), headers=a.session_headers(sid)).status == 404
    # forgetting is local: it does not drop the record again
    assert not any(isinstance(e, DropSession) for e in a.done)


def test_idle_expiry_here_does_not_drop_the_shared_record() -> None:
    a, b = workers(session_idle_timeout=60.0)
    sid = a.initialize()
    a.advance(61.0)
    assert a.server.session(sid) is None
    assert not any(isinstance(e, DropSession) for e in a.done)
    # the table keeps its own deadline (the wall clock): within it, b serves the session
    assert b.conn().send(body=request(1, "ping"), headers=b.session_headers(sid)).status == 200
    # past it, nobody does
    b.now = a.now = 10_000.0
    assert a.conn().send(body=request(2, "ping"), headers=a.session_headers(sid)).status == 404


def test_resumption_on_another_worker_replays_what_the_first_stored() -> None:
    app = Deferred()
    table, log = MemorySessionTable(), MemoryEventLog()
    a = Worker("a", table, log, handler=app)
    b = Worker("b", table, log)
    sid = a.initialize()
    conn = a.conn()
    r = conn.send(body=tools_call(1, progress=True), headers=a.session_headers(sid))
    priming = r.events[0].id
    assert priming is not None and priming.startswith(f"{a.server.session(sid)._prefix}-a")
    session, req = app.requests[0]
    for i in (1, 2):
        session.connection.send_progress(req.request_id, i)
    session.flush()
    a.run()
    conn.close()  # the client's connection broke after two progress events
    stored = [e.event_id for e in a.done if isinstance(e, StoreEvent)]
    assert priming in stored and len(stored) >= 3
    resumed = b.conn().send("GET", headers=[*b.session_headers(sid), ("last-event-id", priming)])
    assert resumed.status == 200
    assert [m["params"]["progress"] for m in resumed.messages] == [1, 2]
    assert [e.id for e in resumed.events] == stored[-2:]
    # after the latest id there is nothing to replay
    again = b.conn().send("GET", headers=[*b.session_headers(sid),
                                          ("last-event-id", stored[-1])])
    assert again.status == 200 and again.messages == []
    # an id of another session's stream is unknown here, as without a shared store
    other = a.initialize()
    assert b.conn().send("GET", headers=[*b.session_headers(other),
                                         ("last-event-id", priming)]).status == 400


def _bus(source: Worker, target: Worker, start: int = 0) -> int:
    """Publish ``source``'s stored events from ``start`` on to ``target`` (an ideal bus);
    returns where the next call starts."""
    stored = [e for e in source.done if isinstance(e, StoreEvent)]
    for effect in stored[start:]:
        target.server.relay_event(effect.event_id, effect.data, now=target.now)
    target.run()
    return len(stored)


def test_a_stream_resumed_on_another_worker_is_relayed_live_without_gap_or_repeat() -> None:
    """issue 18: an event the first worker stores while the second reads its replay is
    kept and sent after the replay, once; later ones are relayed as they come; the
    stream's end marker ends the response and is never sent."""
    from mcp_sansio.http._shared import STREAM_END

    app = Deferred()
    table, log = MemorySessionTable(), MemoryEventLog()
    a = Worker("a", table, log, handler=app)
    b = Worker("b", table, log)
    sid = a.initialize()
    conn = a.conn()
    r = conn.send(body=tools_call(1, progress=True), headers=a.session_headers(sid))
    priming = r.events[0].id
    assert priming is not None
    session, req = app.requests[0]
    session.connection.send_progress(req.request_id, 1)
    session.flush()
    a.run()
    conn.close()
    published = _bus(a, b)  # published before anyone followed: dropped
    assert b.conn().send(body=request(9, "ping"), headers=b.session_headers(sid)).status == 200
    b.hold = True
    resumed = b.conn().send("GET", headers=[*b.session_headers(sid), ("last-event-id", priming)])
    (lookup,) = b.held
    stale = drive(log.replay(priming, wall_time=WALL))  # the store is read now...
    session.connection.send_progress(req.request_id, 2)  # ...and then this is stored
    session.flush()
    a.run()
    published = _bus(a, b, published)
    assert not resumed.events  # kept while the replay is read
    b.server.resolve(lookup, stale, now=b.now)
    b.run()
    assert [m["params"]["progress"] for m in resumed.messages] == [1, 2]
    session.connection.send_progress(req.request_id, 3)
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    a.run()
    assert any(e.data == STREAM_END for e in a.done if isinstance(e, StoreEvent))
    _bus(a, b)  # everything again, duplicates included
    assert [m.get("params", {}).get("progress") for m in resumed.messages] == [1, 2, 3, None]
    assert resumed.messages[-1]["id"] == 1 and resumed.done
    ids = [e.id for e in resumed.events if e.data]
    assert len(ids) == len(set(ids)) == 4
    assert not b.server._relays and not b.server._following
    # resumed after it finished: the replay ends at the marker
    late = b.conn().send("GET", headers=[*b.session_headers(sid), ("last-event-id", priming)])
    b.answer(b.held.pop())  # (b still holds its lookups)
    b.run()
    assert late.done and len(late.messages) == 4


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_relayed_stream_has_every_event_once_in_order_whatever_the_timing(
        data: st.DataObject) -> None:
    """Property: the writing worker stores n events; the other starts following the stream
    after f of them, reads the store after k, and gets the bus's messages (those published
    once it followed, in publication order) split at any point around the store's answer.
    The client sees events 1..n, in order, once each."""
    n = data.draw(st.integers(1, 8))
    f = data.draw(st.integers(0, n))
    k = data.draw(st.integers(f, n))
    app = Deferred()
    table, log = MemorySessionTable(), MemoryEventLog()
    a = Worker("a", table, log, handler=app)
    b = Worker("b", table, log)
    sid = a.initialize()
    assert b.conn().send(body=request(9, "ping"), headers=b.session_headers(sid)).status == 200
    conn = a.conn()
    r = conn.send(body=tools_call(1, progress=True), headers=a.session_headers(sid))
    priming = r.events[0].id or ""
    conn.close()
    session, req = app.requests[0]

    def progress(i: int) -> None:
        session.connection.send_progress(req.request_id, i)
        session.flush()
        a.run()

    for i in range(1, f + 1):
        progress(i)
    published = len([e for e in a.done if isinstance(e, StoreEvent)])
    b.hold = True
    resumed = b.conn().send("GET", headers=[*b.session_headers(sid),
                                            ("last-event-id", priming)])
    (lookup,) = b.held
    for i in range(f + 1, k + 1):
        progress(i)
    stale = drive(log.replay(priming, wall_time=WALL))
    for i in range(k + 1, n + 1):
        progress(i)
    bus = [e for e in a.done if isinstance(e, StoreEvent)][published:]
    early = data.draw(st.integers(0, len(bus)))
    for effect in bus[:early]:
        b.server.relay_event(effect.event_id, effect.data, now=b.now)
    b.server.resolve(lookup, stale, now=b.now)
    for effect in bus[early:]:
        b.server.relay_event(effect.event_id, effect.data, now=b.now)
    b.run()
    assert [m["params"]["progress"] for m in resumed.messages] == list(range(1, n + 1))
    ids = [e.id for e in resumed.events if e.data]
    assert len(set(ids)) == n


def test_a_relay_whose_waiting_buffer_overflowed_ends_so_the_client_resumes() -> None:
    app = Deferred()
    table, log = MemorySessionTable(), MemoryEventLog()
    a = Worker("a", table, log, handler=app)
    b = Worker("b", table, log, max_pending_messages=2)
    sid = a.initialize()
    assert b.conn().send(body=request(9, "ping"), headers=b.session_headers(sid)).status == 200
    conn = a.conn()
    r = conn.send(body=tools_call(1, progress=True), headers=a.session_headers(sid))
    priming = r.events[0].id or ""
    conn.close()
    session, req = app.requests[0]
    published = _bus(a, b)  # before anyone followed
    b.hold = True
    resumed = b.conn().send("GET", headers=[*b.session_headers(sid),
                                            ("last-event-id", priming)])
    (lookup,) = b.held
    stale = drive(log.replay(priming, wall_time=WALL))
    for i in (1, 2, 3):
        session.connection.send_progress(req.request_id, i)
    session.flush()
    a.run()
    _bus(a, b, published)
    b.server.resolve(lookup, stale, now=b.now)
    b.run()
    assert resumed.done  # ended after the two it kept, in order
    assert [m["params"]["progress"] for m in resumed.messages] == [1, 2]
    b.hold = False
    again = b.conn().send("GET", headers=[*b.session_headers(sid),
                                          ("last-event-id", resumed.events[-1].id or "")])
    assert [m["params"]["progress"] for m in again.messages] == [3]


def test_a_client_that_leaves_a_relay_ends_it() -> None:
    app = Deferred()
    table, log = MemorySessionTable(), MemoryEventLog()
    a = Worker("a", table, log, handler=app)
    b = Worker("b", table, log)
    sid = a.initialize()
    conn = a.conn()
    r = conn.send(body=tools_call(1, progress=True), headers=a.session_headers(sid))
    conn.close()
    getter = b.conn()
    resumed = getter.send("GET", headers=[*b.session_headers(sid),
                                          ("last-event-id", r.events[0].id or "")])
    assert resumed.status == 200 and not resumed.done and b.server._relays
    getter.close()
    b.run()
    assert not b.server._relays
    assert b.server.session(sid) is not None and not b.server.session(sid)._streams


def _writing_on_a_resumed_on_b() -> tuple[Worker, Worker, Any, Any, str, str]:
    """Worker a writes a stream (a tool call with progress), the client's connection to it
    breaks after one progress event, and the client resumes on b: (a, b, the handler's
    session and request, the session id, the priming event id)."""
    app = Deferred()
    table, log = MemorySessionTable(), MemoryEventLog()
    a = Worker("a", table, log, handler=app)
    b = Worker("b", table, log)
    sid = a.initialize()
    conn = a.conn()
    r = conn.send(body=tools_call(1, progress=True), headers=a.session_headers(sid))
    session, req = app.requests[0]
    session.connection.send_progress(req.request_id, 1)
    session.flush()
    a.run()
    conn.close()
    return a, b, session, req, sid, r.events[0].id or ""


def test_a_relayed_stream_ends_when_its_writer_is_declared_gone() -> None:
    """issue 18: only the writer ends its stream; when it is gone (it said so, or fell
    silent) the relay ends, and the client's next resumption replays the log, then ends."""
    a, b, session, req, sid, priming = _writing_on_a_resumed_on_b()
    resumed = b.conn().send("GET", headers=[*b.session_headers(sid),
                                            ("last-event-id", priming)])
    assert resumed.status == 200 and not resumed.done
    assert [m["params"]["progress"] for m in resumed.messages] == [1]
    assert b.server.relayed_writers() == {"a"}
    assert b.server.worker_gone("b", now=b.now) == 0  # itself: never
    assert b.server.worker_gone("zz", now=b.now) == 0  # relays of others stay
    assert not resumed.done
    assert b.server.worker_gone("a", now=b.now) == 1
    b.run()
    assert resumed.done and b.server.relayed_writers() == set()
    # a stored one more event before it died: the next resumption has it, and ends
    session.connection.send_progress(req.request_id, 2)
    session.flush()
    a.run()
    again = b.conn().send("GET", headers=[*b.session_headers(sid),
                                          ("last-event-id", resumed.events[-1].id or "")])
    assert again.status == 200 and again.done
    assert [m["params"]["progress"] for m in again.messages] == [2]
    assert not b.server._relays and not b.server._following
    # and the session itself lives on at b
    assert b.conn().send(body=request(9, "ping"), headers=b.session_headers(sid)).status == 200


def test_a_writer_heard_again_is_relayed_live_again() -> None:
    a, b, session, req, sid, priming = _writing_on_a_resumed_on_b()
    b.server.worker_gone("a", now=b.now)  # (declared gone too early: a late heartbeat)
    first = b.conn().send("GET", headers=[*b.session_headers(sid),
                                          ("last-event-id", priming)])
    assert first.done and len(first.messages) == 1  # replayed, ended
    b.server.worker_back("a")
    resumed = b.conn().send("GET", headers=[*b.session_headers(sid),
                                            ("last-event-id", priming)])
    assert not resumed.done
    session.connection.send_progress(req.request_id, 2)
    session.flush()
    a.run()
    _bus(a, b)
    assert [m["params"]["progress"] for m in resumed.messages] == [1, 2]


def test_a_writer_that_goes_while_the_replay_is_read_ends_after_the_replay() -> None:
    a, b, _session, _req, sid, priming = _writing_on_a_resumed_on_b()
    assert b.conn().send(body=request(9, "ping"), headers=b.session_headers(sid)).status == 200
    b.hold = True
    resumed = b.conn().send("GET", headers=[*b.session_headers(sid),
                                            ("last-event-id", priming)])
    (lookup,) = b.held
    b.server.worker_gone("a", now=b.now)  # no relay yet: remembered
    b.server.resolve(lookup, drive(a.log.replay(priming, wall_time=WALL)), now=b.now)
    b.run()
    assert resumed.status == 200 and resumed.done
    assert [m["params"]["progress"] for m in resumed.messages] == [1]


@given(prefix=st.text("0123456789abcdef", min_size=1, max_size=16),
       tag=st.text("abcdefghijklmnopqrstuvwxyzABCDEF0123456789", max_size=12),
       number=st.integers(0, 10**12))
def test_the_writer_reads_back_out_of_every_stream_id(prefix: str, tag: str,
                                                      number: int) -> None:
    made = new_stream_id(prefix, tag, number)
    assert stream_writer(made) == (tag or None)
    assert stream_writer(f"{made}:3") is None  # an event id is not a stream id


@pytest.mark.parametrize("text", ["", "abc", "a-b", "a-b-c-d", "a-b c-1", "a--1", "a-b-x"])
def test_stream_writer_reads_nothing_out_of_other_text(text: str) -> None:
    assert stream_writer(text) is None


def test_worker_liveness_judges_by_arrival_on_the_receivers_clock() -> None:
    live = WorkerLiveness(timeout=15.0, started=100.0)
    assert live.gone(["x"], 110.0) == []  # never heard, but not listening long enough
    assert live.gone(["x"], 115.5) == ["x"]  # never heard, listening longer than timeout
    assert live.heard("x", 116.0) is True  # it was counted gone: back
    assert live.heard("y", 116.0) is True
    assert live.gone(["x", "y"], 131.0) == []
    assert live.heard("x", 125.0) is False
    assert live.gone(["x", "y"], 131.5) == ["y"]  # y silent for 15.5 s, x for 6.5 s
    live.left("x")  # a clean shutdown: gone at once
    assert live.gone(["x"], 126.0) == ["x"]
    assert live.heard("x", 127.0) is True and live.gone(["x"], 127.0) == []
    with pytest.raises(ValueError):
        WorkerLiveness(timeout=0, started=0.0)


@settings(max_examples=100, deadline=None)
@given(beats=st.lists(st.tuples(st.sampled_from("pqr"), st.floats(0, 100)), max_size=30),
       left=st.sets(st.sampled_from("pqr")), at=st.floats(0, 200))
def test_worker_liveness_matches_its_rule(beats: list[tuple[str, float]], left: set[str],
                                          at: float) -> None:
    """Gone: said so after its last heartbeat, or its last heartbeat older than the timeout,
    or never heard once the receiver has listened longer than the timeout."""
    live = WorkerLiveness(timeout=10.0, started=0.0)
    beats.sort(key=lambda beat: beat[1])
    for tag, when in beats:
        live.heard(tag, when)
    for tag in left:
        live.left(tag)
    at = max(at, beats[-1][1] if beats else 0.0)
    last = {tag: when for tag, when in beats}
    expected = sorted(tag for tag in "pqr" if tag in left or (
        at - last[tag] > 10.0 if tag in last else at > 10.0))
    assert live.gone("pqr", at) == expected


def test_an_answer_posted_on_another_worker_is_forwarded_to_the_one_that_asked() -> None:
    """The request id carries the asking worker's tag; the worker the answer lands on
    forwards it (ForwardAnswer) and keeps the rest of a batch; the asking worker delivers
    it to the session's connection."""
    from mcp_sansio import Response
    from mcp_sansio.http._shared import answer_worker

    app = Deferred()
    table, log = MemorySessionTable(), MemoryEventLog()
    a = Worker("a", table, log, handler=app)
    b = Worker("b", table, log)
    sid = a.initialize(version="2025-03-26")  # batches: one answer for a, one for b
    conn = a.conn()
    conn.send(body=tools_call(1), headers=a.session_headers(sid, "2025-03-26"))
    session, req = app.requests[0]
    asked = session.connection.send_request("ping", related_request_id=req.request_id)
    session.flush()
    a.run()
    assert asked == "a-1" and answer_worker(asked) == "a"
    b.conn().send(body=request(5, "ping"), headers=b.session_headers(sid, "2025-03-26"))
    b_copy = b.server.session(sid)
    assert b_copy is not None
    own = b_copy.connection.send_request("ping")
    assert own == "b-1"
    b_copy.flush()
    b.run()
    batch = [{"jsonrpc": "2.0", "id": asked, "result": {}},
             {"jsonrpc": "2.0", "id": own, "result": {}}]
    r = b.conn().send(body=batch, headers=b.session_headers(sid, "2025-03-26"))
    assert r.status == 202
    (forward,) = [e for e in b.done if isinstance(e, ForwardAnswer)]
    assert forward.worker == "a" and forward.message == batch[0]
    assert [e.request_id for e in b.events_of(Response)] == [own]  # kept its own
    assert a.server.deliver_answer(forward.session_id, forward.message, now=a.now)
    a.run()
    assert [e.request_id for e in a.events_of(Response)] == [asked]
    assert not a.server.deliver_answer("nobody", forward.message, now=a.now)


@pytest.mark.parametrize(("request_id", "worker"), [
    ("a1-3", "a1"), ("a-1", "a"), (3, None), ("a-", None), ("-3", None), ("a-b", None),
    ("a.b-3", None), (True, None)])
def test_answer_worker_reads_only_tagged_ids(request_id: Any, worker: str | None) -> None:
    from mcp_sansio.http._shared import answer_worker

    assert answer_worker(request_id) == worker


def _raw(sid: str, body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    return (b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"accept: application/json, text/event-stream\r\nmcp-session-id: " + sid.encode()
            + b"\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: %d\r\n\r\n" % len(data)
            + data)


def test_a_request_waits_for_the_store_and_the_next_one_waits_behind_it() -> None:
    a, b = workers()
    sid = a.initialize()
    b.hold = True
    channel = b.server.new_channel(now=b.now)
    # two pipelined requests on one connection
    channel.receive_data(_raw(sid, request(1, "tools/list")) + _raw(sid, request(2, "ping")),
                         now=b.now)
    b.run()
    assert len(b.held) == 1  # one lookup: the second request is not read yet
    assert bytes(b.raw_out.get(channel, b"")) == b""
    b.hold = False
    b.answer(b.held.pop())
    b.run()
    out = bytes(b.raw_out[channel])
    assert out.count(b"HTTP/1.1 200") == 2
    assert out.index(b'"id":1') < out.index(b'"id":2')


def test_a_client_that_leaves_while_its_request_waits() -> None:
    a, b = workers()
    sid = a.initialize()
    b.hold = True
    conn = b.conn()
    conn.send(body=request(1, "tools/list"), headers=b.session_headers(sid))
    conn.close()
    b.hold = False
    b.answer(b.held.pop())  # the answer comes late: nothing to do, nothing breaks
    b.run()
    assert b.events_of(Request) == []


def test_stream_ids_carry_the_worker_tag_and_tags_are_checked() -> None:
    with pytest.raises(ValueError):
        HTTPServer(lambda: None, new_session_id=str, stream_tag="a:b")  # type: ignore[arg-type, return-value]
    a, = workers(1, response_mode=ResponseMode.SSE, handler=Deferred())
    sid = a.initialize()
    r = a.conn().send(body=tools_call(1), headers=a.session_headers(sid))
    # the session prefix, the worker tag, the stream number (initialize had stream 1),
    # dash-separated: the writer reads back unambiguously (tag w0 stream 12 != w01 stream 2)
    assert r.events[0].id.split(":")[0].endswith("-w0-2")


def test_a_record_this_worker_cannot_serve_is_an_unknown_session() -> None:
    table, log = MemorySessionTable(), MemoryEventLog()
    b = Worker("b", table, log)
    drive(table.put("bad", {"format": 99}, expires_at=WALL + 100, wall_time=WALL))
    assert b.conn().send(body=request(1, "ping"), headers=b.session_headers("bad")).status == 404


def test_the_shared_server_saves_only_changes_and_refreshes() -> None:
    a, = workers(1, session_idle_timeout=100.0)
    sid = a.initialize()
    saves = lambda: [e for e in a.done if isinstance(e, SaveSession)]  # noqa: E731
    count = len(saves())
    assert json.loads(json.dumps(saves()[-1].record))["session"]["state"] == "operating"
    a.conn().send(body=request(1, "ping"), headers=a.session_headers(sid))
    assert len(saves()) == count  # nothing changed, recently saved
    a.now += 30.0  # past a quarter of the idle timeout: activity refreshes the deadline
    a.conn().send(body=request(2, "ping"), headers=a.session_headers(sid))
    assert len(saves()) == count + 1
    assert saves()[-1].refresh and not saves()[0].refresh  # the deadline only; the record
    a.conn().send(body=request(3, "logging/setLevel", {"level": "error"}),
                  headers=a.session_headers(sid))
    assert len(saves()) == count + 2 and not saves()[-1].refresh  # a change: written whole


def test_an_adopted_copy_moves_the_deadline_and_never_undoes_a_newer_record() -> None:
    """issue 18: a copy adopted from the table is saved at once (its record's age is
    unknown), as a refresh: b adopts the session, a changes the log level meanwhile, and
    b's refresh -- carried out after -- leaves a's record in the table; a session a
    deleted is not brought back by b's refresh either."""
    a, b = workers()
    sid = a.initialize()
    b.hold_saves = True  # b's saves are carried out when the test says
    b.conn().send(body=request(1, "ping"), headers=b.session_headers(sid))
    (adopted,) = [e for e in b.done if isinstance(e, SaveSession)]
    assert adopted.refresh and adopted.record["session"]["logLevel"] is None
    a.conn().send(body=request(2, "logging/setLevel", {"level": "error"}),
                  headers=a.session_headers(sid))
    b.hold_saves = False
    b.carry_out(adopted)  # late, with the record as b read it
    record = drive(a.table.get(sid, wall_time=a.wall()))
    assert record["session"]["logLevel"] == "error"
    a.conn().send(method="DELETE", headers=a.session_headers(sid))
    b.carry_out(adopted)
    assert drive(a.table.get(sid, wall_time=a.wall())) is None


def test_initialize_that_fails_saves_nothing() -> None:
    a, = workers(1)
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
    r = a.conn().send(body=body)
    assert r.status == 200 and "error" in r.json
    assert not any(isinstance(e, SaveSession) for e in a.done)



def test_a_copy_follows_a_record_another_worker_saved() -> None:
    a, b = workers()
    sid = a.initialize()
    b.conn().send(body=request(1, "ping"), headers=b.session_headers(sid))  # b has a copy
    a.conn().send(body=request(2, "logging/setLevel", {"level": "error"}),
                  headers=a.session_headers(sid))
    saved = [e for e in a.done if isinstance(e, SaveSession)][-1]
    assert saved.record["session"]["logLevel"] == "error"
    b.server.refresh_session(sid, saved.record, now=b.now)
    copy = b.server.session(sid)
    assert copy is not None and copy.connection.log_level == "error"
    # a record that does not fit the copy (another client's) ends the copy here
    b.server.refresh_session(sid, {**saved.record, "session": {
        **saved.record["session"], "clientInfo": {"name": "x"}}}, now=b.now)
    b.run()
    assert b.server.session(sid) is None
    assert not any(isinstance(e, DropSession) for e in b.done)


def test_the_initialize_answer_waits_until_the_record_is_saved() -> None:
    a, b = workers()
    a.hold_saves = True
    conn = a.conn()
    r = conn.send(body=init_body())
    assert not r.done and r.status is None  # nothing written yet
    save = a.held_saves.pop()
    # the record is in the table before the client can know the id: any worker serves it
    assert drive(a.table.get(save.session_id, wall_time=WALL)) is not None
    a.server.stored(save, now=a.now)
    a.run()
    assert r.status == 200 and r.headers["mcp-session-id"] == save.session_id
    assert b.conn().send(body=request(1, "ping"),
                         headers=b.session_headers(save.session_id)).status == 200


def test_a_new_session_the_store_could_not_record_is_answered_503() -> None:
    a, b = workers()
    a.hold_saves = True
    conn = a.conn()
    r = conn.send(body=init_body())
    save = a.held_saves.pop()
    drive(a.table.delete(save.session_id))  # the store failed: nothing was written
    a.server.stored(save, now=a.now, failure=TimeoutError("no answer within 5 s"))
    a.run()
    # not a session no other worker can find (its client would be told 404 there): 503
    # with Retry-After, the initialize's id, and the reason; nothing of it is left here
    assert r.status == 503 and r.headers["retry-after"] == "1"
    assert "mcp-session-id" not in r.headers
    assert r.json["id"] == init_body()["id"] and "could not record" in r.json["error"]["message"]
    assert "no answer within 5 s" in r.json["error"]["message"]
    assert a.server.session(save.session_id) is None
    assert not any(isinstance(e, DropSession) for e in a.done)
    # a failed change of a session the table has is this worker's only: answered as usual
    a.hold_saves = False
    sid = a.initialize()
    a.hold_saves = True
    level = a.conn().send(body=request(2, "logging/setLevel", {"level": "error"}),
                          headers=a.session_headers(sid))
    a.server.stored(a.held_saves.pop(), now=a.now, failure=TimeoutError("slow"))
    a.run()
    assert level.status == 200 and a.server.session(sid) is not None
    assert b.conn().send(body=request(3, "ping"),
                         headers=b.session_headers(sid)).status == 200


def test_answers_that_changed_the_record_wait_for_it_and_others_do_not() -> None:
    a, b = workers()
    sid = a.initialize()
    b.conn().send(body=request(1, "ping"), headers=b.session_headers(sid))  # b has a copy
    a.hold_saves = True
    level = a.conn().send(body=request(2, "logging/setLevel", {"level": "error"}),
                          headers=a.session_headers(sid))
    assert not level.done  # the new level is not stored yet
    ping = a.conn().send(body=request(3, "ping"), headers=a.session_headers(sid))
    assert ping.status == 200  # nothing changed: not held
    a.server.stored(a.held_saves.pop(), now=a.now)
    a.run()
    assert level.status == 200
    # DELETE: its 200 waits until the drop is stored
    delete = a.conn().send("DELETE", headers=a.session_headers(sid))
    assert delete.status == 200  # (this worker's harness stores drops at once)
    assert drive(a.table.get(sid, wall_time=WALL)) is None


def test_initialized_on_another_worker_reaches_a_copy_that_doubts() -> None:
    a, b = workers()
    conn = a.conn()
    sid = conn.send(body=init_body()).headers["mcp-session-id"]  # a: initializing
    # the initialized notification goes to b (which adopts the session and saves it)
    assert b.conn().send(body={"jsonrpc": "2.0", "method": "notifications/initialized"},
                         headers=b.session_headers(sid)).status == 202
    assert drive(a.table.get(sid, wall_time=WALL))["session"]["state"] == "operating"
    # a's copy still says initializing (no bus here): it reads the table again and serves
    r = a.conn().send(body=request(5, "tools/list"), headers=a.session_headers(sid))
    assert r.status == 200 and r.json["result"] == {"tools": []}
    assert a.server.session(sid).connection.state.value == "operating"


def test_a_failed_initialize_is_not_held() -> None:
    a, = workers(1)
    a.hold_saves = True
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
    r = a.conn().send(body=body)
    assert r.status == 200 and "error" in r.json
    assert a.held_saves == []


def test_a_session_stays_bound_to_its_principal_on_every_worker() -> None:
    from mcp_sansio.auth import ProtectedResource
    from tests.auth.test_auth_server_sansio import ISSUER, RESOURCE, Tokens

    def auth() -> ProtectedResource:
        return ProtectedResource(RESOURCE, [ISSUER], Tokens(), required_scopes=["mcp:read"])

    a, b, c = workers(3, auth=auth())

    def bearer(token: str, sid: str) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {token}"), *a.session_headers(sid)]

    conn = a.conn()
    r = conn.send(body=init_body(), headers=[("authorization", "Bearer ada")])
    sid = r.headers["mcp-session-id"]
    assert conn.send(body={"jsonrpc": "2.0", "method": "notifications/initialized"},
                     headers=bearer("ada", sid)).status == 202
    record = drive(a.table.get(sid, wall_time=WALL))
    assert record["principal"] == ["ada", ISSUER]
    # the same principal (a token with more scopes) on another worker: served
    assert b.conn().send(body=request(1, "ping"), headers=bearer("ada-again", sid)).status == 200
    # someone else, or the same subject from another issuer, on a worker that never saw it:
    # 404, as for an unknown session
    assert c.conn().send(body=request(2, "ping"), headers=bearer("bob", sid)).status == 404
    assert b.conn().send(body=request(3, "ping"),
                         headers=bearer("ada-elsewhere", sid)).status == 404
    # a server without auth does not adopt a bound session (nor the other way round)
    d = Worker("d", a.table, a.log)
    assert d.conn().send(body=request(4, "ping"), headers=d.session_headers(sid)).status == 404


def test_a_connection_that_fails_while_its_answer_waits_is_not_left_waiting() -> None:
    a, = workers(1)
    a.hold_saves = True
    conn = a.conn()
    r = conn.send(body=init_body())
    assert not r.done
    conn.channel.fail()  # what an adapter does after an unexpected exception
    a.run()
    # what was written goes out, then the connection closes
    assert r.done and r.status == 200
    assert conn.channel in a.closed_channels


def test_a_lookup_is_a_parked_exchange_bounded_answered_once_released_on_close() -> None:
    """One waiting mechanism (issue 18): a store lookup parks its exchange like a token
    decision -- no answer within decision_timeout is 503 (try again), the first answer counts,
    a client that leaves releases it."""
    a, b = workers(decision_timeout=5.0)
    sid = a.initialize()
    b.hold = True
    r = b.conn().send(body=request(1, "ping"), headers=b.session_headers(sid))
    (lookup,) = b.held
    assert not r.done and b.server.pending_decisions() == []  # not a token question
    b.advance(4.9)
    assert not r.done
    b.advance(0.2)  # the store never answered: nothing known, try again (not 404)
    assert r.done and r.status == 503 and r.headers["retry-after"] == "1"
    assert b.server.resolve(lookup, drive(b.table.get(sid, wall_time=WALL)), now=b.now) is False
    # answered once: the second answer is refused
    b.held.clear()
    r = b.conn().send(body=request(2, "ping"), headers=b.session_headers(sid))
    (lookup,) = b.held
    record = drive(b.table.get(sid, wall_time=WALL + b.now))
    assert b.server.resolve(lookup, record, now=b.now) is True
    b.run()
    assert r.done and r.status == 200
    assert b.server.decide(lookup.handle, None, now=b.now) is False
    # a client that leaves while its lookup waits releases it
    b.held.clear()
    conn = b.conn()
    conn.send(body=request(3, "ping"), headers=b.session_headers("other-" + sid))
    (lookup,) = b.held
    conn.close()
    assert b.server.resolve(lookup, None, now=b.now) is False
    assert not b.server._parked


# -- several shared workers behave as one server (hypothesis) ---------------------------------


class Cluster:
    """Workers sharing the in-memory stores, with an ideal event bus: what one saves or
    drops reaches every other's copy at once."""

    def __init__(self, n: int) -> None:
        self.workers = workers(n)
        for worker in self.workers:
            worker.cluster = self  # type: ignore[attr-defined]
            worker.carry_out = self._carry_out(worker)  # type: ignore[method-assign]

    def _carry_out(self, worker: Worker) -> Any:
        plain = Worker.carry_out.__get__(worker)

        def carry_out(effect: Any) -> None:
            plain(effect)
            for other in self.workers:
                if other is worker:
                    continue
                if isinstance(effect, DropSession):
                    other.server.forget_session(effect.session_id, now=other.now)
                elif isinstance(effect, SaveSession):
                    other.server.refresh_session(effect.session_id, effect.record,
                                                 now=other.now)
                else:
                    continue
                Harness.run(other)
        return carry_out


_op = st.one_of(
    st.tuples(st.just("init"), st.sampled_from(["2025-03-26", "2025-06-18", "2025-11-25"])),
    st.tuples(st.just("initialized"), st.integers(0, 3)),
    st.tuples(st.just("ping"), st.integers(0, 3)),
    st.tuples(st.just("tools/list"), st.integers(0, 3)),
    st.tuples(st.just("setLevel"), st.integers(0, 3)),
    st.tuples(st.just("delete"), st.integers(0, 3)),
)


def _play_on(pick: Any, ops: list[tuple[str, Any]], targets: list[int]) -> list[Any]:
    """Send ``ops`` (each to the harness ``pick(i)`` chooses); what each answer was."""
    sessions: list[tuple[str, str]] = []  # (id, version)
    seen: list[Any] = []
    for i, ((op, arg), target) in enumerate(zip(ops, targets, strict=True)):
        h = pick(target)
        if op == "init":
            r = h.conn().send(body=init_body(arg, request_id=i))
            if r.status == 200:
                sessions.append((r.headers["mcp-session-id"], arg))
            seen.append((r.status, r.json.get("result", {}).get("protocolVersion")))
            continue
        if arg >= len(sessions):
            continue
        sid, version = sessions[arg]
        headers = h.session_headers(sid, version)
        if op == "delete":
            r = h.conn().send("DELETE", headers=headers)
            seen.append((op, r.status))
            continue
        if op == "initialized":
            body: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        elif op == "setLevel":
            body = request(i, "logging/setLevel", {"level": "error"})
        else:
            body = request(i, op)
        r = h.conn().send(body=body, headers=headers)
        answer = r.json if r.status == 200 and r.body else None
        seen.append((op, r.status, None if answer is None else (
            answer.get("result"), answer.get("error", {}).get("code"))))
    return seen


@settings(max_examples=100)
@given(ops=st.lists(_op, min_size=1, max_size=14),
       targets=st.lists(st.integers(0, 2), min_size=14, max_size=14))
def test_three_shared_workers_answer_as_one_server(ops: list[tuple[str, Any]],
                                                   targets: list[int]) -> None:
    alone = Harness()
    cluster = Cluster(3)
    targets = targets[:len(ops)]
    expected = _play_on(lambda _: alone, ops, targets)
    assert _play_on(lambda t: cluster.workers[t], ops, targets) == expected


def test_session_ids_carry_the_workers_routing_tag() -> None:
    """issue 14: a gateway routing by Mcp-Session-Id reads the tag; any worker still serves
    any session (the tag routes, it does not gate)."""
    table, log = MemorySessionTable(), MemoryEventLog()
    a = Worker("w0", table, log, session_id_prefix="hostA.")
    b = Worker("w1", table, log, session_id_prefix="hostB.")
    sid_a, sid_b = a.initialize(), b.initialize()
    assert sid_a.startswith("hostA.") and sid_b.startswith("hostB.")
    assert sid_a.removeprefix("hostA.")  # the unguessable part follows the tag
    r = b.conn().send(body=request(1, "ping"), headers=b.session_headers(sid_a))
    assert r.status == 200


@pytest.mark.parametrize("prefix", ["has space", "tab\t", "é", "x" * 65])
def test_a_routing_tag_that_is_no_header_token_is_refused_at_construction(prefix: str) -> None:
    with pytest.raises(ValueError, match="session_id_prefix"):
        Harness(session_id_prefix=prefix)
