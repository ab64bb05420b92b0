"""A JSON ``null`` in an optional field that takes any JSON value survives the typed models:
2026-07-28's ``CallToolResult.structuredContent`` may be any JSON value, null included
(server/tools.mdx, Structured Content), and an error's ``data`` is whatever its sender put
there. Such a field's ``None`` means *absent*, so a null the peer sent is kept beside it and
sent back as it came."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import types

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3),
    max_leaves=8)


def test_structured_content_null_round_trips() -> None:
    wire = {"content": [], "resultType": "complete", "structuredContent": None}
    result = types.structure_result("tools/call", wire, "2026-07-28")
    assert result.structured_content is None  # reads as no value, as before
    assert types.unstructure(result) == wire  # ...but the null is sent back


def test_an_absent_structured_content_stays_absent() -> None:
    wire = {"content": [], "resultType": "complete"}
    result = types.structure_result("tools/call", wire, "2026-07-28")
    assert result.extra == {}
    assert types.unstructure(result) == wire
    assert result != types.structure_result(
        "tools/call", {**wire, "structuredContent": None}, "2026-07-28")


def test_a_value_set_later_wins_over_the_kept_null() -> None:
    result = types.structure_result(
        "tools/call", {"content": [], "resultType": "complete", "structuredContent": None},
        "2026-07-28")
    changed = attrs.evolve(result, structured_content={"sum": 3})
    assert types.unstructure(changed)["structuredContent"] == {"sum": 3}


@given(JSON)
def test_any_structured_content_round_trips(value: Any) -> None:
    wire = {"content": [{"type": "text", "text": "x"}], "resultType": "complete",
            "structuredContent": value}
    result = types.structure_result("tools/call", wire, "2026-07-28")
    assert types.unstructure(result) == wire
    assert types.unstructure(types.structure(types.unstructure(result),
                                             type(result))) == wire


def test_error_data_null_round_trips_in_every_revision() -> None:
    for revision in types.REVISIONS:
        error_type = types.namespace(revision).Error
        for wire in ({"code": -1, "message": "m", "data": None}, {"code": -1, "message": "m"}):
            assert types.unstructure(types.structure(wire, error_type)) == wire


def test_null_still_reads_as_absent_for_a_field_of_one_type() -> None:
    # title is a string when present: null is not one, and is read (and sent) as absent.
    v = types.namespace("2026-07-28")
    info = types.structure({"name": "n", "version": "1", "title": None}, v.Implementation)
    assert types.unstructure(info) == {"name": "n", "version": "1"}
