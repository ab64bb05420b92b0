from __future__ import annotations

import pytest

from mcp_sansio import _json


@pytest.fixture(params=_json.available_backends())
def json_backend(request: pytest.FixtureRequest):
    """Run a test once per JSON backend (stdlib, and orjson when installed)."""
    previous = _json.backend
    _json.use_backend(request.param)
    yield request.param
    _json.use_backend(previous)
