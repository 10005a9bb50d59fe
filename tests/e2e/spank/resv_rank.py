#!/usr/bin/python3
"""One task of forged_resv_ports.sh: writes "MASTER_PORT COORDINATOR PASSED"
to OUT/TAG.RANK (COORDINATOR: JAX_COORDINATOR_ADDRESS's port; PASSED: the
port of DP_MASTER_LISTEN_FD, or -) and waits for OUT/release (60 s at most),
so the test can look at every socket of the user's meanwhile."""
import os
import socket
import sys
import time

out, tag = sys.argv[1], sys.argv[2]
rank = os.environ["RANK"]
coordinator = os.environ.get("JAX_COORDINATOR_ADDRESS", ":-").rsplit(":", 1)[1]
passed = "-"
if "DP_MASTER_LISTEN_FD" in os.environ:
    held = socket.socket(fileno=int(os.environ["DP_MASTER_LISTEN_FD"]))
    passed = str(held.getsockname()[1])
with open(f"{out}/{tag}.{rank}.tmp", "w") as f:
    f.write(f"{os.environ['MASTER_PORT']} {coordinator} {passed}\n")
os.rename(f"{out}/{tag}.{rank}.tmp", f"{out}/{tag}.{rank}")
deadline = time.monotonic() + 60
while not os.path.exists(f"{out}/release") and time.monotonic() < deadline:
    time.sleep(0.05)
