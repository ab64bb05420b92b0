"""argparse for the ``mcp-sansio`` command line, told the terminal's width.

Left to find the width itself, argparse's help formatter imports :mod:`shutil` (and with it
the compression modules) each time a parser is built: every start of every command,
``serve-example``'s cold start included. :class:`Parser` gives its formatter the width as
:func:`shutil.get_terminal_size` would find it, without that import. It lives among the tools,
not in ``mcp_sansio/__main__.py``: reading the environment and the terminal is I/O, which
the core does not do."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

__all__ = ["HelpFormatter", "Parser", "terminal_columns"]


def terminal_columns() -> int:
    """The terminal's width as :func:`shutil.get_terminal_size` finds it (``COLUMNS``, then
    the terminal on stdout, else 80), without importing shutil."""
    with contextlib.suppress(ValueError):
        if (columns := int(os.environ.get("COLUMNS", "0"))) > 0:
            return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, given the width: left to find it, it imports shutil (and
    its compression modules) each time a parser is built -- every start of every command,
    ``serve-example``'s cold start included."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_columns() - 2 if width is None else width)


class Parser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` with :class:`HelpFormatter` unless told otherwise."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
