"""Where a server's requestState keys come from (adapters/keys.py): the environment, a key
file re-read when it changes, and what a shared server does without either."""

from __future__ import annotations

import base64
import logging
import os
from pathlib import Path

import pytest
from mcp_sansio.adapters.keys import (
    ENV_KEYS,
    ENV_KEYS_FILE,
    ENV_KEYS_REQUIRED,
    FileKeySource,
    KeyConfigurationError,
    configured_key_ring,
    request_state_keys,
    shares_state,
    worker_environment,
)

from mcp_sansio import KeyRing
from mcp_sansio._keyring import key_id
from mcp_sansio.http import InMemoryEventStore


def key(n: int) -> bytes:
    return bytes([n]) * 32


def text(*keys: bytes) -> str:
    return "\n".join(base64.b64encode(k).decode() for k in keys) + "\n"


def test_the_ring_from_the_environment_variable() -> None:
    ring = configured_key_ring({ENV_KEYS: text(key(1), key(2)).replace("\n", ",")})
    assert ring is not None and ring.keys() == (key(1), key(2))
    assert configured_key_ring({}) is None


def test_the_ring_from_a_file_follows_the_file(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(text(key(1)))
    ring = configured_key_ring({ENV_KEYS_FILE: str(path)})
    assert ring is not None and ring.ids == (key_id(key(1)),)
    source = ring._source
    assert isinstance(source, FileKeySource)
    source.check_every = 0.0
    path.write_text(text(key(2), key(1)) + "# rotated\n")  # size changes with the content
    assert ring.sealing_key()[1] == key(2)


def test_a_file_that_breaks_later_keeps_the_last_good_keys(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "keys"
    path.write_text(text(key(1)))
    source = FileKeySource(path, check_every=0.0)
    path.write_text("this is not a key at all, nor base64!\n")
    with caplog.at_level(logging.ERROR, logger="mcp_sansio.adapters.keys"):
        assert source.keys() == (key(1),)
        assert source.keys() == (key(1),)
    assert len(caplog.records) == 1  # once per change, not per use
    assert "keeping the previous keys" in caplog.records[0].getMessage()
    path.unlink()
    assert source.keys() == (key(1),)


@pytest.mark.parametrize("environ", [
    {ENV_KEYS: "AAAA"},  # too short
    {ENV_KEYS: "!!"},
    {ENV_KEYS_FILE: "/nonexistent/keys"},
    {ENV_KEYS: text(key(1)), ENV_KEYS_FILE: "/x"},  # both: which one wins is unclear
])
def test_a_bad_configuration_is_an_error_at_start(environ: dict[str, str]) -> None:
    with pytest.raises(KeyConfigurationError, match="requestState keys"):
        request_state_keys(None, environ=environ)


def test_a_key_the_code_passes_is_used_as_given() -> None:
    ring = KeyRing([key(3)])
    assert request_state_keys(ring, environ={ENV_KEYS: text(key(1))}) is ring
    assert request_state_keys(b"raw", environ={}) == b"raw"


def test_one_process_without_configuration_draws_its_own_key_quietly(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="mcp_sansio.adapters.keys"):
        first = request_state_keys(None, environ={})
        second = request_state_keys(None, environ={})
    assert isinstance(first, bytes) and len(first) == 32 and first != second
    assert not caplog.records


def test_a_shared_server_without_configuration_says_so_in_one_line(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="mcp_sansio.adapters.keys"):
        request_state_keys(None, shared=True, environ={})
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert ENV_KEYS in record.getMessage() and "refused by every other" in record.getMessage()


def test_where_keys_are_required_a_missing_configuration_refuses_to_start() -> None:
    with pytest.raises(KeyConfigurationError, match=ENV_KEYS_REQUIRED):
        request_state_keys(None, environ={ENV_KEYS_REQUIRED: "1"})
    assert isinstance(request_state_keys(None, environ={ENV_KEYS_REQUIRED: "0"}), bytes)
    ring = request_state_keys(None, environ={ENV_KEYS_REQUIRED: "1", ENV_KEYS: text(key(1))})
    assert isinstance(ring, KeyRing)


def test_the_configured_ring_is_logged_by_id_never_by_key(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="mcp_sansio.adapters.keys"):
        request_state_keys(None, environ={ENV_KEYS: text(key(1), key(2))})
    [record] = caplog.records
    message = record.getMessage()
    assert key_id(key(1)) in message and ENV_KEYS in message
    assert base64.b64encode(key(1)).decode()[:8] not in message


def test_a_store_other_than_the_in_memory_one_makes_the_server_shared() -> None:
    class Elsewhere(InMemoryEventStore):
        pass

    assert not shares_state({})
    assert not shares_state({"event_store": InMemoryEventStore()})
    assert shares_state({"event_store": object()})  # stands for a store others read
    assert not shares_state({"event_store": Elsewhere()})  # an in-memory one still


def test_the_environment_is_read_from_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_KEYS, text(key(9)))
    monkeypatch.delenv(ENV_KEYS_FILE, raising=False)
    ring = request_state_keys(None)
    assert isinstance(ring, KeyRing) and ring.keys() == (key(9),)
    assert os.environ[ENV_KEYS]


def test_a_launcher_gives_its_workers_one_ring(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="mcp_sansio.adapters.keys"):
        extra = worker_environment(4, environ={})
    [record] = caplog.records  # one line: these workers agree, other hosts will not
    assert record.levelno == logging.WARNING and "4 workers" in record.getMessage()
    ring = request_state_keys(None, environ=extra)
    assert isinstance(ring, KeyRing) and len(ring.keys()[0]) == 32
    second = request_state_keys(None, environ=extra)  # another worker, the same ring
    assert isinstance(second, KeyRing) and second.keys() == ring.keys()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="mcp_sansio.adapters.keys"):
        assert ENV_KEYS in worker_environment(1, environ={})
    assert not caplog.records  # one worker: nothing to say
    assert worker_environment(4, environ={ENV_KEYS: text(key(1))}) == {}  # inherited
    with pytest.raises(KeyConfigurationError):
        worker_environment(4, environ={ENV_KEYS: "bad"})
    with pytest.raises(KeyConfigurationError, match=ENV_KEYS_REQUIRED):
        worker_environment(4, environ={ENV_KEYS_REQUIRED: "yes"})
