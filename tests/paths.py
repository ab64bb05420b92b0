"""Where things are, for tests at any depth of ``tests/``: the repository's root and the
folders tests read (the peers they start, the docs and benchmarks they check).

A test module names these instead of counting its own depth from ``__file__``, so that it can
move between the folders of ``tests/`` (docs/contributing.rst: the layout) unchanged."""

from __future__ import annotations

from pathlib import Path

#: The ``tests/`` folder.
TESTS = Path(__file__).resolve().parent
#: The repository's root (a checkout or an unpacked sdist).
ROOT = TESTS.parent
#: The test peers: servers and clients the tests run as processes.
PEERS = TESTS / "peers"
