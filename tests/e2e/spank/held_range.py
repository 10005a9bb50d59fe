#!/usr/bin/python3
# Another tenant binds and listens on every port of LOW-HIGH, says so in
# WORKDIR/held.ready, and keeps them until killed.
import socket, sys, time

low, high, workdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
held = []
for port in range(low, high + 1):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", port))
    s.listen()
    held.append(s)
with open(workdir + "/held.ready", "w") as f:
    f.write(" ".join(str(s.getsockname()[1]) for s in held) + "\n")
time.sleep(600)
