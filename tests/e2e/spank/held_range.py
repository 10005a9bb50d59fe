#!/usr/bin/python3
# Another tenant binds and listens on every port of LOW-HIGH, says so in
# WORKDIR/held.ready, and keeps them until killed.
#   held_range.py --busy N WORKDIR: a busy node instead (root, in the node's
#   network namespace): N listeners on ports the kernel picks, more than
#   slurm-dp reads of a socket table, then WORKDIR/busy.ready.
import resource, socket, sys, time

if sys.argv[1] == "--busy":
    n, workdir = int(sys.argv[2]), sys.argv[3]
    resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64, n + 64))
    busy = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy.append(s)
    with open(workdir + "/busy.ready", "w") as f:
        f.write(f"{len(busy)}\n")
    time.sleep(600)
    sys.exit(0)

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
