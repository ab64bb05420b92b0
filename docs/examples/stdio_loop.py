"""One event loop for an mcp-sansio connection over a pair of pipes (POSIX ``selectors``).

This is the whole contract in thirty lines: feed input, drain events, drain the outbox,
sleep until the next deadline or the next input, repeat. ``on_event`` is the application: it
may call ``conn.send_*`` / ``conn.cancel`` / ``conn.close`` and returns nothing.
"""

import os
import selectors
import time

from mcp_sansio import NEED_DATA, ConnectionClosed


def run(conn, read_fd, write_fd, on_event):
    selector = selectors.DefaultSelector()
    selector.register(read_fd, selectors.EVENT_READ)
    closed = False
    while True:
        # 1. Drain events. A handler may send, which is input too: keep draining.
        while (event := conn.next_event()) is not NEED_DATA:
            on_event(conn, event)
            if isinstance(event, ConnectionClosed):
                closed = True  # no further events follow; flush and stop below
        # 2. Drain the outbox (blocking writes: fine for a sketch).
        data = conn.data_to_send()
        while data:
            data = data[os.write(write_fd, data):]
        if closed:
            return
        # 3. Sleep until input arrives or the next deadline passes.
        deadline = conn.next_deadline()
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready = selector.select(timeout)
        now = time.monotonic()
        if ready:
            conn.receive_data(os.read(read_fd, 65536), now=now)  # b"" means EOF
        conn.handle_timeout(now)  # does nothing if no deadline has passed
