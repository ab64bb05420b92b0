"""Coverage-guided fuzzing of the sans-IO HTTP server with atheris (optional).

atheris is *not* a dependency of mcp-sansio; install it yourself (CPython on Linux or macOS)::

    pip install atheris
    python -m fuzz.atheris_http -dict=fuzz/http.dict -max_len=8192 \\
        -max_total_time=1800 /tmp/http-corpus fuzz/corpus/http

(run from the repository root; every argument goes to libFuzzer; ``-merge=1`` re-runs the
program by its path, so for it use a small executable script that calls :func:`main`). Not
collected by pytest (no ``test_`` prefix). How an input is decoded and checked is
:func:`fuzz.http_input.one_input`: one connection's bytes, cut into reads as its first byte
says, fed to a fresh in-memory server; nothing escapes, every response is well-formed
HTTP/1.1, only requests framed whole and unambiguously (RFC 9112 section 6) reach the MCP
layer, a refusal closes the connection, memory stays bounded, a fresh connection is served,
and the cut does not matter. A failed check is an
``AssertionError``, which libFuzzer reports as a crash and saves as ``crash-<sha1>``; replay
it with ``python -m fuzz.atheris_http crash-<sha1>``. h11 is instrumented too: its parser
is where the framing decisions are made.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["mcp_sansio", "h11"]):
    import h11  # noqa: F401  (instrumented for coverage feedback)

    import mcp_sansio.http  # noqa: F401

from .http_input import one_input


def test_one_input(data: bytes) -> None:
    one_input(data)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
