"""The core's trusted event constructors (``_events.trusted_request``/``trusted_response``)
fill the slots directly, skipping the validators. They must build exactly the object the
validating constructor builds -- every field, equality, repr, ``attrs.evolve`` -- and
must not fall behind when a field is added to the class."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import Request, Response
from mcp_sansio._events import trusted_request, trusted_response

ids = st.one_of(st.integers(min_value=-(2**53), max_value=2**53), st.text(max_size=8))
methods = st.text(min_size=1, max_size=20)
values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
dicts = st.dictionaries(st.text(max_size=6), values, max_size=4)


def _same(trusted: Any, checked: Any) -> None:
    assert type(trusted) is type(checked)
    for field in attrs.fields(type(checked)):
        assert getattr(trusted, field.name) == getattr(checked, field.name), field.name
    assert trusted == checked
    assert repr(trusted) == repr(checked)
    assert attrs.evolve(trusted) == checked


@given(ids, methods, st.none() | dicts)
def test_trusted_request_is_the_validated_request(request_id: Any, method: str,
                                                  params: dict[str, Any] | None) -> None:
    _same(trusted_request(request_id, method, params),
          Request(request_id=request_id, method=method, params=params))


@given(ids, dicts, st.none() | methods)
def test_trusted_response_is_the_validated_response(request_id: Any, result: dict[str, Any],
                                                    method: str | None) -> None:
    _same(trusted_response(request_id, result, method),
          Response(request_id=request_id, result=result, method=method))


def test_trusted_constructors_fill_every_field() -> None:
    # A field added to Request or Response later would be left unset (an AttributeError on
    # a slotted class) by the trusted constructors: this fails first.
    request = trusted_request(1, "ping", None)
    response = trusted_response(1, {}, None)
    for event in (request, response):
        for field in attrs.fields(type(event)):
            getattr(event, field.name)
    assert [f.name for f in attrs.fields(Request)] == ["request_id", "method", "params"]
    assert [f.name for f in attrs.fields(Response)] == ["request_id", "result", "method"]
