"""The ASGI application's hardening in memory (adapters/asgi/guard.py over
mcp_sansio/http/_head_rules.py): each rule row our wires refuse and an engine's scope still
shows is refused with the wire's status before the body is read; the 413 goes out before
any ``receive()`` (so an engine sends no ``100 Continue``); a body the engine failed to
frame is 400, not 500; an HTTP/1.0 client gets a streamed answer whole, with its length.
The same rules against the real engines: tests/asgi/test_asgi_engine_hardening.py."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_sansio.adapters import asgi

from mcp_sansio.http._head_rules import judge_head
from mcp_sansio.http._wire import REFUSALS, ServerWire
from mcp_sansio.http._wire_httptools import CHECKS
from tests.asgi.test_asgi import BACKENDS, Call, Probe, make_server, post, scope, stateless

LIMITS = {"max_header_size": 16384, "max_header_count": 100, "max_target_length": 8192,
          "max_body_size": 1000}


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run(backend: str, main: Any) -> None:
    anyio.run(main, backend=backend)


def fields(*pairs: tuple[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.encode(), v.encode()) for k, v in pairs]


HOST = ("host", "127.0.0.1")

#: A head -> the rule row it breaks (None: none).
HEADS: list[tuple[str, list[tuple[bytes, bytes]], str, str | None]] = [
    ("1.1", fields(HOST), "/mcp", None),
    ("1.1", fields(), "/mcp", "missing Host in an HTTP/1.1 request"),
    ("1.1", fields(("host", "")), "/mcp", "missing Host in an HTTP/1.1 request"),
    ("1.0", fields(), "/mcp", None),
    ("1.1", fields(HOST, HOST), "/mcp", "more than one Host field"),
    ("1.1", fields(HOST, ("transfer-encoding", "chunked"), ("content-length", "3")), "/mcp",
     "both Transfer-Encoding and Content-Length"),
    ("1.1", fields(HOST, ("transfer-encoding", "chunked, gzip")), "/mcp",
     "chunked is not the final transfer coding"),
    ("1.1", fields(HOST, ("transfer-encoding", "chunked, chunked")), "/mcp",
     "a transfer coding other than chunked"),
    ("1", fields(HOST, ("transfer-encoding", "chunked")), "/mcp",
     "Transfer-Encoding in an HTTP/1.0 request"),
    ("2", fields(("transfer-encoding", "chunked")), "/mcp", None),
    ("1.1", fields(HOST, ("content-length", "x")), "/mcp", "invalid Content-Length"),
    ("1.1", fields(HOST, ("content-length", "3"), ("content-length", "4")), "/mcp",
     "invalid Content-Length"),
    ("1.1", fields(HOST, ("x-a", "a" * 17000)), "/mcp", "header section too large"),
    ("1.1", fields(HOST, *[("x", "1")] * 101), "/mcp", "too many header fields"),
    ("1.1", fields(HOST), "/" + "a" * 9000, "request-target too long"),
    ("1.1", fields(HOST, ("content-length", "1001")), "/mcp", "body too large"),
]


@pytest.mark.parametrize(("version", "head", "target", "rule"), HEADS)
def test_each_rule_row(version: str, head: list[tuple[bytes, bytes]], target: str,
                       rule: str | None) -> None:
    found = judge_head("POST", target, version, head, **LIMITS)
    assert (found.rule if found else None) == rule
    if found is not None and rule in REFUSALS:
        assert (found.status, found.section) == REFUSALS[rule]
    if found is not None and rule in CHECKS:
        assert (found.status, found.section) == CHECKS[rule]


_NAMES = st.sampled_from(["host", "content-length", "transfer-encoding", "x-a"])
_VALUES = st.sampled_from(["127.0.0.1", "3", "0", "chunked", "chunked, chunked", "gzip",
                           "chunked, gzip", "a"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_NAMES, _VALUES), max_size=5),
       st.sampled_from(["HTTP/1.1", "HTTP/1.0"]))
def test_the_rows_answer_as_the_h11_wire_does(pairs: list[tuple[str, str]],
                                              version: str) -> None:
    """A head the h11 wire refuses is refused with the same status by the rows; one it
    accepts, they accept (for heads an engine hands over: well-formed field lines)."""
    head = b"POST /mcp " + version.encode() + b"\r\n" + b"".join(
        f"{k}: {v}\r\n".encode() for k, v in pairs) + b"\r\n"
    wire = ServerWire(max_body_size=LIMITS["max_body_size"])
    wire.receive_data(head)
    event = wire.next_event()
    out = wire.data_to_send()
    wire_status = int(out.split(b" ")[1]) if out.startswith(b"HTTP/1.1 4") or out.startswith(
        b"HTTP/1.1 5") else None
    assert event is not None or wire_status is not None
    found = judge_head("POST", "/mcp", version[5:], fields(*pairs), **LIMITS)
    assert (found.status if found else None) == wire_status, (pairs, out)


def test_a_body_over_the_limit_is_refused_before_any_receive(backend: str) -> None:
    async def main() -> None:
        app = asgi.app(make_server(Probe()), max_body_size=1000)
        call = Call(app, scope("POST", headers=[("content-length", "5000"),
                                                ("expect", "100-continue")]), [b"x" * 5000])
        await call.run()
        assert call.status == 413 and call.read == 0  # no receive: no 100 Continue
        assert call.headers["connection"] == "close"
        # without Expect, the body is drained after the answer's bytes went out
        call = Call(app, scope("POST", headers=[("content-length", "5000")]), [b"x" * 5000])
        await call.run()
        assert call.status == 413 and call.read_when_answered == 0 and call.read == 1
        await app.aclose()
    run(backend, main)


def test_host_and_framing_rows_under_asgi(backend: str) -> None:
    async def main() -> None:
        app = asgi.app(make_server(Probe()))
        two = scope("POST")
        two["headers"].append((b"host", b"127.0.0.1:8000"))
        call = await Call(app, two, [b"{}"]).run()
        assert call.status == 400 and b"more than one Host" in call.body
        both = scope("POST", headers=[("transfer-encoding", "chunked"),
                                      ("content-length", "2")])
        call = await Call(app, both, [b"{}"]).run()
        assert call.status == 400 and call.headers["connection"] == "close"
        await app.aclose()
    run(backend, main)


class Unframing(Call):
    async def receive(self) -> dict[str, Any]:
        raise RuntimeError("invalid chunk size")  # what an engine raises for a bad body


def test_a_body_the_engine_could_not_frame_is_400(backend: str) -> None:
    async def main() -> None:
        app = asgi.app(make_server(Probe()))
        call = await Unframing(app, scope("POST", headers=[("transfer-encoding", "chunked")]),
                               []).run()
        assert call.status == 400 and b"framing" in call.body
        await app.aclose()
    run(backend, main)


def test_an_http10_stream_goes_out_whole_with_its_length(backend: str) -> None:
    async def main() -> None:
        app = asgi.app(make_server(Probe()))
        body, headers = stateless("tools/call", {"arguments": {"n": 3}}, name="steps")
        body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = "debug"
        call = post(app, body, headers)
        call.scope["http_version"] = "1.0"
        await call.run()
        assert call.headers["content-type"] == "text/event-stream"
        assert int(call.headers["content-length"]) == len(call.body)
        assert call.sse()[-1]["result"]["content"][0]["text"] == "done"
        await app.aclose()
    run(backend, main)
