"""The runtime half of the shared stores (:mod:`mcp_sansio.stores`): the shared HTTP server's
store driver (``driver``), the tasks shared through the stores (``tasks``), the
``requestState`` key ring kept current from the key store (``keys``), and the store thread
where a trio or threads server runs them (``home``). They are written against asyncio (the
stores' interface is awaited); the Redis implementation is :mod:`mcp_sansio.adapters.redis`.
Private: applications use ``stores=`` and the public modules."""
