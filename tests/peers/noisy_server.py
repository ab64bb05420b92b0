"""The example server, flooding its stderr (megabytes, in long and short lines) before and
while it serves: the client must keep reading both pipes or the server blocks."""

import sys
import threading

from mcp_sansio.adapters.tools._example_server import run as run_example


def flood(tag: str) -> None:
    for i in range(20_000):
        sys.stderr.write(f"{tag} line {i} " + "x" * (i % 400) + "\n")
    sys.stderr.write("y" * 200_000 + "\n")  # one very long line
    sys.stderr.flush()


flood("before")  # ~4 MB before the first answer: far more than a pipe holds
threading.Thread(target=flood, args=("during",), daemon=True).start()
run_example(sys.argv[1] if len(sys.argv) > 1 else "asyncio")
