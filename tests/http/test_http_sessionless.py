"""The sessionless mode (``HTTPServer(sessionless=True)``): handshake-era clients served with
no session kept, so that any process can serve any request -- and what the mode gives up is
refused at once, never left to hang."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import (
    CancelRequested,
    LocalProtocolError,
    Request,
    ServerConnection,
    SessionlessError,
    State,
)
from mcp_sansio._capabilities import declared
from mcp_sansio._sessionless import WITHDRAWN_CAPABILITIES, withdraw
from mcp_sansio.http import ResponseMode
from tests.http_util import SERVER_INFO, Harness, answer_everything, init_body, validate_messages

V = "2025-11-25"
CAPABILITIES = {"tools": {"listChanged": True}, "logging": {}, "prompts": {"listChanged": True},
                "resources": {"subscribe": True, "listChanged": True}, "tasks": {"list": {}}}


def factory(versions: tuple[str, ...] | None = None) -> Any:
    def make() -> ServerConnection:
        return ServerConnection(info=SERVER_INFO, capabilities=CAPABILITIES, versions=versions)
    return make


def harness(**options: Any) -> Harness:
    options.setdefault("connection", factory())
    return Harness(sessionless=True, new_session_id=None, **options)


def call(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


def version(v: str = V) -> list[tuple[str, str]]:
    return [("mcp-protocol-version", v)]


class Deferred:
    """An application that answers nothing by itself: the test decides."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def __call__(self, session: Any, event: Any) -> None:
        if isinstance(event, Request):
            self.requests.append((session, event))


def test_initialize_is_answered_with_no_session_id_and_nothing_is_kept() -> None:
    h = harness()
    r = h.conn().send(body=init_body(V))
    assert r.status == 200
    assert "mcp-session-id" not in r.headers
    validate_messages(V, r.messages, {0: "initialize"})
    result = r.messages[0]["result"]
    assert result["protocolVersion"] == V
    # What needs a session is not declared: no list-changed, no subscriptions, no tasks.
    assert result["capabilities"] == {"tools": {}, "logging": {}, "prompts": {},
                                      "resources": {}}
    assert not h.server.sessions


def test_a_call_is_served_by_another_server_that_never_saw_the_initialize() -> None:
    # Two servers stand for two processes behind a round-robin balancer.
    first, second = harness(), harness()
    assert first.conn().send(body=init_body(V)).status == 200
    assert second.conn().send(
        body={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers=version()).status == 202
    r = second.conn().send(body=call("tools/call", {"name": "x", "arguments": {}}),
                           headers=version())
    assert r.status == 200
    assert r.messages[0]["result"]["content"][0]["text"] == "ok"
    (session, event), = [(s, e) for s, e in second.events if isinstance(e, Request)]
    assert event.method == "tools/call" and session.id is None
    conn = session.connection
    assert conn.state is State.OPERATING and conn.protocol_version == V
    assert conn.peer_capabilities == {} and conn.sessionless
    assert not second.server.sessions


@pytest.mark.parametrize("header", ["2025-03-26", "2025-06-18", "2025-11-25", None])
def test_the_revision_is_the_header_s_and_2025_03_26_without_one(header: str | None) -> None:
    h = harness()
    r = h.conn().send(body=call("tools/list"), headers=version(header) if header else ())
    assert r.status == 200
    (session, _), = [(s, e) for s, e in h.events if isinstance(e, Request)]
    assert session.connection.protocol_version == (header or "2025-03-26")


def test_without_a_header_a_server_that_does_not_speak_2025_03_26_asks_for_one() -> None:
    h = harness(connection=factory(("2025-06-18", "2025-11-25")))
    r = h.conn().send(body=call("tools/list"))
    assert r.status == 400 and "MCP-Protocol-Version" in r.json["error"]["message"]
    assert not h.events


def test_an_unsupported_revision_is_refused_as_usual() -> None:
    h = harness()
    r = h.conn().send(body=call("tools/list"), headers=version("2099-01-01"))
    assert r.status == 400 and not h.events


def test_a_2025_03_26_batch_is_served_by_one_fresh_connection() -> None:
    h = harness()
    r = h.conn().send(body=[call("tools/list", request_id=1), call("prompts/list", request_id=2)],
                      headers=version("2025-03-26"))
    assert r.status == 200
    replies = r.messages[0] if not r.is_sse else r.messages
    assert sorted(m["id"] for m in replies) == [1, 2]
    sessions = {id(s) for s, e in h.events if isinstance(e, Request)}
    assert len(sessions) == 1


@pytest.mark.parametrize("method", ["GET", "DELETE", "HEAD"])
def test_get_and_delete_are_405_naming_post_only(method: str) -> None:
    h = harness()
    r = h.conn().send(method, headers=version())
    assert r.status == 405 and r.headers["allow"] == "POST"


def test_notifications_and_responses_are_accepted_and_dropped() -> None:
    h = harness()
    for body in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 7}},
                 {"jsonrpc": "2.0", "id": 3, "result": {}}):
        assert h.conn().send(body=body, headers=version()).status == 202
    assert not h.events


def test_a_session_id_is_not_ours_and_is_answered_404() -> None:
    h = harness()
    r = h.conn().send(body=call("tools/list"),
                      headers=[*version(), ("mcp-session-id", "from-a-stateful-server")])
    assert r.status == 404 and "initialize again" in r.json["error"]["message"]


def test_set_level_is_refused_naming_the_mode_and_subscribe_is_not_offered() -> None:
    h = harness()
    r = h.conn().send(body=call("logging/setLevel", {"level": "info"}), headers=version())
    error = r.messages[0]["error"]
    assert error["code"] == -32600 and "sessionless mode" in error["message"]
    r = h.conn().send(body=call("resources/subscribe", {"uri": "file:///x"}), headers=version())
    assert r.messages[0]["error"]["code"] == -32601
    # The core answered both: the application only hears that they were refused.
    assert not [e for _, e in h.events if isinstance(e, Request)]


def test_a_ping_from_the_client_is_answered() -> None:
    h = harness()
    r = h.conn().send(body=call("ping"), headers=version())
    assert r.messages == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


@pytest.mark.parametrize("method", ["elicitation/create", "sampling/createMessage",
                                    "roots/list", "ping"])
def test_a_request_to_the_client_raises_at_once_naming_the_mode(method: str) -> None:
    app = Deferred()
    h = harness(handler=app)
    r = h.conn().send(body=call("tools/call", {"name": "x"}), headers=version())
    (session, event), = app.requests
    with pytest.raises(SessionlessError, match="sessionless mode") as caught:
        session.connection.send_request(method, {}, related_request_id=event.request_id)
    assert isinstance(caught.value, LocalProtocolError)
    assert method in str(caught.value)
    # Nothing was queued: the request is still the handler's to answer.
    session.connection.send_error(event.request_id, -32603, "Internal error")
    session.flush()
    h.run()
    assert r.messages[0]["error"]["code"] == -32603


def test_streams_are_not_resumable_and_closing_one_cancels_its_request() -> None:
    app = Deferred()
    h = harness(handler=app)
    conn = h.conn()
    r = conn.send(body=call("tools/call", {"name": "slow"}), headers=version())
    assert r.is_sse and r.status == 200
    assert all(e.id is None for e in r.events)  # no event ids: nothing to resume from
    conn.close()
    assert [e.request_id for e in h.events_of(CancelRequested)] == [1]


def test_json_mode_answers_with_json() -> None:
    h = harness(response_mode=ResponseMode.JSON)
    r = h.conn().send(body=call("tools/list"), headers=version())
    assert r.status == 200 and r.headers["content-type"] == "application/json"


def test_the_connections_of_answered_requests_are_not_kept() -> None:
    h = harness()
    for _ in range(3):
        h.conn().send(body=call("tools/list"), headers=version())
    refs = [weakref.ref(s) for s, _ in h.events]
    h.events.clear()
    gc.collect()
    assert refs and all(ref() is None for ref in refs)


def test_the_2026_era_is_served_as_before_on_a_sessionless_server() -> None:
    h = harness()
    body = call("tools/list", {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}})
    r = h.conn().send(body=body, headers=[("mcp-protocol-version", "2026-07-28"),
                                          ("mcp-method", "tools/list")])
    assert r.status == 200 and r.json["result"]["resultType"] == "complete"


def test_the_mode_needs_no_session_ids_and_refuses_legacy_sse() -> None:
    harness()  # new_session_id=None: nothing to name
    with pytest.raises(ValueError, match="legacy"):
        harness(legacy_sse_path="/sse")


def test_serve_sessionless_needs_a_fresh_connection_and_a_handshake_revision() -> None:
    conn = ServerConnection(capabilities=CAPABILITIES)
    with pytest.raises(LocalProtocolError, match="handshake-era revision"):
        conn.serve_sessionless("2026-07-28")
    conn.serve_sessionless("2025-06-18")
    with pytest.raises(LocalProtocolError, match=r"fresh connection.*operating"):
        conn.serve_sessionless("2025-06-18")
    assert CAPABILITIES["tools"] == {"listChanged": True}  # the caller's map is not changed


capability_maps = st.dictionaries(
    st.sampled_from(["tools", "prompts", "resources", "logging", "tasks", "completions", "x"]),
    st.one_of(st.just({}), st.dictionaries(
        st.sampled_from(["listChanged", "subscribe", "list", "other"]),
        st.one_of(st.booleans(), st.just({}))), st.booleans()),
)


@given(capability_maps)
def test_withdraw_removes_exactly_the_table_s_capabilities(caps: dict[str, Any]) -> None:
    out = withdraw(caps)
    for path in WITHDRAWN_CAPABILITIES:
        assert not declared(out, path)
    for key, value in caps.items():
        if key in WITHDRAWN_CAPABILITIES:
            continue
        assert key in out
        if isinstance(value, dict):
            kept = {k: v for k, v in value.items()
                    if f"{key}.{k}" not in WITHDRAWN_CAPABILITIES}
            assert out[key] == kept
        else:
            assert out[key] == value


#: What a client may POST to a sessionless server: (body without id, answered?). Requests
#: get ids; notifications and responses are accepted (202) and dropped.
POSTS: list[tuple[dict[str, Any], bool]] = [
    ({"method": "tools/list"}, True),
    ({"method": "tools/call", "params": {"name": "x", "arguments": {}}}, True),
    ({"method": "ping"}, True),
    ({"method": "logging/setLevel", "params": {"level": "debug"}}, True),
    ({"method": "resources/subscribe", "params": {"uri": "file:///x"}}, True),
    ({"method": "no/such/method"}, True),
    ({"method": "initialize", "params": init_body(V)["params"]}, True),
    ({"method": "notifications/initialized"}, False),
    ({"method": "notifications/cancelled", "params": {"requestId": 1}}, False),
    ({"result": {}}, False),
]


@given(st.lists(st.tuples(st.sampled_from(range(len(POSTS))),
                          st.sampled_from([None, "2025-03-26", "2025-06-18", V]),
                          st.booleans()), min_size=1, max_size=12),
       st.sampled_from(list(ResponseMode)))
def test_every_request_is_answered_once_and_nothing_is_kept(
        posts: list[tuple[int, str | None, bool]], mode: ResponseMode) -> None:
    h = harness(response_mode=mode)
    for number, (index, header, defer) in enumerate(posts, start=1):
        body, answered = POSTS[index]
        message = {"jsonrpc": "2.0", **body}
        if "method" not in body or answered:
            message["id"] = number
        # answered while the request is processed (JSON at once), or later (a stream)
        h.handler = None if defer else answer_everything
        r = h.conn().send(body=message, headers=version(header) if header else ())
        if not answered:
            assert r.status == 202 and not r.body
            continue
        requests = [(s, e) for s, e in h.events if isinstance(e, Request)
                    and e.request_id == number]
        for session, event in requests if defer else ():  # the application answers now
            session.connection.send_response(event.request_id, {})
            session.flush()
        h.run()
        replies = [m for m in r.messages if m.get("id") == number and "method" not in m]
        assert r.status == 200 and len(replies) == 1, (r.status, r.messages)
        assert r.done
    assert not h.server.sessions


def test_a_handler_s_elicit_raises_at_once_through_the_adapter() -> None:
    """The high-level API: ``ctx.elicit`` on a sessionless server raises
    :class:`SessionlessError` before anything is sent (the client's capabilities are not even
    looked at: they are unknown here), and an uncaught one is the tool's error result, saying
    why (not a bare -32603)."""
    import asyncio

    from mcp_sansio.adapters.asyncio import Context, Server, connect_http, start_http

    from mcp_sansio import Era

    server = Server("elicits")

    @server.tool(description="Asks for a name; says what happened.")
    async def ask(ctx: Context) -> str:
        try:
            await ctx.elicit("Your name?", {"type": "object", "properties": {}})
        except SessionlessError as exc:
            return f"refused: {exc}"
        return "answered"

    @server.tool(description="Asks for a name and does not catch the refusal.")
    async def ask_blindly(ctx: Context) -> str:
        await ctx.elicit("Your name?", {"type": "object", "properties": {}})
        return "answered"

    async def main() -> tuple[str, Any]:
        async with start_http(server, sessionless=True) as service, connect_http(
                service.url, era=Era.HANDSHAKE,
                elicitation=lambda params: {"action": "accept", "content": {}}) as client:
            said = (await client.call_tool("ask", {}, timeout=30))["content"][0]["text"]
            return said, await client.call_tool("ask_blindly", {}, timeout=30)

    said, failure = asyncio.run(asyncio.wait_for(main(), 60))
    assert said.startswith("refused: elicitation/create cannot be sent")
    assert "sessionless mode" in said
    assert failure["isError"] is True
    assert failure["content"][0]["text"].startswith("elicitation/create cannot be sent")


def test_a_task_augmented_call_is_served_normally_when_tasks_are_withdrawn() -> None:
    """2025-11-25 ``basic/utilities/tasks.mdx``: a receiver that does not declare tasks
    processes the request normally, ignoring the task metadata -- a sessionless server
    withdraws ``tasks`` (the task would outlive its POST, and tasks/get could reach another
    process), so a task-augmented call gets its result, not a task."""
    import asyncio
    import http.client
    import json
    from urllib.parse import urlsplit

    from mcp_sansio.adapters.asyncio import Server, start_http

    server = Server("tasks")
    server.enable_tasks()

    @server.tool(description="Adds one.", task_support="optional")
    async def inc(n: int) -> str:
        return str(n + 1)

    def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        try:
            conn.request("POST", parts.path, json.dumps(body), {
                "content-type": "application/json", "mcp-protocol-version": V,
                "accept": "application/json, text/event-stream"})
            data = conn.getresponse().read()
        finally:
            conn.close()
        text = data.decode()
        if text.startswith("{"):
            return json.loads(text)  # type: ignore[no-any-return]
        (line,) = [x for x in text.splitlines() if x.startswith("data: {")]
        return json.loads(line[6:])  # type: ignore[no-any-return]

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with start_http(server, sessionless=True) as service:
            loop = asyncio.get_running_loop()
            init = await loop.run_in_executor(None, post, service.url, init_body(V))
            answer = await loop.run_in_executor(None, post, service.url, call(
                "tools/call", {"name": "inc", "arguments": {"n": 1}, "task": {"ttl": 60000}}))
            return init, answer

    init, answer = asyncio.run(asyncio.wait_for(main(), 60))
    assert "tasks" not in init["result"]["capabilities"]
    assert answer["result"]["content"][0]["text"] == "2"
    assert "task" not in answer["result"]


def test_serve_example_refuses_sessionless_with_a_shared_store(
        capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_sansio.adapters.tools import _cli

    code = _cli.serve_example("asyncio", transport="http", sessionless=True,
                              store="redis://127.0.0.1:1/0")
    assert code == 2
    assert "choose one" in capsys.readouterr().err
