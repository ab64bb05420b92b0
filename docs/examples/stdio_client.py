"""Spawn ``stdio_server.py`` and talk to it with a ClientConnection and ``stdio_loop.run``."""

import subprocess
import sys
import time
from pathlib import Path

from stdio_loop import run

from mcp_sansio import ClientConnection, Initialized, Progress, Response

SERVER = Path(__file__).with_name("stdio_server.py")


def on_event(conn, event):
    print(f"client: {event!r}")
    if isinstance(event, Initialized):
        conn.send_request("tools/list", now=time.monotonic())
    elif isinstance(event, Response) and event.method == "tools/list":
        conn.send_request(
            "tools/call", {"name": "echo", "arguments": {"text": "hello"}},
            now=time.monotonic(), progress=True, timeout=5.0,
        )
    elif isinstance(event, Progress):
        pass  # e.g. update a progress bar; this also restarted the request's idle timer
    elif isinstance(event, Response) and event.method == "tools/call":
        conn.close(now=time.monotonic())  # ends with ConnectionClosed(reason=LOCAL)


if __name__ == "__main__":
    proc = subprocess.Popen(
        [sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    client = ClientConnection(info={"name": "echo-client", "version": "1.0"})
    client.initialize(now=time.monotonic())
    run(client, proc.stdout.fileno(), proc.stdin.fileno(), on_event)
    proc.stdin.close()  # stdio shutdown: close the server's stdin, then wait
    sys.exit(proc.wait(timeout=5))
