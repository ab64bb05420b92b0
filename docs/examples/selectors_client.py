"""A client on a plain ``selectors`` loop: the public stdio helpers start and stop the
server, and the public pump does the protocol. No asyncio, no threads."""

import os
import selectors
import sys
import time

from mcp_sansio.adapters.pump import ClientPump
from mcp_sansio.adapters.stdio import spawn_server, stop_server

server = spawn_server([sys.executable, "-m", "mcp_sansio", "serve-example"])
pump = ClientPump(write=lambda data: os.write(server.stdin.fileno(), data),
                  now=time.monotonic, keepalive=30.0)

loop = selectors.DefaultSelector()
loop.register(server.stdout, selectors.EVENT_READ, "stdout")
loop.register(server.stderr, selectors.EVENT_READ, "stderr")  # drained, or it fills up


def run_until(finished):
    """Turn the loop until ``finished()`` (or the connection closes)."""
    while not finished() and pump.closed is None:
        wait = None if pump.deadline is None else max(0.0, pump.deadline - time.monotonic())
        for key, _ in loop.select(wait):
            data = os.read(key.fd, 65536)
            if key.data == "stdout":
                pump.feed(data)  # b"" is the end of file
            elif not data:
                loop.unregister(key.fileobj)
        if pump.deadline is not None and time.monotonic() >= pump.deadline:
            pump.on_timer()


pump.connect()
run_until(lambda: pump.initialized is not None)
print("connected:", pump.conn.protocol_version)

call = pump.send("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, timeout=10.0)
run_until(lambda: call.done)
print("echo says:", call.result()["content"][0]["text"])

pump.conn.close(now=time.monotonic())
pump.service()
print("server exit status:", stop_server(server))
server.stdout.close()
server.stderr.close()
