"""Helpers the generated modules (``v2024_11_05`` ... ``v2026_07_28``) are written against.

Theory of operation
-------------------
Every model class is an attrs class (frozen, keyword-only, slotted) whose fields are named
in snake_case. The JSON key of a field follows from its name by one rule, :func:`wire_name`:
``mime_type`` is ``mimeType``, ``meta`` is ``_meta``, ``schema`` is ``$schema``. The few keys
the rule cannot produce (``io.modelcontextprotocol/protocolVersion`` ...) are spelled out in
the field's ``metadata["wire"]``, so the converter never guesses.

The schemas' numeric and size constraints become the small validators below. They are
objects rather than closures so that the hypothesis strategies (``_strategies``) can read the
bounds back and draw only values the schema accepts.
"""

from __future__ import annotations

import re
from typing import Any, Final

import attrs

__all__ = ["EXTRA", "FieldValueError", "MaxItems", "Range", "wire_name"]

#: The field that keeps the keys a revision does not define (forward compatibility).
EXTRA: Final = "extra"

#: Field names whose JSON key is not their camelCase spelling.
_SPECIAL: Final = {"meta": "_meta", "schema": "$schema"}

_UPPER_AFTER_UNDERSCORE = re.compile(r"_([a-z0-9])")


def wire_name(field: attrs.Attribute[Any]) -> str:
    """The JSON key of a model field: ``metadata["wire"]`` when given, else the camelCase
    spelling of the field's name (``_meta`` and ``$schema`` for ``meta`` and ``schema``)."""
    wire = field.metadata.get("wire")
    if wire is not None:
        return str(wire)
    special = _SPECIAL.get(field.name)
    if special is not None:
        return special
    return _UPPER_AFTER_UNDERSCORE.sub(lambda m: m.group(1).upper(), field.name)


class FieldValueError(ValueError):
    """A field's value is outside what the schema allows. ``field`` is its JSON key."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@attrs.frozen
class Range:
    """attrs validator: a number within ``[minimum, maximum]`` (either bound optional).
    ``None`` passes: optional fields use ``None`` for "absent"."""

    minimum: float | None = None
    maximum: float | None = None

    def __call__(self, instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None:
            return
        if self.minimum is not None and value < self.minimum:
            raise FieldValueError(wire_name(attribute),
                                  f"must be at least {self.minimum:g}, got {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise FieldValueError(wire_name(attribute),
                                  f"must be at most {self.maximum:g}, got {value!r}")


@attrs.frozen
class MaxItems:
    """attrs validator: a list of at most ``limit`` items (``None`` passes)."""

    limit: int

    def __call__(self, instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None and len(value) > self.limit:
            raise FieldValueError(wire_name(attribute),
                                  f"must have at most {self.limit} items, got {len(value)}")
