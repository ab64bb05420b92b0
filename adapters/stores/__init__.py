"""The runtime half of the shared stores (:mod:`mcp_sansio.stores`): the shared HTTP server's
store driver (``driver``), the tasks shared through the stores (``tasks``) and the
``requestState`` key ring kept current from the key store (``keys``). They run on asyncio
today (the stores' interface is awaited); the Redis implementation is
:mod:`mcp_sansio.adapters.redis`. Private: applications use ``store=`` and the public modules."""
