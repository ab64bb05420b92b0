"""The development authorization server on loopback, for trying the OAuth client and testing
protected servers: :class:`DevAuthServer` (the logic is
:class:`mcp_sansio.testing.auth_server.AuthorizationServer`; the command is ``mcp-sansio
dev-auth-server``). Needs the ``testing`` and ``auth`` extras."""

from .tools._dev_auth_server import DevAuthServer

__all__ = ["DevAuthServer"]
