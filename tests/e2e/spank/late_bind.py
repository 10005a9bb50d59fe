#!/usr/bin/python3
"""A step whose rank 0 binds its ports late, as a JAX coordinator or a
service started after the program's imports does.

    late_bind.py OUT TAG DELAY WHICH HOW

WHICH: coordinator (JAX_COORDINATOR_ADDRESS's port), ports (DP_PORTS) or all.
HOW:   reuseport: servers that set SO_REUSEPORT (the coordinator is a real
       gRPC server where python3-grpcio is installed, as JAX's is; otherwise
       a socket with SO_REUSEPORT, the option gRPC sets); plain: SO_REUSEADDR
       only, as PyTorch's TCPStore, Ray, etcd and NATS bind.

Rank 0 notes its start (just after exec) and, DELAY seconds later, binds and
listens on each port; it writes OUT/TAG.rank0: "start T0", then per port
"PORT bound TIME HOW" or "PORT failed TIME ERRNO", then "served TIME" once
rank 1 was answered on every port (the ports still listening). Rank 1 (on
another node) reaches each port and checks that rank 0 of its own step
answers (not a hold, not a stranger): OUT/TAG.rank1, "PORT ok" or
"PORT wrong|none WHAT". A failed bind ends rank 0 with status 3.

    late_bind.py --check OUT TAG protected|exposed|refused

reads those files and OUT/probe.report (squatter.py --probe: "PORT FIRST
LAST" per run of a stranger's successful binds) and says in one line whether
the step's ports were never the stranger's from rank 0's start until it had
served (protected), whether the stranger bound one between rank 0's start and
its bind (exposed: the documented limit), or whether rank 0's bind failed
with EADDRINUSE (refused); exit status 0 when so.
"""
import errno
import os
import socket
import sys
import threading
import time

t0 = time.time()


def read_lines(path):
    try:
        with open(path) as f:
            return [line.split() for line in f]
    except FileNotFoundError:
        return []


def checked(out, tag, want):
    """The verdict on one step, from its files and the stranger's probe."""
    rank0, rank1 = read_lines(f"{out}/{tag}.rank0"), read_lines(f"{out}/{tag}.rank1")
    start = next((float(w[1]) for w in rank0 if w[0] == "start"), None)
    binds = [w for w in rank0 if w[0].isdigit()]
    served = next((float(w[1]) for w in rank0 if w[0] == "served"), None)
    runs = [w for w in read_lines(f"{out}/probe.report") if w and w[0].isdigit()]
    if start is None or not binds:
        return False, f"{tag}: rank 0 left no record"
    if want == "refused":
        ok = any(w[1] == "failed" and w[3] == "EADDRINUSE" for w in binds)
        return ok, f"{tag}: rank 0's binds: " + ", ".join(" ".join(w[:2] + w[3:]) for w in binds)
    end = served if want == "protected" else max(float(w[2]) for w in binds)
    # A run that began before rank 0's start began after its exec, while the
    # interpreter loaded (the port was held until then). One that began at
    # `end` itself began when rank 0 let go: it closes its listeners on exit
    # right after writing "served", and both times are rounded to the same
    # millisecond (seen: the probe's bind in the millisecond of "served").
    taken = [f"port {r[0]} from {float(r[1]) - start:+.3f} s"
             for r in runs for w in binds
             if r[0] == w[0] and float(r[1]) < (end or float("inf")) and float(r[2]) >= start]
    if want == "exposed":
        bound = ", ".join(f"{w[0]} at +{float(w[2]) - start:.2f} s" for w in binds)
        return bool(taken), (f"{tag}: dptest2 bound {', '.join(taken) or 'nothing'} (from rank 0's "
                             f"start); the program bound {bound}")
    failed = [" ".join(w) for w in binds if w[1] != "bound"] + [" ".join(w) for w in rank1 if w[1] != "ok"]
    if failed or served is None or len(rank1) != len(binds) or taken:
        return False, (f"{tag}: failed {failed}, served {served} (+{(served or start) - start:.3f} s), "
                       f"rank 1 {len(rank1)}/{len(binds)}, dptest2 bound {taken}")
    return True, f"{tag}: {len(binds)} ports bound {binds[0][3]} +{float(binds[0][2]) - start:.2f} s after rank 0's start, none the stranger's"


if sys.argv[1] == "--check":
    ok, line = checked(*sys.argv[2:5])
    print(line)
    sys.exit(0 if ok else 1)
out, tag, delay, which, how = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
rank = int(os.environ["SLURM_PROCID"])
step = f'{os.environ["SLURM_JOB_ID"]}.{os.environ["SLURM_STEP_ID"]}'.encode()
host, coordinator = os.environ["JAX_COORDINATOR_ADDRESS"].rsplit(":", 1)
ports = []
if which in ("coordinator", "all"):
    ports.append(("coordinator", int(coordinator)))
if which in ("ports", "all"):
    ports += [("port", int(p)) for p in os.environ["DP_PORTS"].split(",")]
try:
    import grpc
    from concurrent import futures
except ImportError:
    grpc = None
use_grpc = grpc is not None and how == "reuseport"
called = threading.Event()  # rank 1 called the gRPC coordinator


def note(suffix, line):
    with open(f"{out}/{tag}.{suffix}", "a") as f:
        f.write(line + "\n")


def grpc_server(port):
    """JAX's coordinator is a gRPC server on [::]:port, built with no channel
    arguments: gRPC sets SO_REUSEPORT by default."""
    def who(request, context):
        called.set()
        return step

    answer = grpc.unary_unary_rpc_method_handler(who)
    server = grpc.server(futures.ThreadPoolExecutor(2))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("dp.Test", {"Who": answer}),))
    try:
        bound = server.add_insecure_port(f"[::]:{port}")
    except RuntimeError:
        bound = 0
    if bound != port:
        raise OSError(errno.EADDRINUSE, "gRPC could not bind")
    server.start()
    return server


def socket_server(port):
    s = socket.socket(socket.AF_INET6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if how == "reuseport":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("::", port))
    s.listen()
    return s


def serve():
    note("rank0", f"start {t0:.3f}")
    time.sleep(delay)  # the program's late start is this test's subject
    servers, failed = [], False
    for kind, port in ports:
        try:
            if kind == "coordinator" and use_grpc:
                servers.append(("grpc", grpc_server(port)))
            else:
                servers.append(("socket", socket_server(port)))
            note("rank0", f"{port} bound {time.time():.3f} {'grpc' if servers[-1][0] == 'grpc' else how}")
        except OSError as e:
            note("rank0", f"{port} failed {time.time():.3f} {errno.errorcode.get(e.errno, e.errno)}")
            failed = True
    if failed:
        sys.exit(3)
    if int(os.environ["SLURM_NTASKS"]) > 1:
        for kind, s in servers:
            if kind == "socket":
                s.settimeout(60)
                conn, _ = s.accept()
                conn.sendall(step)
                conn.close()
            else:
                called.wait(60)
    note("rank0", f"served {time.time():.3f}")


def reach(kind, port):
    if kind == "coordinator" and use_grpc:
        with grpc.insecure_channel(f"{host}:{port}") as channel:
            return channel.unary_unary("/dp.Test/Who")(b"", timeout=60, wait_for_ready=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection((host, port), timeout=5) as c:
                return c.recv(64)
        except OSError:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)  # rank 0 binds DELAY seconds after its start


def check():
    for kind, port in ports:
        got = reach(kind, port)
        note("rank1", f"{port} ok" if got == step else f"{port} {'none' if got is None else 'wrong'} {got!r}")


serve() if rank == 0 else check()
