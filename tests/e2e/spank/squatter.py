#!/usr/bin/python3
# Another tenant of the node, in one of two ways; either stops when
# WORKDIR/squatter.stop appears (or after 10 minutes).
#
#   squatter.py LEASE_DIR LOW HIGH WORKDIR
# Binds every other port of the lease range at once, then watches the lease
# folder and binds any port it sees leased, and tries to take the folder's
# lock. Writes what it managed to WORKDIR/squatter.report.
#
#   squatter.py --probe LOW-HIGH[,LOW-HIGH...] WORKDIR
# Never holds a port: binds each port of the ranges in turn (SO_REUSEADDR, as
# servers bind, and SO_REUSEPORT, which would let it share a port with a socket
# of its own uid), listens, answers any connection for a millisecond, closes,
# and starts over. Writes WORKDIR/probe.report: "accepted=N" (connections it
# answered), then "PORT FIRST LAST" for each run of successful binds of a
# port (the port bound again within 0.2 s extends the run; wall-clock times).
import fcntl, os, select, socket, sys, time

DEADLINE = time.monotonic() + 600


def stopped(workdir):
    return os.path.exists(os.path.join(workdir, "squatter.stop")) or time.monotonic() > DEADLINE


def bind(port, keep, dual_stack=False, reuseport=False):
    """A listener on every address of `port` (IPv6 dual-stack where asked
    and the node has it, as PyTorch's TCPStore binds), kept in `keep`."""
    s = socket.socket(socket.AF_INET6 if dual_stack and socket.has_ipv6 else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuseport:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    if s.family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    try:
        s.bind(("", port))
        s.listen()
    except OSError:
        s.close()
        return None
    keep.append(s)
    return s


def squat(lease_dir, low, high, workdir):
    held, stolen = [], set()
    denied_list = denied_lock = 0
    squatted = [p for p in range(low, high + 1, 2) if bind(p, held)]
    with open(os.path.join(workdir, "squatter.ready"), "w") as f:
        f.write(" ".join(map(str, squatted)) + "\n")
    while not stopped(workdir):
        try:
            for name in os.listdir(lease_dir):
                if name.isdigit() and int(name) not in stolen and bind(int(name), held):
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


def probe(ranges, workdir):
    ports = [p for r in ranges.split(",") for p in range(int(r.split("-")[0]), int(r.split("-")[1]) + 1)]
    runs, accepted, sweeps = {}, 0, 0
    while not stopped(workdir):
        for port in ports:
            one = []
            s = bind(port, one, dual_stack=True, reuseport=True)
            if s is None:
                continue
            now = time.time()
            mine = runs.setdefault(port, [])
            if mine and now - mine[-1][1] < 0.2:
                mine[-1][1] = now
            else:
                mine.append([now, now])
            if select.select([s], [], [], 0.001)[0]:
                c, _ = s.accept()
                accepted += 1
                c.sendall(b"a stranger answers\n")
                c.close()
            s.close()
        sweeps += 1
        if sweeps == 1:
            open(os.path.join(workdir, "probe.ready"), "w").close()
    with open(os.path.join(workdir, "probe.report"), "w") as f:
        f.write(f"accepted={accepted} sweeps={sweeps}\n")
        for port, mine in sorted(runs.items()):
            for first, last in mine:
                f.write(f"{port} {first:.3f} {last:.3f}\n")


if sys.argv[1] == "--probe":
    probe(sys.argv[2], sys.argv[3])
else:
    squat(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
