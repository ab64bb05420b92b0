"""Test hello_server.py with the testing kit: random sessions in every revision."""

import sys
from pathlib import Path

from mcp_sansio.adapters.testing_stdio import StdioTransport

from mcp_sansio.testing import check_peer

SERVER = Path(__file__).with_name("hello_server.py")


def new_server():
    return StdioTransport([sys.executable, str(SERVER)])


report = check_peer(new_server, sessions=5, steps=10, settle_time=0.2)
print(report.summary())
for finding in report:
    print(finding.rule, finding.revision, finding.received)
