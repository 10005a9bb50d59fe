#!/usr/bin/python3
"""One task of a --dp-ports step: records what it was told and, on rank 0,
holds every port of the step at once.

Every task writes "MASTER_PORT DP_PORTS JAX_COORDINATOR_ADDRESS" to
OUT/TAG.RANK. Rank 0 then binds and listens on every DP_PORTS port at once,
or with DP_PORTS_LISTEN_FDS checks that each inherited descriptor listens on
exactly its port and that no new socket can bind it; it writes
OUT/TAG.bound ("bound" or "passed") and keeps the ports until OUT/release
appears, so two steps hold theirs at the same time.
"""
import errno
import os
import socket
import sys
import time

out, tag = sys.argv[1], sys.argv[2]
rank = int(os.environ["RANK"])
ports = [int(p) for p in os.environ.get("DP_PORTS", "").split(",") if p]
told = " ".join(os.environ.get(k, "-") for k in ("MASTER_PORT", "DP_PORTS", "JAX_COORDINATOR_ADDRESS"))
with open(f"{out}/{tag}.{rank}", "w") as f:
    f.write(told + "\n")
if rank != 0:
    sys.exit(0)


def fail(msg):
    sys.exit(f"step_ports {tag} rank 0: {msg}")


def unbindable(port):
    probe = socket.socket()
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("", port))
    except OSError as e:
        return e.errno == errno.EADDRINUSE
    return False


fds = os.environ.get("DP_PORTS_LISTEN_FDS")
held = []
if fds is None:
    for p in ports:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", p))  # raises on a port someone else has
        s.listen()
        held.append(s)
    how = "bound"
else:
    numbers = [int(fd) for fd in fds.split(",")]
    if len(numbers) != len(ports):
        fail(f"DP_PORTS_LISTEN_FDS={fds} for DP_PORTS={ports}")
    for fd, p in zip(numbers, ports):
        s = socket.socket(fileno=fd)
        if s.getsockname()[1] != p:
            fail(f"descriptor {fd} is bound to {s.getsockname()[1]}, not {p}")
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) != 1:
            fail(f"descriptor {fd} (port {p}) is not listening")
        if not unbindable(p):
            fail(f"a new socket could bind port {p}: it was not held")
        held.append(s)
    how = "passed"
with open(f"{out}/{tag}.bound", "w") as f:
    f.write(how + "\n")
deadline = time.monotonic() + 120
while not os.path.exists(f"{out}/release"):
    if time.monotonic() > deadline:
        fail("never released")
    time.sleep(0.05)
