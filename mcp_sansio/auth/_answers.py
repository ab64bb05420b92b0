"""What an answer said, in a line: for the errors of a flow that gives up.

Theory of operation
-------------------
When the OAuth client flow stops (a refused token request, too many challenges in a row),
its error names the last answer it got and from which URL: the status and the reason the
peer gave -- the ``WWW-Authenticate`` challenge's ``error``/``error_description`` (RFC 6750
§3), an OAuth error body (OAuth 2.1 §3.2.4), a JSON-RPC error or the body's text. The
reading itself is :func:`mcp_sansio.http._refusal.explain` (bounded, printable), loaded
only when an error is being described.
"""

from __future__ import annotations

from ._http import HTTPResponse


def describe_answer(url: str, response: HTTPResponse) -> str:
    """``HTTP 401 from <url>: invalid_token (...)`` for ``response`` to a request to ``url``."""
    from ..http._refusal import explain

    why = explain(response.headers, response.body).summary()
    where = url.split("?", 1)[0]
    return f"HTTP {response.status} from {where}" + (f": {why}" if why else "")


def oauth_error(response: HTTPResponse, *, described: bool = False) -> str:
    """The ``error`` code of an OAuth error body (OAuth 2.1 §3.2.4), with its
    ``error_description`` when ``described``; ``no OAuth error body`` if unreadable."""
    from ..http._refusal import explain

    why = explain((), response.body)
    if why.error is None:
        return "no OAuth error body" + (f" ({why.summary()})" if described and why.summary()
                                         else "")
    if described and why.error_description:
        return f"{why.error} ({why.error_description})"
    return why.error
