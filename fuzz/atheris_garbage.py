"""Coverage-guided fuzzing of the byte input path with atheris (optional).

atheris is *not* a dependency of mcp-sansio; install it yourself (CPython on Linux or macOS)::

    pip install atheris
    python -m fuzz.atheris_garbage -max_total_time=600 -jobs=2 /tmp/mcp-corpus

(run from the repository root; every argument goes to libFuzzer). It is not collected by
pytest (no ``test_`` prefix). Each input picks a role, a lifecycle state, a revision and a
size limit from its first bytes and feeds the rest to the connection exactly as
``test_garbage.test_bytes`` does, with the same checks: nothing but ``RemoteProtocolError``
escapes (and then the connection is CLOSED), byte by byte gives the same events and output,
every reply is a valid JSON-RPC response, garbage does not close the connection, and an open
connection still answers a ping. A failed check is an ``AssertionError``, which libFuzzer
reports as a crash and saves as ``crash-<sha1>``; replay it with
``python -m fuzz.atheris_garbage crash-<sha1>``.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["mcp_sansio"]):
    import mcp_sansio  # noqa: F401  (instrumented for coverage feedback)

from mcp_sansio import HANDSHAKE_REVISIONS

from .test_garbage import (
    ROLES,
    STATES,
    TINY,
    check_alive,
    check_closing,
    feed_chunks,
    make,
    replies,
)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    role = ROLES[fdp.ConsumeIntInRange(0, 1)]
    state = STATES[fdp.ConsumeIntInRange(0, len(STATES) - 1)]
    revision = HANDSHAKE_REVISIONS[fdp.ConsumeIntInRange(0, len(HANDSHAKE_REVISIONS) - 1)]
    max_size = None if fdp.ConsumeBool() else TINY
    payload = fdp.ConsumeBytes(fdp.remaining_bytes())
    if not payload:
        return
    before = make(role, state, revision, max_size).state
    whole = feed_chunks(make(role, state, revision, max_size), [payload], False)
    bytewise = feed_chunks(make(role, state, revision, max_size),
                           [payload[i:i + 1] for i in range(len(payload))], False)
    assert bytewise.trace == whole.trace, "byte by byte gave different events"
    assert bytewise.output == whole.output, "byte by byte gave different output"
    replies(whole)
    check_closing(role, state, before, whole)
    check_alive(role, state, before, whole)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
