"""The official schemas, per revision: definitions, method lookups and validation.

Theory of operation
-------------------
A :class:`Schemas` holds, for each revision, the schema's definitions with every reference
in ``#/$defs/Name`` form. By default they come from the distilled copy generated into
:mod:`._schema_data` (annotations dropped, validation keywords intact); a caller that has
the official ``schema.json`` documents at hand may pass them instead (the I/O of reading
them is the caller's, e.g. :func:`mcp_sansio.adapters.testing_stdio.load_schema_dir`).

Method lookups come from the schema's own unions (``ClientRequest``, ``ServerRequest``,
``ClientNotification``, ``ServerNotification``): each member's ``method`` constant names
the definition. The result definition of a request is named after it (``CallToolRequest``
-> ``CallToolResult``), or is ``EmptyResult`` when the schema has no such definition
(``ping``, ``logging/setLevel``, ``resources/subscribe``...).

Validation uses ``jsonschema`` (a test dependency, imported on first use) with the
revision's own dialect (draft-07 up to 2025-06-18, 2020-12 afterwards).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any

from .._versions import KNOWN_REVISIONS
from . import _schema_data

__all__ = ["Schemas", "normalize_refs"]

_UNIONS = (
    ("ClientRequest", "request"),
    ("ServerRequest", "request"),
    ("ClientNotification", "notification"),
    ("ServerNotification", "notification"),
)


def normalize_refs(node: Any) -> Any:
    """``node`` with ``#/definitions/X`` references rewritten to ``#/$defs/X``."""
    if isinstance(node, dict):
        return {
            key: (value.replace("#/definitions/", "#/$defs/")
                  if key == "$ref" and isinstance(value, str) else normalize_refs(value))
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [normalize_refs(item) for item in node]
    return node


class Schemas:
    """Every revision's schema definitions, with lookups by method and validation.

    :param documents: revision -> an official ``schema.json`` document, already loaded.
        ``None`` (the default) uses the copy distilled into the package, which validates
        exactly like the official files.
    """

    def __init__(self, documents: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self._defs: dict[str, dict[str, Any]] = {}
        self._dialects: dict[str, str] = {}
        if documents is None:
            self._bundled = True
            self._dialects = dict(_schema_data.DIALECTS)
        else:
            self._bundled = False
            for revision, document in documents.items():
                defs = document.get("$defs", document.get("definitions"))
                if not isinstance(defs, Mapping):
                    raise ValueError(f"the {revision} schema has no $defs or definitions")
                self._defs[revision] = normalize_refs(dict(defs))
                self._dialects[revision] = str(document.get("$schema", ""))
        self._validators: dict[tuple[str, str], Any] = {}
        self._method_index: dict[str, dict[tuple[str, str], str]] = {}

    @functools.cached_property
    def revisions(self) -> tuple[str, ...]:
        """The revisions these schemas describe, oldest first."""
        known = [r for r in KNOWN_REVISIONS if r in self._dialects]
        return tuple(known + sorted(r for r in self._dialects if r not in known))

    def definitions(self, revision: str) -> dict[str, Any]:
        """``{name: schema}`` for ``revision`` (references in ``#/$defs/`` form)."""
        defs = self._defs.get(revision)
        if defs is None:
            if not self._bundled or revision not in _schema_data.REVISIONS:
                raise KeyError(f"no schema for revision {revision!r}")
            defs = {name: json.loads(_schema_data.POOL[index])
                    for name, index in _schema_data.REVISIONS[revision].items()}
            self._defs[revision] = defs
        return defs

    def has(self, revision: str, name: str) -> bool:
        return name in self.definitions(revision)

    # -- lookups by method ----------------------------------------------------------------

    def _methods(self, revision: str) -> dict[tuple[str, str], str]:
        found = self._method_index.get(revision)
        if found is None:
            defs = self.definitions(revision)
            found = {}
            for union, kind in _UNIONS:
                for member in defs.get(union, {}).get("anyOf", []):
                    name = member.get("$ref", "").rsplit("/", 1)[-1]
                    method = defs.get(name, {}).get("properties", {}).get("method", {})
                    if isinstance(method.get("const"), str):
                        found[kind, method["const"]] = name
            self._method_index[revision] = found
        return found

    def request_definition(self, revision: str, method: str) -> str | None:
        """The definition of the ``method`` request (``CallToolRequest``), or None."""
        return self._methods(revision).get(("request", method))

    def notification_definition(self, revision: str, method: str) -> str | None:
        """The definition of the ``method`` notification, or None."""
        return self._methods(revision).get(("notification", method))

    def result_definition(self, revision: str, method: str) -> str | None:
        """The definition of the result that answers ``method``, or None if the revision
        has no such request."""
        request = self.request_definition(revision, method)
        if request is None:
            return None
        if request.endswith("Request") and self.has(revision, request[:-7] + "Result"):
            return request[:-7] + "Result"
        return "EmptyResult" if self.has(revision, "EmptyResult") else "Result"

    def params_definition(self, revision: str, kind: str, method: str) -> Any:
        """The schema of the ``params`` member of a request or notification (``None`` if
        the message has no ``params`` property)."""
        name = (self.request_definition(revision, method) if kind == "request"
                else self.notification_definition(revision, method))
        if name is None:
            raise KeyError(f"{method} is not a {kind} in {revision}")
        return self.definitions(revision)[name].get("properties", {}).get("params")

    def params_required(self, revision: str, kind: str, method: str) -> bool:
        name = (self.request_definition(revision, method) if kind == "request"
                else self.notification_definition(revision, method))
        if name is None:
            return False
        return "params" in self.definitions(revision)[name].get("required", [])

    def resolve(self, revision: str, node: Any) -> Any:
        """Follow ``$ref`` (and merge ``allOf``) until a schema with content is reached."""
        defs = self.definitions(revision)
        seen = 0
        while isinstance(node, Mapping) and "$ref" in node and seen < 64:
            node = defs[str(node["$ref"]).rsplit("/", 1)[-1]]
            seen += 1
        return node

    # -- validation --------------------------------------------------------------------------

    def _validator(self, revision: str, name: str) -> Any:
        key = (revision, name)
        validator = self._validators.get(key)
        if validator is None:
            import jsonschema  # type: ignore[import-untyped]  # a test dependency

            wrapper = {"$schema": self._dialects[revision],
                       "$defs": self.definitions(revision), "$ref": f"#/$defs/{name}"}
            cls = jsonschema.validators.validator_for(wrapper)
            validator = cls(wrapper)
            self._validators[key] = validator
        return validator

    def errors(self, revision: str, name: str, instance: Any, *, limit: int = 3) -> list[str]:
        """What is wrong with ``instance`` as a ``name`` of ``revision`` (empty: valid)."""
        if not self.has(revision, name):
            raise KeyError(f"{revision} defines no {name}")
        found: Iterable[Any] = self._validator(revision, name).iter_errors(instance)
        out: list[str] = []
        for error in found:
            where = "/".join(str(p) for p in error.absolute_path) or "(top)"
            out.append(f"{where}: {_short(error.message)}")
            if len(out) >= limit:
                break
        return out

    def is_valid(self, revision: str, name: str, instance: Any) -> bool:
        return not self.errors(revision, name, instance, limit=1)


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@functools.cache
def bundled() -> Schemas:
    """The shared instance over the distilled schemas."""
    return Schemas()
