"""The documented import path of :mod:`mcp_sansio.adapters.tools.testing_server`, kept for the
applications and docs that use it: the code lives with the other tools in
``adapters/tools/``; this module only re-exports its public names."""

from .tools.testing_server import *  # noqa: F403
