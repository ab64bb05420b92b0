"""The server wires to choose from: which HTTP/1.1 parser cuts a connection into requests.

Theory of operation
-------------------
:class:`~mcp_sansio.http.HTTPServer` takes ``wire=`` by name, a key of :data:`WIRES`, and
builds each connection's wire through :func:`wire_factory`. ``"h11"`` is the reference (the
core's own dependency) and the fallback; ``"httptools"`` (llhttp) is the fast path behind the
same exchange seam, with the same limits and answers (docs/wires.rst), and the default where
its parser is installed (the ``fast`` extra): :func:`default_wire`. A name the
table does not know is a ``ValueError``; a known wire whose parser is not installed is a
:class:`~mcp_sansio.http._wire_httptools.MissingParser` (an ``ImportError``) saying what to
install -- both when the server is built, not at the first connection. The httptools module
is imported only then, so a server on h11 never pays for it.

:class:`Wire` is the seam itself: what the server asks of every wire -- the h11 one, the
llhttp one and the :class:`~mcp_sansio.http._exchange_wire.ExchangeWire` a parser of its own
feeds with exchange events -- as a :class:`typing.Protocol` the type checker holds them to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ._wire import HTTPRequest

__all__ = ["WIRES", "Wire", "default_wire", "wire_factory"]


class Wire(Protocol):
    """The server's side of one connection, whichever parser cuts it into requests: whole
    requests in, responses out (whole, or head, body pieces and end), bytes to write."""

    #: True once the connection is over: close it after writing what is left.
    closed: bool

    def receive_data(self, data: bytes) -> None:
        """Bytes read from the socket (``b""``: end of file)."""

    def next_request(self) -> HTTPRequest | None:
        """The next whole request, or None until one is complete (or while the previous
        one's response is not finished)."""

    def respond(self, status: int, headers: Iterable[tuple[str, str]] = (),
                body: bytes = b"") -> None:
        """Answer the current request with one whole response."""

    def start_response(self, status: int, headers: Iterable[tuple[str, str]] = ()) -> None:
        """Start a streamed response (an SSE stream): its head."""

    def send_body(self, data: bytes) -> None:
        """A piece of the streamed response's body."""

    def end_response(self) -> None:
        """End the streamed response (keep-alive: the next request may follow)."""

    def abort(self) -> None:
        """The connection ends now: nothing more is read or written after what is queued."""

    def fail(self, status: int = 500, detail: str = "internal server error") -> None:
        """End the connection after an error: ``status`` when no response had started."""

    def data_to_send(self) -> bytes:
        """What to write now."""

    @property
    def streaming(self) -> bool:
        """Whether a streamed response is open."""

#: Wire name -> (the module and class that implement it, the extra that installs its
#: parser: None when the core's dependencies suffice).
WIRES: dict[str, tuple[str, str | None]] = {
    "h11": ("mcp_sansio.http._wire:ServerWire", None),
    "httptools": ("mcp_sansio.http._wire_httptools:HttptoolsWire", "fast"),
}


def default_wire() -> str:
    """The wire of a server that names none: ``"httptools"`` when its parser can be imported
    (the ``fast`` extra installs it), else ``"h11"``. Asked when a server's config is built,
    so a stdio process never imports a parser."""
    from ._wire_httptools import load_httptools

    try:
        load_httptools()
    except ImportError:
        return "h11"
    return "httptools"


def wire_factory(name: str) -> Callable[..., Wire] | None:
    """The class that makes the server wire called ``name``, None for the h11 default
    (:class:`~mcp_sansio.http.ServerChannel` builds that one itself). Checks here that the
    parser can be imported, so that a missing extra is said when the server is built."""
    if name not in WIRES:
        raise ValueError(f"unknown wire {name!r}: one of {', '.join(sorted(WIRES))}")
    if name == "h11":
        return None
    if name == "httptools":
        from ._wire_httptools import HttptoolsWire, load_httptools

        load_httptools()
        return HttptoolsWire
    raise AssertionError(f"WIRES lists {name!r} and wire_factory does not build it")
