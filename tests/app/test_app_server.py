"""The server registry's connections share one capabilities dict while nothing registered
changes them (an idle session's memory, issue 14), and follow a change at once."""

from __future__ import annotations

from mcp_sansio.app.server import Server


def test_sessions_share_the_declared_capabilities_until_a_registration_changes_them() -> None:
    server = Server("caps")
    first, second = server.connection(), server.connection()
    assert first.capabilities is second.capabilities
    assert "tools" not in first.capabilities

    @server.tool()
    def echo(text: str) -> str:
        return text

    third = server.connection()
    assert third.capabilities["tools"] == {"listChanged": True}
    assert third.capabilities is not first.capabilities
    assert "tools" not in first.capabilities  # what an open session declared stays as it was
    assert server.connection().capabilities is third.capabilities
