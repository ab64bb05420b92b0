"""The per-request end marker on events (``Event.ended_request``): every request we send
gets exactly one event that names it, whatever way its story ends, and no other event does.
"""

from __future__ import annotations

import inspect
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_sansio._events as events
from mcp_sansio import ErrorCode, Request, ServerConnection
from tests.pair import SERVER_INFO, ConnectionPair

#: The terminal classes the module docstring of ``_events`` names, written out once here
#: so that a class gaining or losing ``TERMINAL`` by mistake fails this test.
DOCUMENTED_TERMINAL = {
    "Response", "ErrorResponse", "RequestTimedOut", "RequestCancelled", "RequestAborted",
    "InputRequired", "RequestFailed",
}


def test_terminal_flag_matches_the_documented_classes() -> None:
    classes = {name: obj for name, obj in vars(events).items()
               if inspect.isclass(obj) and issubclass(obj, events.Event)}
    flagged = {name for name, cls in classes.items() if cls.TERMINAL}
    assert flagged == DOCUMENTED_TERMINAL


def test_marker_is_not_an_attrs_field() -> None:
    # A ClassVar: building, comparing and evolving events is unchanged.
    assert "TERMINAL" not in {f.name for f in events.Response.__attrs_attrs__}
    assert events.Response(request_id=1, result={}).ended_request == 1
    assert events.ErrorResponse(request_id=None, code=-32700, message="x").ended_request is None
    assert events.Progress(request_id=1, token=1, progress=0.5).ended_request is None
    assert events.CancelRequested(request_id=1, method="m").ended_request is None


#: How a request's story ends: answered, refused, timed out, cancelled by us, or the
#: connection closes under it.
ENDINGS = st.sampled_from(["answer", "error", "timeout", "cancel", "close"])


@settings(max_examples=40, deadline=None)
@given(st.lists(ENDINGS, min_size=1, max_size=6))
def test_each_request_ends_exactly_once(endings: list[str]) -> None:
    pair = ConnectionPair(server=ServerConnection(info=SERVER_INFO,
                                                  capabilities={"tools": {}}))
    pair.handshake()
    pair.take("client")
    pair.take("server")
    ids = [pair.client.send_request("tools/list", {}, now=pair.now, timeout=5.0)
           for _ in endings]
    pair.pump()
    incoming = {e.request_id: e for e in pair.take("server") if isinstance(e, Request)}
    assert len(incoming) == len(ids)
    closing = False
    for rid, ending in zip(ids, endings, strict=True):
        if ending == "answer":
            pair.server.send_response(rid, {"tools": []})
        elif ending == "error":
            pair.server.send_error(rid, ErrorCode.INTERNAL_ERROR, "Internal error")
        elif ending == "cancel":
            pair.client.cancel(rid, "changed my mind", now=pair.now)
        elif ending == "close":
            closing = True
    pair.pump()
    if closing:  # the connection closes: what is still pending is aborted
        pair.client.receive_eof(now=pair.now)
    pair.advance(10.0)  # otherwise the "timeout" ones time out
    seen = pair.take("client")
    ended = Counter(e.ended_request for e in seen if e.ended_request is not None)
    assert ended == Counter(ids)
    for event in seen:
        assert (event.ended_request is not None) == type(event).TERMINAL
