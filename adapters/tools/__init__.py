"""The tools built on the library, apart from it: the ``mcp-sansio`` CLI (``_cli``,
``_check_cli``), the conformance client (``_conformance_client``), the example server
(``_example_server``, ``_asgi_serve``) and the testing kit's transports (``testing_*``).

Theory of operation: nothing in ``mcp_sansio`` or the runtime glue (``mcp_sansio.adapters``)
imports a tool; the tools import the library as any application would. The ``testing_*``
modules are documented API under the adapters' paths too (``mcp_sansio.adapters.testing_server``
and the others re-export them), and ``mcp_sansio/__main__.py`` imports the CLI from here
only when a command runs.
"""
