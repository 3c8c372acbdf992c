"""A server that will not start and will not stop: it answers every request with an
error, and ignores both the end of its stdin and SIGTERM (only SIGKILL ends it).

The SDK's client then fails its start at once and spends seconds stopping it
(stdin closed, a grace, SIGTERM, a grace, SIGKILL): long enough for a start-up
timeout to land in the middle. Without its parent it ends, and in any case
after STUBBORN_LIFE seconds, so no test can leave it behind for long. Its
pid goes to the file its one argument names.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import threading
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: ends with its parent
threading.Timer(float(os.environ.get("STUBBORN_LIFE", "120")), os._exit, (0,)).start()
with open(sys.argv[1], "w") as pid:
    pid.write(str(os.getpid()))
for line in sys.stdin:
    request = json.loads(line)
    if "id" in request:
        error = {"code": -32603, "message": "this server will not start"}
        answer = {"jsonrpc": "2.0", "id": request["id"], "error": error}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
# The end of stdin: a server should exit now; this one stays, stdout open.
while True:
    time.sleep(3600)
