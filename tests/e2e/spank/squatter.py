#!/usr/bin/python3
# Another tenant of the node: binds every other port of the lease range at
# once, then watches the lease folder and binds any port it sees leased, and
# tries to take the folder's lock. Writes what it managed to WORKDIR/squatter.report.
#   squatter.py LEASE_DIR LOW HIGH WORKDIR
import fcntl, os, socket, sys, time

lease_dir, low, high, workdir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
held, stolen = [], set()
denied_list = denied_lock = 0


def bind(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("", port))
        s.listen()
    except OSError:
        s.close()
        return False
    held.append(s)
    return True


squatted = [p for p in range(low, high + 1, 2) if bind(p)]
with open(os.path.join(workdir, "squatter.ready"), "w") as f:
    f.write(" ".join(map(str, squatted)) + "\n")
deadline = time.monotonic() + 600
while not os.path.exists(os.path.join(workdir, "squatter.stop")) and time.monotonic() < deadline:
    try:
        for name in os.listdir(lease_dir):
            if name.isdigit() and int(name) not in stolen and bind(int(name)):
                stolen.add(int(name))
    except PermissionError:
        denied_list += 1
    except FileNotFoundError:
        pass
    try:
        with open(os.path.join(lease_dir, ".lock")) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except PermissionError:
        denied_lock += 1
    except OSError:
        pass
    time.sleep(0.005)
with open(os.path.join(workdir, "squatter.report"), "w") as f:
    f.write(f"denied_list={denied_list} denied_lock={denied_lock} squatted={len(squatted)} stolen={len(stolen)}\n")
