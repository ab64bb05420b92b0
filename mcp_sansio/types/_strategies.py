"""Hypothesis strategies for the model classes of ``mcp_sansio.types``.

Theory of operation
-------------------
A strategy is derived from the type alone: an attrs model class becomes ``st.builds`` over its
fields, each field's strategy coming from its annotation (``Literal`` -> its values,
``list[T]`` -> short lists of ``T``, a union -> one of its members, ``Any`` -> a JSON value).
Optional fields are ``None`` (absent) or a value; ``extra`` is usually empty and sometimes
holds keys no revision defines (``x-...``), to exercise forward compatibility. The schema's
bounds come from the fields' validators (``_base.Range``, ``_base.MaxItems``), so every value
drawn validates against the official schema of its revision -- the test suite checks that.

``Any`` draws from the JSON values every revision accepts wherever a value is free: strings,
integers, booleans, and arrays and objects of them. (2026-07-28's ``JSONValue`` admits no
``null`` and no fractional number, so neither is drawn.)

Hypothesis is a test dependency: it is imported when a strategy is first asked for, never by
``mcp_sansio.types`` itself.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

import attrs

from ._base import EXTRA, MaxItems, Range, wire_name
from ._convert import namespace

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["json_values", "strategies", "strategy_for"]

#: Sizes kept small: the models nest deeply, and the tests run every type of every revision.
MAX_LIST = 3
MAX_TEXT = 12
#: Integers within what every JSON implementation reads exactly (IEEE double, 2**53).
MAX_INT = 2**53

_cache: dict[Any, SearchStrategy[Any]] = {}


def _text() -> SearchStrategy[str]:
    from hypothesis import strategies as st

    # No lone surrogates: they cannot be written as UTF-8 JSON.
    return st.text(st.characters(exclude_categories=["Cs"]), max_size=MAX_TEXT)


def json_values() -> SearchStrategy[Any]:
    """JSON values every revision accepts where the schema leaves a value free."""
    cached = _cache.get("json")
    if cached is None:
        from hypothesis import strategies as st

        scalars = st.text(max_size=MAX_TEXT) | st.integers(-MAX_INT, MAX_INT) | st.booleans()
        cached = _cache["json"] = st.recursive(
            scalars,
            lambda inner: st.lists(inner, max_size=MAX_LIST)
            | st.dictionaries(_text(), inner, max_size=MAX_LIST),
            max_leaves=6,
        )
    return cached


def strategy_for(tp: Any) -> SearchStrategy[Any]:
    """A strategy for values of ``tp``: a model class, a type alias of a namespace (a union,
    ``list[...]``, a ``Literal``), or a primitive."""
    cached = _cache.get(tp)
    if cached is None:
        from hypothesis import strategies as st

        # Deferred, so that a type may (indirectly) contain itself.
        cached = _cache[tp] = st.deferred(lambda: _build(tp))
    return cached


def _build(tp: Any) -> SearchStrategy[Any]:
    from hypothesis import strategies as st

    if tp is Any:
        return json_values()
    if tp is str:
        return _text()
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-MAX_INT, MAX_INT)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if tp is type(None):
        return st.none()
    origin = get_origin(tp)
    if origin is Literal:
        return st.sampled_from(get_args(tp))
    if origin is list:
        return st.lists(strategy_for(get_args(tp)[0]), max_size=MAX_LIST)
    if origin is dict:
        return st.dictionaries(_text(), strategy_for(get_args(tp)[1]), max_size=MAX_LIST)
    if origin is Union or origin is _union_type():
        return st.one_of([strategy_for(member) for member in get_args(tp)])
    if isinstance(tp, type) and attrs.has(tp):
        return _model(tp)
    raise TypeError(f"no strategy for {tp!r}")


def _union_type() -> Any:
    import types

    return types.UnionType


def _model(cls: type) -> SearchStrategy[Any]:
    from hypothesis import strategies as st

    hints = typing.get_type_hints(cls)
    known = {wire_name(f) for f in attrs.fields(cls) if f.name != EXTRA}
    kwargs: dict[str, SearchStrategy[Any]] = {}
    for f in attrs.fields(cls):
        if f.name == EXTRA:
            extra_keys = _text().map(lambda key: "x-" + key).filter(lambda k: k not in known)
            kwargs[f.name] = st.just({}) | st.dictionaries(extra_keys, json_values(),
                                                           max_size=2)
            continue
        strategy = _field(hints[f.name], f)
        if f.default is None:
            strategy = st.none() | strategy
        kwargs[f.name] = strategy
    return st.builds(cls, **kwargs)


def _field(tp: Any, f: attrs.Attribute[Any]) -> SearchStrategy[Any]:
    """The strategy of a field's type, narrowed by the schema bounds its validator carries."""
    from hypothesis import strategies as st

    validators = _validators(f)
    for v in validators:
        if isinstance(v, Range):
            base = _strip_none(tp)
            if base is int:
                low = None if v.minimum is None else int(v.minimum)
                high = MAX_INT if v.maximum is None else int(v.maximum)
                return st.integers(low if low is not None else -MAX_INT, high)
            return st.floats(v.minimum, v.maximum, allow_nan=False, allow_infinity=False)
        if isinstance(v, MaxItems):
            item = get_args(_strip_none(tp))[0]
            return st.lists(strategy_for(item), max_size=min(v.limit, MAX_LIST))
    return strategy_for(tp)


def _validators(f: attrs.Attribute[Any]) -> list[Any]:
    v = f.validator
    if v is None:
        return []
    inner = getattr(v, "_validators", None)  # attrs' and_() of several validators
    return list(inner) if inner is not None else [v]


def _strip_none(tp: Any) -> Any:
    args = [a for a in get_args(tp) if a is not type(None)]
    return args[0] if get_origin(tp) in (Union, _union_type()) and len(args) == 1 else tp


def strategies(revision: str) -> dict[str, SearchStrategy[Any]]:
    """A strategy for every type of one revision's namespace, by name (classes and aliases)."""
    module = namespace(revision)
    out: dict[str, SearchStrategy[Any]] = {}
    for name in module.__all__:
        value = getattr(module, name)
        if isinstance(value, str) or name.isupper():
            continue  # REVISION and the method tables
        out[name] = strategy_for(value)
    return out
