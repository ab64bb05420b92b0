"""Newline-delimited framing (``mcp_sansio._framing.ndjson.LineSplitter``).

Chunking must never matter; CRLF is tolerated; blank lines are skipped; an oversized line
becomes one ``OVERSIZED`` and the stream goes on; memory stays bounded by ``max_line`` plus
one chunk; and the work is linear in the bytes fed -- checked by counting, never by a clock.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mcp_sansio._framing.ndjson import OVERSIZED, LineSplitter, Oversized, frame

SETTINGS = settings(max_examples=200, deadline=None)

Item = bytes | Oversized


def feed_chunks(splitter: LineSplitter, chunks: list[bytes]) -> list[Item]:
    out: list[Item] = []
    for chunk in chunks:
        out.extend(splitter.feed(chunk))
    return out


def cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def expected_items(raw_lines: list[bytes], max_line: int) -> list[Item]:
    """The model: each newline-terminated raw line (CR included, LF excluded) is OVERSIZED if
    longer than ``max_line``, skipped if blank, else given back without its CR."""
    out: list[Item] = []
    for raw in raw_lines:
        if len(raw) > max_line:
            out.append(OVERSIZED)
            continue
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if line.strip():
            out.append(line)
    return out


# -- strategies --------------------------------------------------------------------------------

#: Line content: no LF; multi-byte UTF-8 and stray CRs welcome.
line_text = st.text(
    alphabet=st.one_of(st.sampled_from('{}[]":, \t\r\xe9\u20ac\U0001f600'),
                       st.characters(exclude_characters="\n", exclude_categories=("Cs",))),
    max_size=30,
)
raw_line = st.one_of(
    line_text.map(lambda s: s.encode("utf-8")),
    st.sampled_from([b"", b" ", b"\t \t", b"\r", b" \r", b'{"jsonrpc":"2.0"}\r']),
    st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")),
)


class CountingBuffer(bytearray):
    """A bytearray that counts the bytes each ``find(sub, start)`` examines and remembers
    its largest size, failing fast if the scanning budget is exceeded."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.scanned = 0
        self.peak = 0
        self.budget: int | None = None

    def find(self, sub: Any, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        begin = 0 if start is None else start
        stop = len(self) if end is None else end
        result = super().find(sub, begin, stop)
        self.scanned += (result + len(sub) - begin) if result >= 0 else max(0, stop - begin)
        if self.budget is not None:
            assert self.scanned <= self.budget, f"scanned {self.scanned} > {self.budget}"
        return result

    def __iadd__(self, other: Any) -> CountingBuffer:
        super().__iadd__(other)
        self.peak = max(self.peak, len(self))
        return self


def counting_splitter(max_line: int) -> tuple[LineSplitter, CountingBuffer]:
    splitter = LineSplitter(max_line)
    buffer = CountingBuffer()
    splitter._buffer = buffer  # type: ignore[misc]
    return splitter, buffer


# -- chunking never matters --------------------------------------------------------------------


@SETTINGS
@given(lines=st.lists(raw_line, max_size=12), cuts=st.lists(st.integers(0, 10_000), max_size=30),
       final_newline=st.booleans())
def test_any_chunking_gives_the_same_lines(lines: list[bytes], cuts: list[int],
                                          final_newline: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline else b"")
    whole = LineSplitter(10_000).feed(data)
    chunked = feed_chunks(LineSplitter(10_000), cut(data, cuts))
    assert chunked == whole
    complete = lines if final_newline else lines[:-1]
    assert whole == expected_items(complete, 10_000)


@SETTINGS
@given(lines=st.lists(raw_line, max_size=8))
def test_byte_at_a_time_gives_the_same_lines(lines: list[bytes]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    splitter = LineSplitter(10_000)
    single = feed_chunks(splitter, [data[i : i + 1] for i in range(len(data))])
    assert single == LineSplitter(10_000).feed(data)
    assert single == expected_items(lines, 10_000)
    assert splitter.pending == 0


@SETTINGS
@given(text=st.text(alphabet=st.characters(min_codepoint=0x80, exclude_categories=("Cs",)),
                    min_size=1, max_size=20),
       cuts=st.lists(st.integers(0, 200), max_size=20))
def test_splits_inside_multibyte_characters(text: str, cuts: list[int]) -> None:
    data = ('{"t":"' + text + '"}\n').encode("utf-8") * 2
    lines = feed_chunks(LineSplitter(10_000), cut(data, cuts))
    assert lines == [data[: len(data) // 2 - 1]] * 2
    assert isinstance(lines[0], bytes)
    assert lines[0].decode("utf-8") == '{"t":"' + text + '"}'


def test_crlf_is_tolerated_and_blank_lines_skipped() -> None:
    data = b'{"a":1}\r\n\r\n  \n\t\r\n{"b":2}\n\n{"c":3}\r\n'
    assert LineSplitter().feed(data) == [b'{"a":1}', b'{"b":2}', b'{"c":3}']
    # split between CR and LF
    splitter = LineSplitter()
    assert splitter.feed(b'{"a":1}\r') == []
    assert splitter.feed(b'\n') == [b'{"a":1}']
    # only one CR is dropped, and only at the end
    assert LineSplitter().feed(b"x\r\r\n") == [b"x\r"]
    assert LineSplitter().feed(b"a\rb\n") == [b"a\rb"]


def test_unterminated_tail_waits_for_its_newline() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b'{"a":') == []
    assert splitter.pending == 5
    assert splitter.feed(b'1}') == []
    assert splitter.feed(b"\n") == [b'{"a":1}']
    assert splitter.pending == 0
    assert splitter.feed(b"tail") == []
    assert splitter.eof() == b"tail"
    assert splitter.pending == 0
    assert splitter.eof() is None


def test_frame_appends_one_newline() -> None:
    assert frame(b"{}") == b"{}\n"
    assert LineSplitter().feed(frame(b'{"x":1}') + frame(b"[]")) == [b'{"x":1}', b"[]"]


# -- oversized lines ---------------------------------------------------------------------------


@SETTINGS
@given(
    lines=st.lists(
        st.one_of(raw_line, st.integers(1, 200).map(lambda n: b"x" * n),
                  st.integers(1, 200).map(lambda n: b"y" * n + b"\r")),
        max_size=10,
    ),
    max_line=st.integers(1, 64),
    cuts=st.lists(st.integers(0, 5000), max_size=40),
)
def test_oversized_lines_become_one_marker_and_the_stream_goes_on(
    lines: list[bytes], max_line: int, cuts: list[int]
) -> None:
    # Whether the CR of a CRLF line counts towards max_line is left open: avoid that one
    # boundary (a line of exactly max_line bytes plus CR).
    assume(not any(len(x) == max_line + 1 and x.endswith(b"\r") for x in lines))
    data = b"".join(line + b"\n" for line in lines)
    expected = expected_items(lines, max_line)
    assert LineSplitter(max_line).feed(data) == expected
    splitter = LineSplitter(max_line)
    assert feed_chunks(splitter, cut(data, cuts)) == expected
    assert splitter.pending == 0


def test_oversized_line_fed_in_pieces_reports_once() -> None:
    splitter = LineSplitter(10)
    out = feed_chunks(splitter, [b"a" * 6, b"a" * 6, b"a" * 6, b"a" * 100])
    assert out == [OVERSIZED]
    assert splitter.pending == 0  # the refused bytes were dropped at once
    assert splitter.feed(b"a" * 50) == []  # still the same line
    assert splitter.feed(b'aa\n{"ok":1}\n') == [b'{"ok":1}']
    assert splitter.feed(b"b" * 10 + b"\n") == [b"b" * 10]  # exactly max_line is fine
    assert splitter.feed(b"c" * 11 + b"\n") == [OVERSIZED]


def test_oversized_then_eof_gives_no_tail() -> None:
    splitter = LineSplitter(4)
    assert splitter.feed(b"123456") == [OVERSIZED]
    assert splitter.eof() is None


def test_max_line_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LineSplitter(0)


# -- memory stays bounded ----------------------------------------------------------------------


@SETTINGS
@given(max_line=st.integers(1, 300), chunks=st.lists(st.integers(1, 500), min_size=1,
                                                      max_size=40))
def test_a_line_that_never_ends_holds_at_most_max_line_plus_a_chunk(
    max_line: int, chunks: list[int]
) -> None:
    splitter, buffer = counting_splitter(max_line)
    reported = 0
    for size in chunks:
        out = splitter.feed(b"z" * size)
        reported += out.count(OVERSIZED)
        assert all(item is OVERSIZED for item in out)
        assert splitter.pending <= max_line
        assert buffer.peak <= max_line + size
        buffer.peak = 0
    assert reported == (1 if sum(chunks) > max_line else 0)


@SETTINGS
@given(max_line=st.integers(1, 100),
       pieces=st.lists(st.binary(min_size=1, max_size=150), min_size=1, max_size=30))
def test_pending_is_bounded_whatever_the_bytes(max_line: int, pieces: list[bytes]) -> None:
    splitter, buffer = counting_splitter(max_line)
    for piece in pieces:
        for item in splitter.feed(piece):
            assert item is OVERSIZED or (0 < len(item) <= max_line and b"\n" not in item)
        assert splitter.pending <= max_line + 1  # + 1: a CR waiting for its LF
        assert buffer.peak <= max_line + 1 + len(piece)  # + 1: a CR waiting for its LF
        buffer.peak = 0


# -- linear time, by counting ------------------------------------------------------------------


def test_huge_message_in_small_chunks_is_scanned_linearly() -> None:
    size = 100 * 1024 * 1024
    chunk_size = 64 * 1024
    body = b'{"jsonrpc":"2.0","id":1,"result":{"blob":"'
    tail = b'"}}'
    filler = size - len(body) - len(tail)
    splitter, buffer = counting_splitter(size + 1024)
    chunk = b"A" * chunk_size
    fed = 0
    out: list[Item] = []

    def give(piece: bytes) -> None:
        nonlocal fed
        fed += len(piece)
        buffer.budget = 2 * fed  # fail fast on any rescan
        out.extend(splitter.feed(piece))

    give(body)
    remaining = filler
    while remaining >= chunk_size:
        give(chunk)
        remaining -= chunk_size
    give(b"A" * remaining + tail + b"\n")
    assert fed == size + 1
    assert buffer.scanned <= 2 * fed
    assert buffer.scanned >= size  # every byte was looked at
    assert len(out) == 1
    line = out[0]
    assert isinstance(line, bytes)
    assert len(line) == size
    assert line.startswith(body) and line.endswith(b"A" + tail)
    assert line.count(b"A") == filler
    assert splitter.pending == 0


@SETTINGS
@given(lines=st.lists(st.integers(0, 3000), min_size=1, max_size=20),
       chunk=st.integers(1, 700))
def test_scanning_is_linear_for_any_mix_of_lines_and_chunks(lines: list[int], chunk: int) -> None:
    data = b"".join(b"q" * n + b"\n" for n in lines)
    splitter, buffer = counting_splitter(10_000)
    out = feed_chunks(splitter, [data[i : i + chunk] for i in range(0, len(data), chunk)])
    assert out == [b"q" * n for n in lines if n]
    assert buffer.scanned <= 2 * len(data)


def test_the_limit_counts_the_message_not_the_cr_of_a_crlf() -> None:
    for chunks in ([b"12345\r\n"], [b"12345\r", b"\n"], [b"1234", b"5\r", b"\n"]):
        splitter = LineSplitter(5)
        out = [item for chunk in chunks for item in splitter.feed(chunk)]
        assert out == [b"12345"], chunks
    splitter = LineSplitter(5)
    assert splitter.feed(b"123456\r\n") == [OVERSIZED]
    assert splitter.feed(b"123456") == [OVERSIZED]
