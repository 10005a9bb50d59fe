#!/usr/bin/python3
# Rank 0 of a step binds and listens on MASTER_PORT (what torch's TCPStore
# does), records it, and holds it until `release` appears, so two steps of
# different jobs hold their ports at the same time.
import os, socket, sys, time

workdir, tag = sys.argv[1], sys.argv[2]
if os.environ.get("RANK") != "0":
    sys.exit(0)
port = int(os.environ["MASTER_PORT"])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", port))
s.listen()
with open(os.path.join(workdir, tag + ".port"), "w") as f:
    f.write(f"{port} {os.environ.get('SLURMD_NODENAME')}\n")
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(workdir, "release")):
    if time.monotonic() > deadline:
        sys.exit("never released")
    time.sleep(0.05)
