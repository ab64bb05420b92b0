"""The two HTTP values the authorization pieces trade in, and the URL and form helpers.

Theory of operation
-------------------
The client flow never performs a request: it hands out an :class:`HTTPRequest` (method, URL,
headers, body) and takes back an :class:`HTTPResponse` (status, headers, body bytes). Any
HTTP client can carry them; the adapters do it on their runtimes. Headers are a tuple of
``(name, value)`` pairs so that repeated headers (two ``WWW-Authenticate`` lines) survive;
lookups are case-insensitive (RFC 9110 §5.1).

``max_response_bytes`` on a request tells the carrier how much body the flow is prepared to
read; a carrier should stop reading there, and the flow refuses a longer body anyway.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from urllib.parse import urlencode, urlsplit, urlunsplit

import attrs

#: How much of a metadata, registration or token response the flow reads. These documents
#: are a few kilobytes; 1 MiB is far beyond any real one and small enough that a hostile
#: server cannot make the client buffer without bound.
DEFAULT_MAX_RESPONSE_BYTES = 1 << 20


@attrs.frozen
class HTTPRequest:
    """A request the flow wants made; answer it with :class:`HTTPResponse`."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    def header(self, name: str) -> str | None:
        return _lookup(self.headers, name)


@attrs.frozen
class HTTPResponse:
    """What came back: status, headers as pairs, and the body bytes."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    def header(self, name: str) -> str | None:
        return _lookup(self.headers, name)

    def header_values(self, name: str) -> list[str]:
        lowered = name.lower()
        return [value for key, value in self.headers if key.lower() == lowered]


def _lookup(headers: Iterable[tuple[str, str]], name: str) -> str | None:
    lowered = name.lower()
    for key, value in headers:
        if key.lower() == lowered:
            return value
    return None


def form_body(fields: Iterable[tuple[str, str]]) -> bytes:
    """``application/x-www-form-urlencoded`` (OAuth 2.1 §3.2.2 token requests)."""
    return urlencode(list(fields)).encode("ascii")


def basic_credentials(client_id: str, client_secret: str) -> str:
    """``client_secret_basic``: RFC 6749 §2.3.1 form-encodes both parts before Base64."""
    raw = f"{urlencode({'': client_id})[1:]}:{urlencode({'': client_secret})[1:]}"
    return "Basic " + base64.b64encode(raw.encode("utf-8")).decode("ascii")


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 7636 Appendix A)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def is_http_url(url: object) -> bool:
    """An absolute ``http``/``https`` URL with a host and no fragment."""
    if not isinstance(url, str) or not url:
        return False
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.fragment


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP server (MCP 2025-11-25 "Canonical Server URI", RFC 8707
    §2): lowercase scheme and host, no fragment or query, and no trailing slash (the spec's
    SHOULD, "for better interoperability")."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, "", ""))


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))
