"""Deliberately broken servers: each breaks exactly one rule the testing kit checks.

Every entry of :data:`BROKEN` is the good in-process server of ``tests/check/test_testing_kit.py``
(a careful application on a :class:`~mcp_sansio.ServerConnection`) with its output
rewritten by one function, in one revision: a "server class parametrized by the rule it
breaks". ``tests/check/test_check_broken.py`` runs the kit's sweep against each and expects that
finding and no other.

Run as a program (``python -m tests.peers.broken_servers NAME``), an entry serves stdio:
lines from stdin go to the in-process server, what it writes goes to stdout -- so that the
command line (``mcp-sansio check -- ...``) can be shown failing on a real process.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import attrs

from mcp_sansio import testing as kit
from tests.check.test_testing_kit import (
    TAMPERINGS,
    Tampered,
    _after_initialize,
    _on_method,
    good_server,
)

Output = Callable[[Any, Tampered], list[Any]]


@attrs.frozen
class Broken:
    """One broken server: the check it trips, the revision it breaks it in, the output
    rewrite, the capabilities it declares (None: the good server's)."""

    rule: str
    revision: str
    output: Output
    caps: dict[str, Any] | None = None

    def transport(self) -> Tampered:
        return Tampered(good_server(self.caps), self.output)

    @property
    def invalid_rules(self) -> list[str]:
        """The invalid messages the sweep sends: this rule's alone, if it is one."""
        return [self.rule] if self.rule in kit.RULES else []


def _stray_response(message: Any, t: Tampered) -> list[Any]:
    """After the answer to a ping, a second response with an id nobody used."""
    if "method" not in message and t.method_of(message) == "ping" and not t.state.get("done"):
        t.state["done"] = True
        return [message, {"jsonrpc": "2.0", "id": 424242, "result": {}}]
    return [message]


#: Error codes that only answers to broken messages carry in the sweep (the valid requests
#: that deserve an error get -32602 or -32002 for an unknown tool, prompt or resource).
_MALFORMED_CODES = frozenset({-32700, -32600, -32601, -32022})
_NAMED = frozenset({"tools/call", "prompts/get", "resources/read"})


def _wrong_code(message: Any, t: Tampered) -> list[Any]:
    """Answer every broken message with -32603 (internal error) instead of its code."""
    error = message.get("error") if isinstance(message, dict) else None
    if not isinstance(error, dict):
        return [message]
    code = error.get("code")
    if code in _MALFORMED_CODES or (code == -32602 and t.method_of(message) not in _NAMED):
        return [{**message, "error": {"code": -32603, "message": "Internal error"}}]
    return [message]


H, S, A = "2025-06-18", "2026-07-28", "2025-03-26"
_EXACT = {"unknown-id", "envelope"}  # replaced below by variants that break nothing else

BROKEN: dict[str, Broken] = {
    f"{rule}-{revision}": Broken(rule, revision, output, caps)
    for rule, revision, output, caps in TAMPERINGS if rule not in _EXACT
} | {
    "unknown-id": Broken("unknown-id", H, _stray_response),
    "envelope": Broken("envelope", H, _after_initialize({"jsonrpc": "2.0"})),
    "duplicate-response-listing-prompts": Broken(
        "duplicate-response", H, _on_method("prompts/list", lambda m, t: [m, m])),
} | {
    f"{rule}-{revision}": Broken(rule, revision, _wrong_code)
    for rule, revision in (
        ("not-json", S), ("not-an-object", H), ("empty-batch", H), ("jsonrpc-version", H),
        ("id-type", H), ("method-type", H), ("params-type", H), ("request-with-result", H),
        ("unknown-method", H), ("wrong-direction-method", H), ("missing-param", H),
        ("wrong-param-type", H), ("missing-protocol-version", S),
        ("missing-client-capabilities", S), ("unsupported-protocol-version", S),
        ("batch-not-supported", H), ("empty-batch", A),
    )
}


def serve(name: str) -> None:
    """Serve the broken server ``name`` on stdin/stdout until stdin closes."""
    transport = BROKEN[name].transport()
    lock = threading.Lock()
    done = threading.Event()

    def pump_out() -> None:
        while not done.is_set():
            with lock:
                data = transport.receive(0.05)
            if data:
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
            else:
                done.wait(0.05)

    writer = threading.Thread(target=pump_out, daemon=True)
    writer.start()
    for line in sys.stdin.buffer:
        with lock:
            transport.send(line)
    done.set()
    writer.join(1.0)


if __name__ == "__main__":
    serve(sys.argv[1])
