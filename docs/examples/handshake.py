"""A client and a server connection driven by hand, with no I/O at all.

Run it: ``python docs/examples/handshake.py`` (it checks itself with asserts).
"""

from mcp_sansio import (
    NEED_DATA,
    ClientConnection,
    Initialized,
    Request,
    Response,
    ServerConnection,
    State,
)


def drain(conn):
    """Every event the input so far produced (the first half of the call-order contract)."""
    events = []
    while (event := conn.next_event()) is not NEED_DATA:
        events.append(event)
    return events


client = ClientConnection(info={"name": "demo-client", "version": "1.0"})
server = ServerConnection(
    info={"name": "demo-server", "version": "1.0"},
    capabilities={"tools": {}},
)

# 1. The client queues initialize; its outbox now holds one line of JSON.
client.initialize(now=0.0)
wire = client.data_to_send()
assert wire.startswith(b'{"jsonrpc":"2.0","id":1,"method":"initialize"')

# 2. The server's core answers initialize itself: no event for the application.
server.receive_data(wire, now=0.0)
assert drain(server) == []
assert server.state is State.INITIALIZING

# 3. The client accepts the result, queues notifications/initialized and reports Initialized.
client.receive_data(server.data_to_send(), now=0.1)
[event] = drain(client)
assert isinstance(event, Initialized)
assert event.protocol_version == "2025-11-25" and "tools" in event.peer_capabilities
assert client.state is State.OPERATING

# 4. The server sees notifications/initialized: the handshake is complete on both sides.
server.receive_data(client.data_to_send(), now=0.1)
[event] = drain(server)
assert isinstance(event, Initialized) and server.state is State.OPERATING

# 5. A request, answered by the application on the server side.
request_id = client.send_request("tools/list", now=1.0)
assert client.next_deadline() == 61.0  # now + DEFAULT_REQUEST_TIMEOUT
server.receive_data(client.data_to_send(), now=1.0)
[request] = drain(server)
assert isinstance(request, Request) and request.method == "tools/list"
server.send_response(request.request_id, {"tools": []})

client.receive_data(server.data_to_send(), now=1.5)
[response] = drain(client)
assert isinstance(response, Response)
assert response.request_id == request_id and response.result == {"tools": []}
assert client.next_deadline() is None  # nothing in flight, nothing to wake up for

# 6. ping is answered by the core, whoever sends it, with no event on the receiving side.
ping_id = server.send_request("ping", now=2.0)
client.receive_data(server.data_to_send(), now=2.0)
assert drain(client) == []
server.receive_data(client.data_to_send(), now=2.0)
assert drain(server) == [Response(request_id=ping_id, result={}, method="ping")]

print("ok")
