"""Runtime adapters (trio, asyncio, threads) that wire the sans-IO core to real I/O.

Installed as ``mcp_sansio.adapters``. Each adapter only pumps: read, feed the core, drain
events, write, sleep until the next deadline. Filled in by the stdio and HTTP work.
"""
