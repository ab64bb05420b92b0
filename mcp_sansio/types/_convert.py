"""The cattrs converter behind :mod:`mcp_sansio.types`: JSON values <-> model objects.

Theory of operation
-------------------
One :class:`cattrs.Converter` with hooks built on first use, per type:

* **Model classes** (the attrs classes of ``v2024_11_05`` ... ``v2026_07_28``) use cattrs'
  generated dict functions with every field renamed to its JSON key (``_base.wire_name``).
  Structuring puts keys the class does not know into ``extra`` (forward compatibility: a
  newer peer's fields survive a round trip), and so an explicit ``null`` for an optional
  field that takes any JSON value (``structuredContent: null``: its ``None`` means absent);
  unstructuring leaves out optional fields that are ``None`` and puts the ``extra`` keys
  back (a field that is set wins over an ``extra`` key of the same name).
* **Unions** are resolved by their discriminators. When every member has a constant field
  under the same key (content blocks' ``type``, requests' ``method``), one dict lookup picks
  the member. Otherwise the members whose required keys are all present and whose constant
  fields match are tried, the one that knows most of the object's keys first.
* **Primitives** are strict: a string field takes only a string, an integer field only an
  integer (or an integral float: JSON does not tell them apart), a number field an integer or
  a float, never a bool; lists and objects are checked before they are walked.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import importlib
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, overload

import attrs
import cattrs
from cattrs.errors import ClassValidationError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ._base import EXTRA, FieldValueError, wire_name

__all__ = [
    "REVISIONS",
    "TypeValidationError",
    "converter",
    "namespace",
    "structure",
    "structure_notification",
    "structure_request",
    "structure_result",
    "unstructure",
]

T = TypeVar("T")

#: The revisions with a model namespace, oldest first, and the module of each.
REVISIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25",
                              "2026-07-28")
_MODULES = {revision: "v" + revision.replace("-", "_") for revision in REVISIONS}
_MODEL_PREFIX = __name__.rsplit(".", 1)[0] + ".v"


class TypeValidationError(ValueError):
    """A value does not have the shape the schema gives its type.

    ``errors`` lists every problem found as ``(path, message)`` pairs; the path names JSON
    keys and list indexes from the root of the value given (``params.content[0].text``).
    The message of the exception is the type and all the problems, on one line.
    """

    def __init__(self, what: str, errors: Sequence[tuple[str, str]]) -> None:
        self.what = what
        self.errors: tuple[tuple[str, str], ...] = tuple(errors)
        detail = "; ".join(f"{path}: {message}" if path else message
                           for path, message in self.errors)
        super().__init__(f"invalid {what}: {detail}")


class _Invalid(ValueError):
    """One problem at the current path (raised by the hooks below)."""


class _Nested(ValueError):
    """Problems below the current path: ``[(suffix, exception)]``, e.g. ``("[2]", exc)``."""

    def __init__(self, errors: list[tuple[str, BaseException]]) -> None:
        super().__init__(f"{len(errors)} problem(s)")
        self.errors = errors


def _kind(value: Any) -> str:
    """The JSON name of a Python value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


converter = cattrs.Converter(detailed_validation=True)
"""The converter. Hooks for the model classes are made on first use of each class."""


# -- primitives ------------------------------------------------------------------------------


def _structure_str(value: Any, _: Any) -> str:
    if isinstance(value, str):
        return value
    raise _Invalid(f"expected a string, got {_kind(value)}")


def _structure_int(value: Any, _: Any) -> int:
    if type(value) is int:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise _Invalid(f"expected an integer, got {_kind(value)}")


def _structure_float(value: Any, _: Any) -> float:
    # An integer stays an integer (the numeric tower admits it), so it is sent back as it came.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise _Invalid(f"expected a number, got {_kind(value)}")


def _structure_bool(value: Any, _: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise _Invalid(f"expected a boolean, got {_kind(value)}")


def _structure_none(value: Any, _: Any) -> None:
    if value is not None:
        raise _Invalid(f"expected null, got {_kind(value)}")


converter.register_structure_hook(str, _structure_str)
converter.register_structure_hook(int, _structure_int)
converter.register_structure_hook(float, _structure_float)
converter.register_structure_hook(bool, _structure_bool)
converter.register_structure_hook(type(None), _structure_none)


# -- Literal, list, dict ---------------------------------------------------------------------


def _is_literal(tp: Any) -> bool:
    return get_origin(tp) is Literal


def _literal_hook(tp: Any) -> Callable[[Any, Any], Any]:
    values = get_args(tp)
    table = {(type(v), v): v for v in values}
    expected = " or ".join(repr(v) for v in values)

    def structure_literal(value: Any, _: Any) -> Any:
        try:
            return table[type(value), value]
        except (KeyError, TypeError):
            raise _Invalid(f"expected {expected}, got {value!r}") from None

    return structure_literal


def _is_list(tp: Any) -> bool:
    return get_origin(tp) is list or tp is list


def _list_hook(tp: Any) -> Callable[[Any, Any], Any]:
    args = get_args(tp)
    item = args[0] if args else Any

    if item is Any:
        def structure_any_list(value: Any, _: Any) -> list[Any]:
            if not isinstance(value, list | tuple):
                raise _Invalid(f"expected an array, got {_kind(value)}")
            return list(value)
        return structure_any_list

    hook = converter.get_structure_hook(item)

    def structure_list(value: Any, _: Any) -> list[Any]:
        if not isinstance(value, list | tuple):
            raise _Invalid(f"expected an array, got {_kind(value)}")
        out = []
        errors: list[tuple[str, BaseException]] = []
        for index, element in enumerate(value):
            try:
                out.append(hook(element, item))
            except Exception as exc:  # collected, reported with the index
                errors.append((f"[{index}]", exc))
        if errors:
            raise _Nested(errors)
        return out

    return structure_list


def _is_dict(tp: Any) -> bool:
    return get_origin(tp) in (dict, Mapping) or tp is dict


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _key_path(key: Any) -> str:
    return f".{key}" if isinstance(key, str) and _IDENTIFIER.match(key) else f"[{key!r}]"


def _dict_hook(tp: Any) -> Callable[[Any, Any], Any]:
    args = get_args(tp)
    item = args[1] if len(args) == 2 else Any

    def check(value: Any) -> None:
        if not isinstance(value, Mapping):
            raise _Invalid(f"expected an object, got {_kind(value)}")
        for key in value:
            if not isinstance(key, str):
                raise _Invalid(f"object keys must be strings, got {_kind(key)}")

    if item is Any:
        def structure_any_dict(value: Any, _: Any) -> dict[str, Any]:
            check(value)
            return dict(value)
        return structure_any_dict

    hook = converter.get_structure_hook(item)

    def structure_dict(value: Any, _: Any) -> dict[str, Any]:
        check(value)
        out = {}
        errors: list[tuple[str, BaseException]] = []
        for key, element in value.items():
            try:
                out[key] = hook(element, item)
            except Exception as exc:  # collected, reported with the key
                errors.append((_key_path(key), exc))
        if errors:
            raise _Nested(errors)
        return out

    return structure_dict


converter.register_structure_hook_factory(_is_literal, _literal_hook)
converter.register_structure_hook_factory(_is_list, _list_hook)
converter.register_structure_hook_factory(_is_dict, _dict_hook)


# -- model classes ---------------------------------------------------------------------------


def _is_model(tp: Any) -> bool:
    return (isinstance(tp, type) and attrs.has(tp)
            and tp.__module__.startswith(_MODEL_PREFIX))


def _wire_names(cls: type) -> dict[str, str]:
    """Field name -> JSON key, for every field but ``extra``."""
    return {f.name: wire_name(f) for f in attrs.fields(cls) if f.name != EXTRA}


def _model_structure_hook(cls: type) -> Callable[[Any, Any], Any]:
    wires = _wire_names(cls)
    overrides: dict[str, Any] = {name: override(rename=wire) for name, wire in wires.items()}
    overrides[EXTRA] = override(omit=True)
    base: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls, converter, _cattrs_forbid_extra_keys=False, **overrides)
    known = frozenset(wires.values())
    # Optional fields of any JSON value (``structuredContent`` in 2026-07-28, an error's
    # ``data``) may be null on the wire, which their default (None: absent) cannot tell from
    # no key at all. An explicit null is kept in ``extra``, which unstructuring puts back
    # when the field is still None: the peer's message survives the round trip.
    nullable = frozenset(
        wires[f.name] for f in attrs.fields(cls)
        if f.name != EXTRA and f.default is None and f.type in ("Any", Any))

    def structure_model(value: Any, _: Any) -> Any:
        if type(value) is not dict:
            if not isinstance(value, Mapping):
                raise _Invalid(f"expected an object, got {_kind(value)}")
            value = dict(value)
        if value.keys() <= known:
            if nullable:
                nulls = {k: None for k in nullable if k in value and value[k] is None}
                if nulls:
                    return attrs.evolve(base(value, cls), extra=nulls)
            return base(value, cls)
        extra = {k: v for k, v in value.items()
                 if k not in known or (v is None and k in nullable)}
        return attrs.evolve(base(value, cls), extra=extra)

    return structure_model


def _model_unstructure_hook(cls: type) -> Callable[[Any], Any]:
    overrides: dict[str, Any] = {EXTRA: override(omit=True)}
    for f in attrs.fields(cls):
        if f.name != EXTRA:
            # Optional fields default to None, which means "absent": left out, not null.
            overrides[f.name] = override(rename=wire_name(f), omit_if_default=f.default is None)
    base: Callable[[Any], Any] = make_dict_unstructure_fn(cls, converter, **overrides)
    unstructure_any = converter.unstructure

    def unstructure_model(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = base(obj)
        extra = obj.extra
        if extra:
            for key, value in extra.items():
                if key not in out:  # a field of the class wins over a stray extra key
                    out[key] = unstructure_any(value)
        return out

    return unstructure_model


converter.register_structure_hook_factory(_is_model, _model_structure_hook)
converter.register_unstructure_hook_factory(_is_model, _model_unstructure_hook)


# -- unions ----------------------------------------------------------------------------------


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


@attrs.frozen
class _Member:
    """What the union resolver needs to know about one model class."""

    cls: type
    required: frozenset[str]  # JSON keys that must be present
    constants: Mapping[str, tuple[Any, ...]]  # JSON key -> allowed literal values
    known: frozenset[str]  # every JSON key of the class

    @classmethod
    def of(cls, model: type) -> _Member:
        hints = typing.get_type_hints(model)
        required: set[str] = set()
        constants: dict[str, tuple[Any, ...]] = {}
        for f in attrs.fields(model):
            if f.name == EXTRA:
                continue
            wire = wire_name(f)
            tp = hints[f.name]
            literal = [a for a in (get_args(tp) if _is_union(tp) else (tp,)) if _is_literal(a)]
            if literal:
                constants[wire] = tuple(v for a in literal for v in get_args(a))
            if f.default is attrs.NOTHING or (literal and f.default is not None):
                required.add(wire)  # a constant with a default is still required on the wire
        return cls(model, frozenset(required), constants, frozenset(_wire_names(model).values()))

    def accepts(self, value: Mapping[str, Any]) -> bool:
        if not self.required <= value.keys():
            return False
        for key, allowed in self.constants.items():
            if key in value and not any(value[key] == a and type(value[key]) is type(a)
                                        for a in allowed):
                return False
        return True


def _discriminator(members: list[_Member]) -> str | None:
    """A JSON key under which every member has its own required constant(s)."""
    if len(members) < 2:
        return None
    keys = set.intersection(*(set(m.constants) & m.required for m in members))
    for key in sorted(keys):
        seen: set[Any] = set()
        for m in members:
            values = set(m.constants[key])
            if values & seen:
                break
            seen |= values
        else:
            return key
    return None


_JSON_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean",
               type(None): "null", dict: "object", list: "array"}


def _describe(tp: Any) -> str:
    """A type as the messages name it: JSON names for primitives, class names for models."""
    if tp in _JSON_NAMES:
        return _JSON_NAMES[tp]
    origin = get_origin(tp)
    if origin in _JSON_NAMES:
        return _JSON_NAMES[origin]
    if origin is Literal:
        return " | ".join(repr(v) for v in get_args(tp))
    if _is_union(tp):
        return _union_name(tp)
    return getattr(tp, "__name__", repr(tp))


def _union_name(tp: Any) -> str:
    return " | ".join(_describe(a) for a in get_args(tp))


def _union_hook(tp: Any) -> Callable[[Any, Any], Any]:
    args = get_args(tp)
    nullable = type(None) in args
    args = tuple(a for a in args if a is not type(None))
    if Any in args:
        return lambda value, _: value
    if len(args) == 1:  # Optional[X]: X's own hook, and its own messages
        (only,) = args
        inner = converter.get_structure_hook(only)

        def structure_optional(value: Any, _: Any) -> Any:
            if value is None:
                return None
            return inner(value, only)

        return structure_optional
    models = [_Member.of(a) for a in args if _is_model(a)]
    others = [a for a in args if not _is_model(a)]
    key = _discriminator(models) if not any(_is_dict(o) for o in others) else None
    by_value = {v: m for m in models for v in m.constants[key]} if key else {}
    hooks = {a: converter.get_structure_hook(a) for a in args}
    name = " | ".join(_describe(a) for a in args)  # null: the field is optional

    def structure_object(value: Mapping[str, Any]) -> Any:
        if key is not None:
            tag = value.get(key)
            member = by_value.get(tag) if isinstance(tag, str | int) else None
            if member is None:
                choices = ", ".join(repr(v) for v in by_value)
                if key not in value:
                    raise _Invalid(f"{key} missing: one of {choices} is needed (for {name})")
                raise _Invalid(f"{key}={tag!r} is none of {choices} (for {name})")
            return hooks[member.cls](value, member.cls)
        candidates = [m for m in models if m.accepts(value)]
        if len(candidates) == 1 and not others:
            only = candidates[0].cls
            return hooks[only](value, only)
        # Most keys of the value known first; then the smaller class (the closer fit).
        candidates.sort(key=lambda m: (-len(m.known & value.keys()), len(m.known)))
        first_error: BaseException | None = None
        for member in candidates:
            try:
                return hooks[member.cls](value, member.cls)
            except Exception as exc:  # try the next candidate; report the best one's errors
                first_error = first_error or exc
        for other in others:
            if _is_dict(other):
                return hooks[other](value, other)
        if first_error is not None:
            raise first_error
        raise _Invalid(f"matches none of {name}: {_missing_hint(models, value)}")

    def structure_union(value: Any, _: Any) -> Any:
        if value is None:
            if nullable:
                return None
            raise _Invalid(f"expected {name}, got null")
        if isinstance(value, Mapping) and (models or any(_is_dict(o) for o in others)):
            return structure_object(value)
        first_error: BaseException | None = None
        for other in others:
            if _is_dict(other) and not isinstance(value, Mapping):
                continue
            try:
                return hooks[other](value, other)
            except Exception as exc:  # try the next member
                first_error = first_error or exc
        if first_error is not None and len(others) == 1:
            raise first_error
        raise _Invalid(f"expected {name}, got {_kind(value)}")

    return structure_union


def _missing_hint(models: list[_Member], value: Mapping[str, Any]) -> str:
    """Why no member matched: the closest member's missing keys or wrong constants."""
    if not models:
        return "no member takes an object"
    best = min(models, key=lambda m: len(m.required - value.keys()))
    missing = sorted(best.required - value.keys())
    if missing:
        return f"closest is {best.cls.__name__}, which needs {', '.join(missing)}"
    wrong = [k for k in best.constants if k in value]
    return f"closest is {best.cls.__name__}, whose {', '.join(wrong)} differs"


converter.register_structure_hook_factory(_is_union, _union_hook)


# -- errors ----------------------------------------------------------------------------------


def _flatten(exc: BaseException, path: str, out: list[tuple[str, str]]) -> None:
    if isinstance(exc, ClassValidationError):
        wires = _wire_names(exc.cl) if attrs.has(exc.cl) else {}
        for sub in exc.exceptions:
            name = next((getattr(note, "name", None) for note in getattr(sub, "__notes__", ())
                         if getattr(note, "name", None)), None)
            sub_path = f"{path}.{wires.get(name, name)}" if name else path
            if isinstance(sub, KeyError):
                out.append((sub_path, "required field missing"))
            else:
                _flatten(sub, sub_path, out)
    elif isinstance(exc, IterableValidationError):
        for item in exc.exceptions:
            index = next((getattr(note, "index", None) for note in getattr(item, "__notes__", ())
                          if hasattr(note, "index")), None)
            _flatten(item, f"{path}[{index}]" if index is not None else path, out)
    elif isinstance(exc, _Nested):
        for suffix, nested in exc.errors:
            _flatten(nested, path + suffix, out)
    elif isinstance(exc, FieldValueError):
        out.append((f"{path}.{exc.field}", exc.message))
    elif isinstance(exc, BaseExceptionGroup):
        for member in exc.exceptions:
            _flatten(member, path, out)
    elif isinstance(exc, _Invalid):
        out.append((path, str(exc)))
    else:
        out.append((path, f"{type(exc).__name__}: {exc}"))


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    if _is_union(tp):
        return _union_name(tp)
    return repr(tp)


# -- the public functions --------------------------------------------------------------------


@overload
def structure(data: Any, cls: type[T], *, path: str = "$") -> T: ...


@overload
def structure(data: Any, cls: Any, *, path: str = "$") -> Any: ...


def structure(data: Any, cls: Any, *, path: str = "$") -> Any:
    """Build a model object (or any type of the namespaces: a union, a ``list[...]``) from
    JSON data.

    Unknown keys are kept in the ``extra`` field of the object they belong to. ``path`` names
    the root of ``data`` in error messages. Raises :class:`TypeValidationError` naming every
    field that does not fit.
    """
    return _run(converter.get_structure_hook(cls), cls, data, path)


def _run(hook: Callable[[Any, Any], Any], tp: Any, data: Any, path: str) -> Any:
    try:
        return hook(data, tp)
    except (cattrs.BaseValidationError, ValueError) as exc:
        errors: list[tuple[str, str]] = []
        _flatten(exc, path, errors)
        raise TypeValidationError(_type_name(tp), errors) from None


def unstructure(obj: Any) -> Any:
    """The JSON data of a model object (or a list or dict of them): camelCase keys, optional
    fields that are ``None`` left out, ``extra`` keys put back."""
    return converter.unstructure(obj)


_loaded: dict[str, types.ModuleType] = {}


def namespace(revision: str) -> types.ModuleType:
    """The module of one revision's types (``mcp_sansio.types.v2025_11_25`` for
    ``"2025-11-25"``), imported on first use."""
    module = _loaded.get(revision)
    if module is None:
        name = _MODULES.get(revision)
        if name is None:
            raise ValueError(f"no types for MCP revision {revision!r}; "
                             f"known: {', '.join(REVISIONS)}")
        module = _loaded[revision] = importlib.import_module(
            f"{__name__.rsplit('.', 1)[0]}.{name}")
    return module


@attrs.frozen
class _Plan:
    """How to structure the params or result of one method in one revision (cached)."""

    tp: Any
    hook: Callable[[Any, Any], Any]
    #: 2026-07-28: the result to use when ``resultType`` is ``"input_required"``.
    input_required: _Plan | None = None


_plans: dict[tuple[str, str, str], _Plan] = {}


def _plan(table: str, method: str, revision: str) -> _Plan:
    key = (table, method, revision)
    plan = _plans.get(key)
    if plan is not None:
        return plan
    found = getattr(namespace(revision), table).get(method)
    if found is None:
        kind = "notification" if table == "NOTIFICATION_PARAMS" else "request"
        raise TypeValidationError(
            f"{kind} method", [("method", f"{method!r} is not a {kind} in MCP {revision}")])
    input_required = None
    if table == "RESULTS":
        choices = tuple(c for c in found if c.__name__ != "InputRequiredResult")
        if len(choices) < len(found):
            (other,) = (c for c in found if c.__name__ == "InputRequiredResult")
            input_required = _Plan(other, converter.get_structure_hook(other))
        found = choices[0] if len(choices) == 1 else Union[choices]  # noqa: UP007 (a tuple)
    plan = _plans[key] = _Plan(found, converter.get_structure_hook(found), input_required)
    return plan


def structure_request(method: str, params: Mapping[str, Any] | None, revision: str) -> Any:
    """The typed ``params`` of a ``method`` request in ``revision``: e.g. a
    ``CallToolRequestParams`` for ``"tools/call"``. Absent params (``None``) are read as an
    empty object, which is fine for methods whose params are all optional."""
    plan = _plan("REQUEST_PARAMS", method, revision)
    return _run(plan.hook, plan.tp, {} if params is None else params, "params")


def structure_notification(method: str, params: Mapping[str, Any] | None,
                           revision: str) -> Any:
    """The typed ``params`` of a ``method`` notification in ``revision`` (absent params are
    read as an empty object)."""
    plan = _plan("NOTIFICATION_PARAMS", method, revision)
    return _run(plan.hook, plan.tp, {} if params is None else params, "params")


def structure_result(method: str, result: Mapping[str, Any], revision: str) -> Any:
    """The typed result of a ``method`` request in ``revision``: e.g. a ``CallToolResult``.

    Where a request may be answered in more than one way, the result says which: in
    2026-07-28 ``resultType: "input_required"`` is an ``InputRequiredResult`` (the spec's
    discriminator); in 2025-11-25 a task-augmented request's answer carries ``task`` and is a
    ``CreateTaskResult``.
    """
    plan = _plan("RESULTS", method, revision)
    other = plan.input_required
    if (other is not None and isinstance(result, Mapping)
            and result.get("resultType") == "input_required"):
        plan = other
    return _run(plan.hook, plan.tp, result, "result")
