"""How a connection learns its revision: the ``initialize`` handshake, discovery, the era probe.

Theory of operation
-------------------
Three ways settle what a connection speaks, each a pure function of what was said and what we
support (the connection applies the outcome to its state and queues the messages):

* the handshake era's ``initialize`` (``basic/lifecycle.mdx``): the server answers with
  :func:`answer_initialize`; the client judges the result with :func:`read_initialize_result`;
* the stateless era's ``server/discover`` (``server/discover.mdx``): the server's answer is
  built from configuration by :func:`discover_result`;
* a dual-era client's era probe (``2026-07-28/basic/versioning.mdx``): ``server/discover`` sent
  with the stateless ``_meta`` before anything else; :func:`judge_probe_answer` says whether
  the server speaks the stateless era (and which common revision), or why to fall back to
  ``initialize``.

Which role does what is decided by the method table (only a client sends ``initialize``, only
a server receives it) and the lifecycle table (only a client enters ``PROBING``), so nothing
here asks for the role.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._events import CloseReason
from ._frozen import field_values, frozen_repr, refuse_change
from ._stateless import META_SERVER_INFO
from ._versions import Era, judge_probe, negotiate_server_version, newest

__all__ = [
    "InitializeAnswer",
    "ProbeVerdict",
    "answer_initialize",
    "discover_result",
    "implementation",
    "initialize_params",
    "judge_probe_answer",
    "read_initialize_result",
]


def implementation(value: object) -> bool:
    """Whether ``value`` is an ``Implementation`` object (``name`` and ``version`` strings)."""
    return (
        type(value) is dict
        and isinstance(value.get("name"), str)
        and isinstance(value.get("version"), str)
    )


# -- the handshake era -------------------------------------------------------------------------


def initialize_params(
    versions: tuple[str, ...], capabilities: Mapping[str, Any], info: Mapping[str, Any]
) -> dict[str, Any]:
    """The client's ``initialize`` params, offering our newest handshake-era revision."""
    return {"protocolVersion": newest(versions), "capabilities": capabilities,
            "clientInfo": info}


_INITIALIZEANSWER_FIELDS = ("result", "version", "peer_capabilities", "peer_info")


class InitializeAnswer:
    """What the server answers ``initialize`` with, and what it learnt of the client."""

    __slots__ = ("peer_capabilities", "peer_info", "result", "version")

    result: dict[str, Any]
    version: str
    peer_capabilities: dict[str, Any]
    peer_info: dict[str, Any]

    def __init__(
        self, result: dict[str, Any], version: str, peer_capabilities: dict[str, Any],
        peer_info: dict[str, Any]
    ) -> None:
        object.__setattr__(self, "result", result)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "peer_capabilities", peer_capabilities)
        object.__setattr__(self, "peer_info", peer_info)

    def __repr__(self) -> str:
        return frozen_repr(self, _INITIALIZEANSWER_FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (field_values(self, _INITIALIZEANSWER_FIELDS)
                == field_values(other, _INITIALIZEANSWER_FIELDS))

    def __hash__(self) -> int:
        return hash(field_values(self, _INITIALIZEANSWER_FIELDS))

    def __setattr__(self, name: str, value: Any) -> None:
        refuse_change()

    def __delattr__(self, name: str) -> None:
        refuse_change()


def answer_initialize(
    params: Mapping[str, Any], versions: tuple[str, ...], capabilities: dict[str, Any],
    info: dict[str, Any], instructions: str | None,
) -> InitializeAnswer | None:
    """The server's ``InitializeResult`` (lifecycle.mdx, "Version Negotiation"), or None when
    the params are not valid (answered -32602 by the caller)."""
    peer_capabilities = params.get("capabilities")
    peer_info = params.get("clientInfo")
    requested = params.get("protocolVersion")
    if not isinstance(requested, str) or type(peer_capabilities) is not dict or not (
        implementation(peer_info)
    ):
        return None
    version = negotiate_server_version(requested, versions)
    result: dict[str, Any] = {"protocolVersion": version, "capabilities": capabilities,
                              "serverInfo": info}
    if instructions is not None:
        result["instructions"] = instructions
    return InitializeAnswer(result, version, peer_capabilities, peer_info)  # type: ignore[arg-type]


def read_initialize_result(
    is_result: bool, payload: Mapping[str, Any], versions: tuple[str, ...]
) -> tuple[CloseReason, str] | None:
    """Why the client must close on this answer to ``initialize`` (None: it is valid and its
    version one we speak)."""
    if not is_result:
        return (CloseReason.INITIALIZE_FAILED,
                f"initialize failed: error {payload['code']}: {payload['message']}")
    version = payload.get("protocolVersion")
    instructions = payload.get("instructions")
    if (
        not isinstance(version, str)
        or type(payload.get("capabilities")) is not dict
        or not implementation(payload.get("serverInfo"))
        or (instructions is not None and not isinstance(instructions, str))
    ):
        return (CloseReason.INITIALIZE_FAILED,
                "the InitializeResult is not valid (protocolVersion, capabilities and "
                "serverInfo with name and version are required)")
    if version not in versions:
        # lifecycle.mdx, Version Negotiation: the client SHOULD disconnect.
        return (CloseReason.VERSION_REJECTED,
                f"the server chose protocol version {version!r}; this client supports "
                f"{', '.join(versions)}")
    return None


# -- the stateless era -------------------------------------------------------------------------


def discover_result(
    versions: tuple[str, ...], capabilities: dict[str, Any], info: dict[str, Any],
    instructions: str | None, ttl_ms: int, scope: str,
) -> dict[str, Any]:
    """``server/discover`` answered from configuration (``server/discover.mdx``)."""
    # 2026-07-28 has no core tasks (they became the io.modelcontextprotocol/tasks extension,
    # declared under `extensions`): a 2025-11-25 `tasks` capability is left out.
    if "tasks" in capabilities:
        capabilities = {k: v for k, v in capabilities.items() if k != "tasks"}
    result: dict[str, Any] = {
        "resultType": "complete",
        "supportedVersions": list(versions),
        "capabilities": capabilities,
        "ttlMs": ttl_ms,
        "cacheScope": scope,
        "_meta": {META_SERVER_INFO: info},
    }
    if instructions is not None:
        result["instructions"] = instructions
    return result


_PROBEVERDICT_FIELDS = ("version", "detail")


class ProbeVerdict:
    """The outcome of the era probe: settle in the stateless era at ``version``, or fall
    back (``version`` None) for the reason in ``detail``."""

    __slots__ = ("detail", "version")

    version: str | None
    detail: str

    def __init__(self, version: str | None, detail: str = "") -> None:
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "detail", detail)

    def __repr__(self) -> str:
        return frozen_repr(self, _PROBEVERDICT_FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (field_values(self, _PROBEVERDICT_FIELDS)
                == field_values(other, _PROBEVERDICT_FIELDS))

    def __hash__(self) -> int:
        return hash(field_values(self, _PROBEVERDICT_FIELDS))

    def __setattr__(self, name: str, value: Any) -> None:
        refuse_change()

    def __delattr__(self, name: str) -> None:
        refuse_change()


def judge_probe_answer(
    is_result: bool, payload: Mapping[str, Any], stateless_versions: tuple[str, ...]
) -> ProbeVerdict:
    """Judge the answer to the probe (versioning.mdx, via :func:`~mcp_sansio.judge_probe`):
    a stateless-era answer settles on the newest revision both sides speak."""
    era = judge_probe({"result": payload} if is_result else {"error": payload})
    if era is Era.STATELESS:
        data = payload.get("data")
        offered: object = (
            payload.get("supportedVersions") if is_result
            else data.get("supported") if isinstance(data, dict) else None
        )
        common = [v for v in stateless_versions
                  if not isinstance(offered, list) or v in offered]
        if common:
            return ProbeVerdict(newest(common))
        return ProbeVerdict(None, f"the server speaks the stateless era but none of "
                                  f"{', '.join(stateless_versions)} ({offered!r})")
    detail = (f"error {payload['code']}: {payload['message']}" if not is_result
              else "a result that is not a DiscoverResult")
    return ProbeVerdict(None, f"the server answered server/discover with {detail}")
