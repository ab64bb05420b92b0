"""The sans-IO HTTP client's own cost per call, two revisions of mcp-sansio side by side.

Theory of operation
-------------------
End-to-end HTTP benchmarks (``benchmarks/http_layer.py``) add a server process, sockets and an
event loop to the client's cost, and on a shared machine their noise hides a change of a few
per cent in the client. This one times the client alone: an :class:`HTTPClient` settled in an
era against an in-memory :class:`HTTPServer`, then, for each call, the request built and
written (``send_request``, ``data_to_send``) and a canned response of that era read back
(``receive_data``, ``next_event``) -- everything the client does per call and nothing else.

Shapes: ``2026/json`` (a 2026-07-28 ``tools/call`` answered with one JSON object),
``2026/sse`` (the same answered on an SSE stream: chunked, two events) and ``2025/json``
(a handshake-era call in a session: ``Mcp-Session-Id`` on the request, JSON answer).

Each trial is a fresh process importing mcp-sansio from one tree (``PYTHONPATH``); trials of
tree A and tree B alternate (A B, B A, ...). Reported per shape: the median CPU microseconds
per call (``time.process_time``, steadier than wall time under load) of each tree, and the
median of the per-pair ratios B/A.

Make a tree from a revision::

    mkdir -p /tmp/rev_a/mcp_sansio
    git archive <rev> mcp_sansio | tar -x -C /tmp/rev_a

Run (from outside the repository, so that the checkout is not first on ``sys.path``)::

    cd /tmp && python /path/to/benchmarks/http_client_ab.py /tmp/rev_a /tmp/rev_b

``installed`` as a tree means the package as installed (no ``PYTHONPATH``). ``--quick``
runs one pair of 200 calls: a smoke test, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_CHILD = r'''
import gc, json, sys, time
from mcp_sansio import NEED_DATA, ClientConnection, Era, Response, ServerConnection
from mcp_sansio.http import HTTPClient, HTTPServer

shape, calls = sys.argv[1], int(sys.argv[2])
stateless = shape.startswith("2026")
versions = ["2026-07-28"] if stateless else ["2025-11-25"]
server = HTTPServer(lambda: ServerConnection(info={"name": "s", "version": "1"},
                                             capabilities={"tools": {}}),
                    new_session_id=lambda: "session-0123456789")
client = HTTPClient(ClientConnection(info={"name": "c", "version": "1"}, versions=versions),
                    "http://127.0.0.1:8000/mcp", standalone_stream=False)
peers = {}

def settle():
    for _ in range(100):
        moved = False
        while client.next_event() is not NEED_DATA:
            moved = True
        for channel, data in client.data_to_send():
            moved = True
            peer = peers.get(channel)
            if peer is None:
                peer = peers[channel] = server.new_channel(now=0)
            if data:
                peer.receive_data(data, now=0)
        while server.next_event() is not NEED_DATA:
            moved = True
        for peer, data in server.data_to_send():
            for channel, p in peers.items():
                if p is peer and data:
                    moved = True
                    channel.receive_data(data, now=0)
        if not moved:
            return

client.connect(now=0, era=Era.STATELESS if stateless else Era.HANDSHAKE)
settle()
result = {"content": [{"type": "text", "text": "hello"}], "isError": False}

def answer(rid):
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
    if shape.endswith("sse"):
        events = (b"id: 1\ndata: \n\n"
                  b"event: message\nid: 2\ndata: " + body + b"\n\n")
        return (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
                + b"%x\r\n" % len(events) + events + b"\r\n0\r\n\r\n")
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n" % len(body) + body)

def one(i):
    rid = client.connection.send_request("tools/call", {"name": "echo",
                                          "arguments": {"text": "hello"}}, now=0)
    (channel, data), = client.data_to_send()
    channel.receive_data(answers[i], now=0)
    got = client.next_event()
    assert isinstance(got, Response), got
    assert client.next_event() is NEED_DATA

# The answers are built before timing: request ids count up from the first one.
probe = client.connection.send_request("tools/call", {"name": "echo"}, now=0)
(channel, _), = client.data_to_send()
channel.receive_data(answer(probe), now=0)
while client.next_event() is not NEED_DATA:
    pass
answers = [answer(probe + 1 + i) for i in range(calls + 200)]
for i in range(200):
    one(i)
answers = answers[200:]
gc.collect()
t0 = time.process_time()
for i in range(calls):
    one(i)
print(json.dumps((time.process_time() - t0) / calls * 1e6))
'''

SHAPES = ("2026/json", "2026/sse", "2025/json")


def trial(tree: str, shape: str, calls: int) -> float:
    env = dict(os.environ)
    if tree != "installed":
        env["PYTHONPATH"] = tree
    out = subprocess.run([sys.executable, "-c", _CHILD, shape, str(calls)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return float(json.loads(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("tree_a")
    parser.add_argument("tree_b")
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--quick", action="store_true",
                        help="one pair of 200 calls: a smoke test, not a measurement")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.calls = 1, 200
    print(f"{'shape':<11} {'A us/call':>10} {'B us/call':>10} {'B/A (paired)':>13}")
    for shape in SHAPES:
        a_runs, b_runs, ratios = [], [], []
        for n in range(args.pairs):
            # By position, not by tree: the same tree twice measures the noise.
            if n % 2 == 0:
                a = trial(args.tree_a, shape, args.calls)
                b = trial(args.tree_b, shape, args.calls)
            else:
                b = trial(args.tree_b, shape, args.calls)
                a = trial(args.tree_a, shape, args.calls)
            a_runs.append(a)
            b_runs.append(b)
            ratios.append(b / a)
        print(f"{shape:<11} {statistics.median(a_runs):>10.1f} "
              f"{statistics.median(b_runs):>10.1f} {statistics.median(ratios):>13.3f}")


if __name__ == "__main__":
    main()
