"""The high-level layer, sans-IO: what the ``Client`` and ``Server`` of every runtime share.

Theory of operation
-------------------
The core (:mod:`mcp_sansio`) speaks the protocol; this layer speaks the application: the
outcome of a call (:mod:`.errors`), the server registry and the handler context, the client
logic, the tasks store and the HTTP service logic. Like the core it owns no I/O, clock,
lock or randomness: time arrives as ``now``, ids are handed in, and everything that waits or
writes is done by a runtime in :mod:`mcp_sansio.adapters`. The purity test that covers the
core covers this package too, so an embedder who drives the core from their own event loop
gets the same registry and call bookkeeping as the bundled runtimes.

Layers import one way: core <- app <- runtime glue (``mcp_sansio.adapters``) <- tools.
"""
