"""Runtime adapters (asyncio, trio, threads) that wire the sans-IO core to real I/O.

Installed as ``mcp_sansio.adapters``. Each adapter only pumps: read, feed the core, drain
events, write, sleep until the next deadline; every protocol decision is the core's.

* ``mcp_sansio.adapters.asyncio`` -- the default runtime (standard library only);
* ``mcp_sansio.adapters.trio`` -- needs the ``trio`` extra;
* ``mcp_sansio.adapters.threading`` -- blocking calls, one reader thread per connection.

Each offers ``connect_stdio`` (a high-level ``Client`` on a spawned server) and
``serve_stdio`` / ``run_stdio`` (serve a ``Server`` definition on stdin/stdout). Importing
this package imports no runtime.
"""
