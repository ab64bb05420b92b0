"""``WWW-Authenticate``: parsing a challenge (client side) and building one (server side).

Theory of operation
-------------------
RFC 9110 §11.6.1 lets one header line carry several challenges, each a scheme followed by
either a token68 or comma-separated ``name=value`` parameters whose value is a token or a
quoted-string. :func:`parse_challenges` is a small tokenizer for exactly that grammar; it
never raises on malformed input -- what it cannot read it skips, so a broken header degrades
to "no parameters" and the flow falls back to well-known discovery (MCP 2025-11-25
"Protected Resource Metadata Discovery Requirements").

:func:`bearer_challenge` builds the header an MCP server sends: RFC 6750 §3 parameters plus
RFC 9728 §5.1 ``resource_metadata``. The values RFC 6750 §3 allows for ``scope``, ``error``
and ``error_description`` are a restricted character set; :data:`PARAM_CHARSETS` holds them
and the builder refuses a value outside its set instead of emitting a header a client may
misread.
"""

from __future__ import annotations

import re

import attrs

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_SPACE = " \t"

#: RFC 6750 §3: characters allowed in each parameter value (as regular expressions).
PARAM_CHARSETS: dict[str, re.Pattern[str]] = {
    # scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), space-separated (RFC 6749 §3.3)
    "scope": re.compile(r"[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*"),
    # error = 1*( %x20-21 / %x23-5B / %x5D-7E )
    "error": re.compile(r"[\x20\x21\x23-\x5B\x5D-\x7E]+"),
    "error_description": re.compile(r"[\x20\x21\x23-\x5B\x5D-\x7E]+"),
    # RFC 6750 §3 realm and RFC 9728 §5.1 resource_metadata: a quoted-string; refuse only
    # what would break the quoting.
    "realm": re.compile(r"[^\"\\\x00-\x1f\x7f]*"),
    "resource_metadata": re.compile(r"[^\"\\\x00-\x20\x7f]+"),
}


@attrs.frozen
class Challenge:
    """One challenge: its scheme (lowercased) and its parameters (names lowercased)."""

    scheme: str
    params: dict[str, str] = attrs.field(factory=dict)
    token68: str | None = None

    @property
    def scopes(self) -> tuple[str, ...]:
        return tuple(self.params.get("scope", "").split())


def parse_challenges(value: str) -> list[Challenge]:
    """Every challenge in one ``WWW-Authenticate`` value; malformed parts are skipped."""
    out: list[Challenge] = []
    i, n = 0, len(value)
    current: Challenge | None = None

    def skip_ws(j: int) -> int:
        while j < n and value[j] in _SPACE:
            j += 1
        return j

    def next_comma(j: int) -> int:
        k = value.find(",", j)
        return n if k < 0 else k + 1

    while i < n:
        i = skip_ws(i)
        if i < n and value[i] == ",":
            i += 1
            continue
        m = _TOKEN.match(value, i)
        if not m:
            i = next_comma(i)  # not a token where one must start
            continue
        name, j = m.group(0), skip_ws(m.end())
        if j < n and value[j] == "=":
            if current is None:
                i = next_comma(j)  # a parameter before any scheme
                continue
            # auth-param = token BWS "=" BWS ( token / quoted-string )
            j = skip_ws(j + 1)
            if j < n and value[j] == '"':
                text, j = _quoted(value, j)
                if text is None:
                    break  # unterminated quoted-string: nothing after it can be trusted
            else:
                vm = _TOKEN.match(value, j)
                if vm is None:
                    i = next_comma(j)
                    continue
                text, j = vm.group(0), vm.end()
            current.params.setdefault(name.lower(), text)
            i = j
            continue
        # A new challenge: the scheme, then perhaps a token68 (only if it ends the challenge).
        current = Challenge(name.lower())
        out.append(current)
        i = j
        t = _TOKEN68.match(value, i)
        if t is not None:
            after = skip_ws(t.end())
            if after == n or value[after] == ",":
                object.__setattr__(current, "token68", t.group(0))
                i = after
    return out


def _quoted(value: str, i: int) -> tuple[str | None, int]:
    """A quoted-string starting at ``value[i] == '"'`` (RFC 9110 §5.6.4)."""
    out: list[str] = []
    j = i + 1
    while j < len(value):
        c = value[j]
        if c == "\\" and j + 1 < len(value):
            out.append(value[j + 1])
            j += 2
            continue
        if c == '"':
            return "".join(out), j + 1
        out.append(c)
        j += 1
    return None, j


def bearer_params(values: list[str]) -> dict[str, str] | None:
    """The parameters of the first ``Bearer`` challenge among header values, if any."""
    for value in values:
        for challenge in parse_challenges(value):
            if challenge.scheme == "bearer":
                return challenge.params
    return None


def scheme_params(values: list[str], scheme: str) -> dict[str, str] | None:
    """The parameters of the first challenge of ``scheme`` (lowercase) among header values."""
    for value in values:
        for challenge in parse_challenges(value):
            if challenge.scheme == scheme:
                return challenge.params
    return None


def auth_params(values: list[str]) -> dict[str, str] | None:
    """The parameters of the first ``Bearer`` or ``DPoP`` challenge (RFC 6750 §3, RFC 9449
    §7.1): where a client reads ``resource_metadata``, ``scope`` and ``error``."""
    for value in values:
        for challenge in parse_challenges(value):
            if challenge.scheme in ("bearer", "dpop"):
                return challenge.params
    return None


def bearer_challenge(
    *,
    resource_metadata: str | None = None,
    scope: str | None = None,
    error: str | None = None,
    error_description: str | None = None,
    realm: str | None = None,
) -> str:
    """A ``WWW-Authenticate`` value with the ``Bearer`` scheme (RFC 6750 §3, RFC 9728 §5.1).

    A 401 for a request without a token carries no ``error`` (RFC 6750 §3.1); a 401 for a
    bad token carries ``error="invalid_token"``; a 403 carries ``error="insufficient_scope"``
    and the ``scope`` needed (MCP 2025-11-25 "Runtime Insufficient Scope Errors").
    """
    pairs = [("realm", realm), ("error", error), ("error_description", error_description),
             ("scope", scope), ("resource_metadata", resource_metadata)]
    parts: list[str] = []
    for name, val in pairs:
        if val is None:
            continue
        if not PARAM_CHARSETS[name].fullmatch(val):
            raise ValueError(f"{name} value {val!r} has characters RFC 6750 §3 does not allow")
        parts.append(f'{name}="{val}"')
    return "Bearer " + ", ".join(parts) if parts else "Bearer"
