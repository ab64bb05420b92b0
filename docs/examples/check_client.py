"""Check a client: this package's own conformance client, over Streamable HTTP.

The kit serves HTTP on 127.0.0.1 and runs the command with the server's URL appended.
"""

import sys

from mcp_sansio.adapters.testing_client import check_client

report = check_client([sys.executable, "-m", "mcp_sansio", "conformance-client"],
                      http=True, era="handshake", budget=60, call_timeout=10)
print(report.summary())
for finding in report:  # Finding objects: rule, requirement, detail, received...
    print(finding.rule, finding.requirement, finding.detail)
