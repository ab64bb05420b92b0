"""The hardening rules a request head breaks, judged from the head as another parser hands
it over (an ASGI engine's ``scope``), with the rows of our own wires.

Theory of operation
-------------------
Our HTTP/1.1 wires refuse what RFC 9112 lets a server refuse, each rule one row of a table:
:data:`~mcp_sansio.http._wire.REFUSALS` (the h11 wire's own, beyond h11) and
:data:`~mcp_sansio.http._wire_httptools.CHECKS` (what h11 checks while parsing). A request
parsed by someone else -- uvicorn, hypercorn, granian -- reaches the application as a method,
a target, a version and a list of header fields, after the engine's parser accepted it; each
engine accepts a different part of what ours refuse. :func:`judge_head` applies to that head
every row whose breach the head still shows, in the order our wires apply them, and answers
with the row's status and section: the size and count of the header section, the target's
length, the ``Transfer-Encoding`` list and ``Content-Length`` beside it, ``Host`` missing or
repeated, and then ``413`` from ``Content-Length`` before any of the body is read (so no
``100 Continue`` goes out). What the head no longer shows (obs-fold unfolded, chunk
extensions and trailers consumed, the authority of an absolute-form target dropped) is the
engine's to refuse; docs/deploying.rst lists, per engine, which option does.

A refusal closes the connection after its answer, as on our wires: the bytes that follow a
request whose framing is in doubt cannot be trusted to start the next one.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ._wire import REFUSALS
from ._wire_httptools import CHECKS

__all__ = ["BODY_TOO_LARGE", "HeadRefusal", "head_size", "is_http10", "judge_head"]

#: The row for a body over ``max_body_size``, announced by ``Content-Length`` (the wires
#: answer it from the same field before reading the body; RFC 9110 section 15.5.14).
BODY_TOO_LARGE = "body too large"
_BODY_SECTION = "RFC 9110 section 15.5.14"
#: The most digits a ``Content-Length`` may have (h11's bound, the httptools wire's too).
_MAX_LENGTH_DIGITS = 20
#: How engines name HTTP/1.0 in a scope's ``http_version`` (granian says ``"1"``).
_HTTP10 = frozenset({"1.0", "1"})


def is_http10(http_version: str) -> bool:
    """Whether a scope's ``http_version`` is HTTP/1.0."""
    return http_version in _HTTP10


@attrs.frozen(slots=True)
class HeadRefusal:
    """A rule a head breaks: its status, its name and the section that allows the refusal."""

    status: int
    rule: str
    section: str

    @property
    def detail(self) -> str:
        if self.rule == BODY_TOO_LARGE:
            return f"the body is larger than the server accepts ({self.section})"
        return f"{self.rule} ({self.section})"


def _row(rule: str) -> HeadRefusal:
    status, section = REFUSALS[rule] if rule in REFUSALS else CHECKS[rule]
    return HeadRefusal(status, rule, section)


def head_size(method: str, target: str, version: str,
              fields: Sequence[tuple[bytes, bytes]]) -> int:
    """The size of the head on the wire, as HTTP/1.1 writes it: the request line, each field
    line (``name: value``) and their line ends, and the blank line."""
    size = len(method) + len(target) + len(version) + 5 + 2 + 2  # "M T HTTP/v\r\n" ... "\r\n"
    for name, value in fields:
        size += len(name) + len(value) + 4
    return size


def judge_head(method: str, target: str, http_version: str,
               fields: Sequence[tuple[bytes, bytes]], *, max_header_size: int,
               max_header_count: int, max_target_length: int,
               max_body_size: int) -> HeadRefusal | None:
    """The first rule the head breaks (None: none). ``fields``: the header fields as
    ``(name, value)`` bytes, names in any case; ``http_version``: ``"1.0"``, ``"1.1"``,
    ``"2"``... (the framing rows apply to HTTP/1.x only: HTTP/2 and 3 frame bodies
    themselves and carry no ``Transfer-Encoding``)."""
    if len(target) > max_target_length:
        return _row("request-target too long")
    http1 = http_version.startswith("1")
    # One pass over the fields: the size, the last transfer coding, and the first field
    # that breaks a field-by-field rule; judged after it in the order our wires apply them:
    # the size, the raw scan's final coding, then h11's own checks field by field (the
    # first field that breaks one decides), then ours.
    size = len(method) + len(target) + len(http_version) + 5 + 2 + 2  # (as head_size)
    final_coding: bytes | None = None
    broken: str | None = None
    length: bytes | None = None
    coded = False
    hosts = 0
    for name, value in fields:
        size += len(name) + len(value) + 4
        key = name.lower()
        if key == b"content-length":
            if broken is None:
                digits = value.strip()
                if (not digits.isdigit() or len(digits) > _MAX_LENGTH_DIGITS
                        or length not in (None, digits)):
                    broken = "invalid Content-Length"
                length = digits
        elif key == b"transfer-encoding":
            final_coding = value.rsplit(b",", 1)[-1].strip().lower()
            if http1 and broken is None:
                if coded or value.strip().lower() != b"chunked":
                    broken = "a transfer coding other than chunked"
                coded = True
        elif key == b"host" and value.strip():
            # (Empty counts as missing: an engine that finds no Host may hand over an
            # empty one, and an MCP endpoint has an authority for its Host to name.)
            hosts += 1
    if size > max_header_size:
        return _row("header section too large")
    if http1 and final_coding is not None and final_coding != b"chunked":
        return _row("chunked is not the final transfer coding")
    if broken is not None:
        return _row(broken)
    http10 = is_http10(http_version)
    if http1 and hosts > 1:
        return _row("more than one Host field")
    if http1 and hosts == 0 and not http10:
        return _row("missing Host in an HTTP/1.1 request")
    if len(fields) > max_header_count:
        return _row("too many header fields")
    if coded:
        if length is not None:
            return _row("both Transfer-Encoding and Content-Length")
        if http10:
            return _row("Transfer-Encoding in an HTTP/1.0 request")
    if length is not None and int(length) > max_body_size:
        return HeadRefusal(413, BODY_TOO_LARGE, _BODY_SECTION)
    return None
