"""JSON-RPC 2.0 envelope rules (``mcp_sansio._codec``), as MCP tightens them.

spec-digest section e: ``jsonrpc`` is ``"2.0"``; a request id is a string or an integer
(never null, a bool or a float); result XOR error; an error object has an integer ``code`` and
a string ``message``; ``params``, when present, is an object. A broken request (or anything
unrecognisable) is answered -32600 with its id when the id can be read, else ``null``
(JSON-RPC 2.0 section 5); whatever is shaped like a notification or a response is never
answered (section 4.1).

The tables are fed through the JSON text (``decode`` then ``parse``) under both backends,
so that how a backend reads a number (``1.0``, ``2**64``) is part of what is checked.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sansio import ErrorCode, RemoteProtocolError
from mcp_sansio._codec import (
    InvalidMessage,
    MessageKind,
    decode,
    encode,
    error_message,
    notification_message,
    parse,
    request_message,
    result_message,
)

SETTINGS = settings(
    max_examples=200, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

REQ, NOTE, RES, ERR = (MessageKind.REQUEST, MessageKind.NOTIFICATION, MessageKind.RESULT,
                       MessageKind.ERROR)


def parse_text(text: str | bytes) -> Any:
    return parse(decode(text.encode() if isinstance(text, str) else text))


# -- valid messages ----------------------------------------------------------------------------

VALID = [
    # (JSON text, kind, id, method, payload)
    ('{"jsonrpc":"2.0","id":1,"method":"ping"}', REQ, 1, "ping", None),
    ('{"jsonrpc":"2.0","id":0,"method":"ping"}', REQ, 0, "ping", None),
    ('{"jsonrpc":"2.0","id":-7,"method":"x","params":{}}', REQ, -7, "x", {}),
    ('{"jsonrpc":"2.0","id":"","method":"x"}', REQ, "", "x", None),
    ('{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"t"}}', REQ, "abc",
     "tools/call", {"name": "t"}),
    ('{"jsonrpc":"2.0","id":18446744073709551615,"method":"x"}', REQ, 2**64 - 1, "x", None),
    ('{"jsonrpc":"2.0","id":-9223372036854775808,"method":"x"}', REQ, -(2**63), "x", None),
    ('{"method":"x","id":3,"jsonrpc":"2.0","params":{"a":[1]},"extra":true}', REQ, 3, "x",
     {"a": [1]}),
    ('{"jsonrpc":"2.0","method":"notifications/initialized"}', NOTE, None,
     "notifications/initialized", None),
    ('{"jsonrpc":"2.0","method":"n","params":{"_meta":{}}}', NOTE, None, "n", {"_meta": {}}),
    ('{"jsonrpc":"2.0","method":""}', NOTE, None, "", None),
    ('{"jsonrpc":"2.0","id":1,"result":{}}', RES, 1, None, {}),
    ('{"jsonrpc":"2.0","id":"s","result":{"a":null}}', RES, "s", None, {"a": None}),
    ('{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}', ERR, 1, None,
     {"code": -32601, "message": "no"}),
    ('{"jsonrpc":"2.0","id":"q","error":{"code":5,"message":"","data":[1]}}', ERR, "q", None,
     {"code": 5, "message": "", "data": [1]}),
    # An error answering an unreadable id: id null (JSON-RPC) or absent (2025-11-25 schema).
    ('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}', ERR, None,
     None, {"code": -32700, "message": "Parse error"}),
    ('{"jsonrpc":"2.0","error":{"code":-32600,"message":"bad"}}', ERR, None, None,
     {"code": -32600, "message": "bad"}),
]


@pytest.mark.parametrize(("text", "kind", "msg_id", "method", "payload"), VALID)
def test_valid_messages_parse(json_backend: str, text: str, kind: MessageKind, msg_id: Any,
                              method: str | None, payload: Any) -> None:
    parsed = parse_text(text)
    assert parsed == (kind, msg_id, method, payload)
    assert type(parsed[1]) is type(msg_id)


# -- invalid messages --------------------------------------------------------------------------

NO_REPLY = object()
INVALID = [
    # (JSON text, expected reply id or NO_REPLY)
    # jsonrpc must be exactly "2.0"
    ('{"id":1,"method":"ping"}', 1),
    ('{"jsonrpc":"1.0","id":1,"method":"ping"}', 1),
    ('{"jsonrpc":2.0,"id":"a","method":"ping"}', "a"),
    ('{"jsonrpc":"2.0 ","id":1,"method":"ping"}', 1),
    ('{"jsonrpc":null,"id":1,"method":"ping"}', 1),
    ('{"method":"notifications/initialized"}', NO_REPLY),
    ('{"jsonrpc":"2","method":"n"}', NO_REPLY),
    ('{"id":1,"result":{}}', NO_REPLY),
    ('{"jsonrpc":"1.0","id":1,"error":{"code":1,"message":"m"}}', NO_REPLY),
    # ids: string or integer only
    ('{"jsonrpc":"2.0","id":null,"method":"ping"}', None),
    ('{"jsonrpc":"2.0","id":true,"method":"ping"}', None),
    ('{"jsonrpc":"2.0","id":false,"method":"ping"}', None),
    ('{"jsonrpc":"2.0","id":1.0,"method":"ping"}', None),
    ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None),
    ('{"jsonrpc":"2.0","id":1e2,"method":"ping"}', None),
    ('{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}', None),  # a float now
    ('{"jsonrpc":"2.0","id":[1],"method":"ping"}', None),
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', None),
    ('{"jsonrpc":"2.0","id":null,"result":{}}', NO_REPLY),
    ('{"jsonrpc":"2.0","result":{}}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":true,"result":{}}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1.0,"result":{}}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":[1],"error":{"code":1,"message":"m"}}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":false,"error":{"code":1,"message":"m"}}', NO_REPLY),
    # method: a string
    ('{"jsonrpc":"2.0","id":1,"method":5}', 1),
    ('{"jsonrpc":"2.0","id":"k","method":["ping"]}', "k"),
    ('{"jsonrpc":"2.0","id":1}', 1),
    ('{"jsonrpc":"2.0","id":"z","params":{}}', "z"),
    ('{"jsonrpc":"2.0","method":1,"params":"bar"}', None),  # JSON-RPC 2.0 section 7 example
    ('{"foo":"boo"}', None),
    ('{}', None),
    # result XOR error
    ('{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1,"method":"x","result":{}}', 1),
    ('{"jsonrpc":"2.0","id":1,"method":"x","error":{"code":1,"message":"m"}}', 1),
    ('{"jsonrpc":"2.0","method":"x","result":{}}', NO_REPLY),
    # result must be an object (MCP)
    ('{"jsonrpc":"2.0","id":1,"result":[]}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1,"result":null}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1,"result":"ok"}', NO_REPLY),
    # error: an object with an integer code and a string message
    ('{"jsonrpc":"2.0","id":1,"error":null}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1,"error":"boom"}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1,"error":{"code":1}}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1,"error":{"code":1.0,"message":"m"}}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1,"error":{"code":true,"message":"m"}}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":null}}', NO_REPLY),
    ('{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":5}}', NO_REPLY),
    # params: an object when present
    ('{"jsonrpc":"2.0","id":1,"method":"x","params":[1,2]}', 1),
    ('{"jsonrpc":"2.0","id":"p","method":"x","params":null}', "p"),
    ('{"jsonrpc":"2.0","id":1,"method":"x","params":"s"}', 1),
    ('{"jsonrpc":"2.0","id":1,"method":"x","params":0}', 1),
    ('{"jsonrpc":"2.0","method":"x","params":[1]}', NO_REPLY),
    ('{"jsonrpc":"2.0","method":"x","params":null}', NO_REPLY),
    # not an object at all
    ("1", None),
    ('"ping"', None),
    ("null", None),
    ("true", None),
]


@pytest.mark.parametrize(("text", "reply_id"), INVALID)
def test_invalid_messages_are_refused(json_backend: str, text: str, reply_id: Any) -> None:
    with pytest.raises(InvalidMessage) as info:
        parse_text(text)
    exc = info.value
    assert isinstance(exc, RemoteProtocolError)
    assert exc.code == ErrorCode.INVALID_REQUEST
    assert exc.message
    if reply_id is NO_REPLY:
        assert exc.reply is False, "notifications and responses are never answered"
    else:
        assert exc.reply is True
        assert exc.request_id == reply_id
        assert type(exc.request_id) is type(reply_id)
        # The reply that would go out is a valid JSON-RPC error for that id.
        reply = error_message(exc.request_id, exc.code, exc.message)
        assert json.loads(encode(reply)) == {
            "jsonrpc": "2.0", "id": reply_id,
            "error": {"code": -32600, "message": exc.message},
        }


def test_a_request_carries_its_method_when_refused(json_backend: str) -> None:
    with pytest.raises(InvalidMessage) as info:
        parse_text('{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[]}')
    assert info.value.method == "tools/list"
    assert info.value.request_id == 4


# -- decode: -32700 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b"{]", b'{"jsonrpc":"2.0",}', b"\xff{}", b"\xef\xbb\xbf{}", b"NaN",
     b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"v":1e400}}', b'"\\ud800"',
     b'{"a":"\\udfff"}', b"[" * 129 + b"]" * 129, b"{} {}", b"'single'"],
    ids=lambda d: f"{d[:20]!r}({len(d)})",
)
def test_undecodable_text_is_a_parse_error(json_backend: str, data: bytes) -> None:
    with pytest.raises(InvalidMessage) as info:
        decode(data)
    exc = info.value
    assert exc.code == ErrorCode.PARSE_ERROR
    assert exc.request_id is None
    assert exc.reply is True


@SETTINGS
@given(data=st.binary(max_size=64))
def test_decode_raises_only_invalid_message(json_backend: str, data: bytes) -> None:
    try:
        decode(data)
    except InvalidMessage as exc:
        assert exc.code == ErrorCode.PARSE_ERROR
        assert exc.request_id is None


def test_depth_limit_is_configurable(json_backend: str) -> None:
    assert decode(b"[[[1]]]", max_depth=3) == [[[1]]]
    with pytest.raises(InvalidMessage):
        decode(b"[[[1]]]", max_depth=2)


# -- hypothesis: an independent oracle over generated envelopes --------------------------------

GOOD_IDS = [0, 1, -1, 2**63, "", "a", "id-7"]
BAD_IDS = [None, True, False, 1.0, 0.5, [], [1], {}, {"id": 1}]
MISSING = object()

member_values = {
    "jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0", "2", 2.0, None]),
    "id": st.sampled_from(GOOD_IDS + BAD_IDS),
    "method": st.sampled_from(["ping", "tools/list", "notifications/cancelled", "", 5, None,
                               ["x"]]),
    "params": st.sampled_from([{}, {"a": 1}, None, [], [1], "p", 0]),
    "result": st.sampled_from([{}, {"x": [1]}, None, [], "r", 3]),
    "error": st.one_of(
        st.fixed_dictionaries(
            {"code": st.sampled_from([-32600, 0, 7])},
            optional={"message": st.sampled_from(["m", ""]), "data": st.just({"d": 1})},
        ),
        st.fixed_dictionaries({"code": st.sampled_from([1.0, "1", True, None]),
                               "message": st.just("m")}),
        st.fixed_dictionaries({"code": st.just(1),
                               "message": st.sampled_from([None, 5, ["m"]])}),
        st.sampled_from([None, "e", [], 1]),
    ),
}


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {}
    for key, values in member_values.items():
        if draw(st.integers(0, 2)):  # present two times out of three
            message[key] = draw(values)
    return message


def is_id(value: Any) -> bool:
    return type(value) in (int, str)


def oracle(m: dict[str, Any]) -> tuple[str, Any]:
    """What the envelope rules say about ``m``, written independently of the codec.

    Returns ("ok", parsed) or ("refused", reply_id or NO_REPLY)."""
    has_id = "id" in m
    readable = m.get("id") if has_id and is_id(m.get("id")) else None
    version_ok = m.get("jsonrpc") == "2.0"
    params_ok = "params" not in m or type(m["params"]) is dict
    if m.get("method") is not None or ("result" not in m and "error" not in m):
        # a request, a notification, or unrecognisable
        if not isinstance(m.get("method"), str):
            return "refused", readable  # unrecognisable: always answered
        if not has_id:  # notification-shaped: never answered
            ok = version_ok and params_ok and "result" not in m and "error" not in m
            return ("ok", (NOTE, None, m["method"], m.get("params"))) if ok else (
                "refused", NO_REPLY)
        ok = (version_ok and readable is not None and params_ok
              and "result" not in m and "error" not in m)
        return ("ok", (REQ, m["id"], m["method"], m.get("params"))) if ok else (
            "refused", readable)
    # response-shaped: never answered
    if not version_ok or ("result" in m and "error" in m):
        return "refused", NO_REPLY
    if "result" in m:
        if readable is None or type(m["result"]) is not dict:
            return "refused", NO_REPLY
        return "ok", (RES, m["id"], None, m["result"])
    error = m["error"]
    id_ok = not has_id or m["id"] is None or readable is not None
    error_ok = (type(error) is dict and type(error.get("code")) is int
                and type(error.get("message")) is str)
    if not (id_ok and error_ok):
        return "refused", NO_REPLY
    return "ok", (ERR, readable, None, error)


@SETTINGS
@given(message=envelopes())
def test_parse_agrees_with_the_oracle(json_backend: str, message: dict[str, Any]) -> None:
    expected = oracle(message)
    # Through the JSON text, so that the backend's reading of each member counts too.
    text = json.dumps(message).encode()
    try:
        parsed = parse(decode(text))
    except InvalidMessage as exc:
        assert expected[0] == "refused", f"{message} refused: {exc.message}"
        assert exc.code == ErrorCode.INVALID_REQUEST
        if expected[1] is NO_REPLY:
            assert exc.reply is False, f"{message} must not be answered"
        else:
            assert exc.reply is True, f"{message} must be answered"
            assert exc.request_id == expected[1]
            assert type(exc.request_id) is type(expected[1])
    else:
        assert expected[0] == "ok", f"{message} accepted as {parsed}"
        assert parsed == expected[1]
        assert type(parsed[1]) is type(expected[1][1])


@SETTINGS
@given(message=envelopes())
def test_answered_iff_request_shaped_with_id_or_unrecognisable(
    json_backend: str, message: dict[str, Any]
) -> None:
    # The direct statement of "notifications and responses are never answered".
    try:
        parse(decode(json.dumps(message).encode()))
    except InvalidMessage as exc:
        method = message.get("method")
        response_shaped = method is None and ("result" in message or "error" in message)
        notification_shaped = isinstance(method, str) and "id" not in message
        assert exc.reply is not (response_shaped or notification_shaped)
        if exc.reply and exc.request_id is not None:
            assert exc.request_id == message["id"]


# -- builders round-trip through decode/parse --------------------------------------------------

request_ids = st.one_of(st.integers(-(2**63), 2**64 - 1), st.text(max_size=8))
params_values = st.one_of(
    st.none(),
    st.dictionaries(st.text(max_size=5), st.one_of(st.integers(-(2**63), 2**63), st.text(),
                                                   st.booleans(), st.none()), max_size=3),
)


@SETTINGS
@given(request_id=request_ids, method=st.text(max_size=20), params=params_values,
       data=st.data())
def test_built_messages_parse_back(json_backend: str, request_id: Any, method: str,
                                   params: dict[str, Any] | None, data: st.DataObject) -> None:
    req = parse(decode(encode(request_message(request_id, method, params))))
    assert req == (REQ, request_id, method, params)
    note = parse(decode(encode(notification_message(method, params))))
    assert note == (NOTE, None, method, params)
    result = params or {}
    assert parse(decode(encode(result_message(request_id, result)))) == (
        RES, request_id, None, result)
    code = data.draw(st.integers(-(2**31), 2**31))
    maybe_id = data.draw(st.one_of(st.none(), st.just(request_id)))
    err = parse(decode(encode(error_message(maybe_id, code, method, params))))
    expected_error: dict[str, Any] = {"code": code, "message": method}
    if params is not None:
        expected_error["data"] = params
    assert err == (ERR, maybe_id, None, expected_error)


def test_builders_write_the_jsonrpc_shape(json_backend: str) -> None:
    assert json.loads(encode(request_message(1, "ping", None))) == {
        "jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert json.loads(encode(notification_message("n", {"a": 1}))) == {
        "jsonrpc": "2.0", "method": "n", "params": {"a": 1}}
    assert json.loads(encode(error_message(None, -32700, "Parse error"))) == {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
