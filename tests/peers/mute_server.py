"""A stdio peer that reads everything and never writes a byte: for the initialize timeout."""

import sys

for _line in sys.stdin:
    pass
