"""Frozen records without attrs at import: the small protocol the core's tables and events share.

Theory of operation
-------------------
The core's value classes (the method and feature tables' rows, the events, the handshake's
answers) behave as attrs frozen classes do -- keyword-only, slotted, compared and hashed by
their fields in order, shown as ``Name(field=value, ...)``, refusing assignment with
``attrs.exceptions.FrozenInstanceError`` -- but are written as plain classes: creating attrs
classes at import, and importing attrs at all, was a large share of a stdio server's cold
start. Each class lists its fields once (its ``__slots__``) and fills them in ``__init__``
with ``object.__setattr__``; the functions here give the rest from that list. attrs is
imported only on the error path and by whoever asks ``attrs.fields`` of an event
(``_events``).
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["field_values", "frozen_repr", "refuse_change"]


def field_values(obj: object, fields: tuple[str, ...]) -> tuple[Any, ...]:
    """The values of ``fields`` on ``obj``, in order."""
    return tuple([getattr(obj, name) for name in fields])


def frozen_repr(obj: object, fields: tuple[str, ...]) -> str:
    """``Name(field=value, ...)``, as attrs writes it (a local class without its
    ``<locals>`` path)."""
    inner = ", ".join([f"{name}={getattr(obj, name)!r}" for name in fields])
    return f"{type(obj).__qualname__.rsplit('>.', 1)[-1]}({inner})"


def refuse_change() -> NoReturn:
    """Refuse an assignment to (or deletion of) a field of a frozen record."""
    from attrs.exceptions import FrozenInstanceError

    raise FrozenInstanceError
