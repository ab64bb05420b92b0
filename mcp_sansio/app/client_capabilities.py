"""What a high-level client declares it offers, checked once and shaped per revision.

Theory of operation
-------------------
A client's capabilities come from two places: the callbacks it was given (an
``elicitation`` callback means it can answer ``elicitation/create``) and an explicit
``capabilities=`` mapping for what no callback implies (URL-mode elicitation, sampling with
tools, roots list-changed notifications, extensions). :func:`declare` merges the two and
checks the result against :data:`CLIENT_CAPABILITIES`, a table of every capability path a
published revision defines, with the revisions that define it (from the official schemas'
``ClientCapabilities``):

* a key no revision defines is **refused** (``ValueError``) when the client is built: it is
  a typo or belongs under ``experimental`` / ``extensions``;
* a capability whose requests no callback would answer is **refused** as well: declaring it
  would invite requests the client can only fail;
* a capability the revision in force does not define is **dropped** by
  :func:`for_revision` when it is sent. The client does not choose the revision (the server
  does), and a declaration an older revision cannot express is simply not made there: a
  client offering URL-mode elicitation still talks to a 2025-06-18 server, without it.

Nothing here does I/O or keeps state: the client logic calls :func:`for_revision` before
its first message (with the revision that message offers) and again once the revision is
negotiated, and stores the result on the connection, whose gating then uses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_sansio import KNOWN_REVISIONS

__all__ = ["CLIENT_CAPABILITIES", "NEEDS_CALLBACK", "declare", "for_revision"]

#: Every client capability path a published revision defines: path -> (first revision,
#: last revision or None for "still defined"). Source: ``ClientCapabilities`` in the
#: official schema of each revision (``schema/<rev>/schema.json``).
CLIENT_CAPABILITIES: dict[str, tuple[str, str | None]] = {
    # Free-form in every revision: the contents are the application's business.
    "experimental": ("2024-11-05", None),
    "roots": ("2024-11-05", None),
    # 2026-07-28 schema: ``roots`` has no properties (a stateless server learns of changes
    # through subscriptions/listen, not a client notification), so the flag is dropped.
    "roots.listChanged": ("2024-11-05", "2025-11-25"),
    "sampling": ("2024-11-05", None),
    # 2025-11-25 client/sampling: "context" (includeContext) and "tools" (tool use).
    "sampling.context": ("2025-11-25", None),
    "sampling.tools": ("2025-11-25", None),
    # 2025-06-18 added elicitation; 2025-11-25 split it into form and URL modes (an empty
    # object still means form only).
    "elicitation": ("2025-06-18", None),
    "elicitation.form": ("2025-11-25", None),
    "elicitation.url": ("2025-11-25", None),
    # 2026-07-28 basic/extensions: keys are extension ids, values their settings.
    "extensions": ("2026-07-28", None),
}

#: Top-level capabilities whose requests a client callback answers: declaring one without
#: its callback is refused (the key is the capability, the value the callback's name).
NEEDS_CALLBACK: dict[str, str] = {
    "sampling": "sampling", "elicitation": "elicitation", "roots": "roots",
}

#: Capabilities whose contents are free-form (no sub-path is checked).
_FREE_FORM = frozenset({"experimental", "extensions"})

#: Capabilities a revision defines that this client refuses to declare, with the reason.
#: 2025-11-25 basic/utilities/tasks: a client's ``tasks`` capability says it runs the
#: server's requests as tasks, which this client does not.
REFUSED: dict[str, str] = {
    "tasks": "this client does not run the server's requests as tasks (the client side "
             "of 2025-11-25 tasks)",
}


def _defined_in(path: str, revision: str) -> bool:
    first, last = CLIENT_CAPABILITIES[path]
    index = KNOWN_REVISIONS.index
    if revision not in KNOWN_REVISIONS:
        return True  # a revision newer than this table: keep, the server ignores extras
    return index(first) <= index(revision) and (last is None or index(revision) <= index(last))


def declare(implied: Mapping[str, Any], declared: Mapping[str, Any] | None,
            callbacks: Mapping[str, object]) -> dict[str, Any]:
    """The client's capabilities: ``implied`` (by its callbacks) merged with ``declared``
    (one level deep: ``{"elicitation": {"url": {}}}`` adds URL mode to the form mode an
    elicitation callback implies), checked against the table.

    :raises ValueError: an unknown or refused capability, a malformed one, or one whose
        callback is missing.
    """
    merged: dict[str, Any] = {key: dict(value) if isinstance(value, dict) else value
                              for key, value in implied.items()}
    for key, value in (declared or {}).items():
        if not isinstance(key, str):
            raise ValueError(f"capability names are strings, not {key!r}")
        if key in REFUSED:
            raise ValueError(f"cannot declare {key!r}: {REFUSED[key]}")
        if key not in CLIENT_CAPABILITIES:
            raise ValueError(
                f"no MCP revision defines the client capability {key!r} (put your own "
                "under 'experimental', or an extension under 'extensions')")
        if not isinstance(value, dict):
            raise ValueError(f"the {key!r} capability is an object, not {value!r}")
        if key not in _FREE_FORM:
            for sub in value:
                if f"{key}.{sub}" not in CLIENT_CAPABILITIES:
                    raise ValueError(f"no MCP revision defines {key}.{sub}")
        if key == "roots" and not isinstance(value.get("listChanged", False), bool):
            raise ValueError("roots.listChanged is a boolean")
        base = merged.get(key)
        merged[key] = {**base, **value} if isinstance(base, dict) else dict(value)
    for key, callback in NEEDS_CALLBACK.items():
        if key in merged and callbacks.get(callback) is None:
            raise ValueError(f"declaring {key!r} needs the {callback}= callback to answer it")
    return merged


def for_revision(capabilities: Mapping[str, Any], revision: str) -> dict[str, Any]:
    """``capabilities`` as ``revision`` can express them: paths it does not define are
    left out (see the module docstring for why dropped, not refused)."""
    shaped: dict[str, Any] = {}
    for key, value in capabilities.items():
        if key in CLIENT_CAPABILITIES and not _defined_in(key, revision):
            continue
        if isinstance(value, dict) and key in CLIENT_CAPABILITIES and key not in _FREE_FORM:
            shaped[key] = {sub: item for sub, item in value.items()
                           if f"{key}.{sub}" not in CLIENT_CAPABILITIES
                           or _defined_in(f"{key}.{sub}", revision)}
        else:
            shaped[key] = value
    return shaped
