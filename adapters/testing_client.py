"""The documented import path of :mod:`mcp_sansio.adapters.tools.testing_client`, kept for the
applications and docs that use it: the code lives with the other tools in
``adapters/tools/``; this module only re-exports its public names."""

from .tools.testing_client import *  # noqa: F403

if __name__ == "__main__":  # python -m mcp_sansio.adapters.testing_client relay ...
    import sys

    from .tools.testing_client import _main

    sys.exit(_main(sys.argv[1:]))
