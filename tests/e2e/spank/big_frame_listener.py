#!/usr/bin/python3
# A hostile user's fake dp-rendezvousd: logs every connection (with the uid
# that owns the connecting socket, where this network namespace shows it),
# then answers with the header of a 100 MiB frame and as much of the frame
# as the peer takes. Stops when WORKDIR/listener.stop appears.
#   big_frame_listener.py WORKDIR   (writes listener.port and listener.log there)
import os, socket, struct, sys, threading, time

workdir = sys.argv[1]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", 0))
srv.listen(64)
srv.settimeout(0.1)
port = srv.getsockname()[1]
log_lock = threading.Lock()


def owner_uid(peer_port):
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if int(f[1].split(":")[1], 16) == peer_port and int(f[2].split(":")[1], 16) == port:
                return f[7]
    return "?"


def serve(conn, addr):
    uid = owner_uid(addr[1])
    conn.settimeout(10)
    sent = 0
    try:
        conn.sendall(struct.pack(">I", 100 << 20))
        sent = 4
        chunk = b"\0" * 65536
        while sent < (100 << 20) + 4:
            sent += conn.send(chunk)
    except OSError:
        pass
    conn.close()
    with log_lock, open(os.path.join(workdir, "listener.log"), "a") as f:
        f.write(f"conn from={addr[0]} uid={uid} sent={sent}\n")


with open(os.path.join(workdir, "listener.port.tmp"), "w") as f:
    f.write(f"{port}\n")
os.rename(os.path.join(workdir, "listener.port.tmp"), os.path.join(workdir, "listener.port"))
deadline = time.monotonic() + 600
while not os.path.exists(os.path.join(workdir, "listener.stop")) and time.monotonic() < deadline:
    try:
        conn, addr = srv.accept()
    except socket.timeout:
        continue
    threading.Thread(target=serve, args=(conn, addr), daemon=True).start()
time.sleep(0.2)
