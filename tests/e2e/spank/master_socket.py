#!/usr/bin/python3
"""One rank of a --dp-master-socket=pass step: checks what the plugin handed
over, then builds the step's store on it as a user's program would.

Rank 0 must hold DP_MASTER_LISTEN_FD: a listening socket on MASTER_PORT that
no new socket can bind (the port was never free since slurmstepd leased it).
Other ranks must not have it. Where PyTorch's TCPStore takes the socket
(master_listen_fd, torch 2.3+) the ranks form a Gloo group on that store and
all-reduce; on an older torch they meet on the socket itself. Each rank
writes "<mode> ok" to OUT.<rank>, or fails with a message.
"""
import datetime
import errno
import os
import socket
import sys

out, rank, world = sys.argv[1], int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
fd_text = os.environ.get("DP_MASTER_LISTEN_FD")


def fail(msg):
    sys.exit(f"master_socket rank {rank}: {msg}")


def check_handed_socket():
    if rank != 0:
        if fd_text is not None:
            fail(f"DP_MASTER_LISTEN_FD={fd_text} set on a rank other than 0")
        return None
    if fd_text is None:
        fail("rank 0 has no DP_MASTER_LISTEN_FD")
    fd = int(fd_text)
    s = socket.socket(fileno=os.dup(fd))
    if s.getsockname()[1] != port:
        fail(f"the socket is bound to {s.getsockname()[1]}, MASTER_PORT is {port}")
    if s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) != 1:
        fail("the socket is not listening")
    probe = socket.socket(s.family)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("", port))
        fail(f"a new socket could bind MASTER_PORT {port}: the port was not held")
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise
    s.close()
    return fd


def torch_store(fd):
    """The Gloo group on a TCPStore built on the handed socket; None when
    this torch has no master_listen_fd."""
    import torch
    import torch.distributed as dist
    try:
        store = dist.TCPStore(addr, port, world, rank == 0, datetime.timedelta(seconds=60),
                              master_listen_fd=fd, use_libuv=False)
    except TypeError:
        return None
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    if t.item() != world * (world + 1) / 2:
        fail(f"all_reduce gave {t.item()}")
    dist.destroy_process_group()
    return "torch"


def socket_meeting(fd):
    """Without master_listen_fd: rank 0 accepts every peer on the socket."""
    if rank == 0:
        s = socket.socket(fileno=fd)
        s.settimeout(60)
        seen = set()
        for _ in range(world - 1):
            c, _ = s.accept()
            seen.add(int(c.recv(16).decode()))
            c.close()
        if seen != set(range(1, world)):
            fail(f"peers {sorted(seen)} reached rank 0")
    else:
        socket.create_connection((addr, port), timeout=60).sendall(str(rank).encode())
    return "socket"


fd = check_handed_socket()
mode = torch_store(fd) or socket_meeting(fd)
with open(f"{out}.{rank}", "w") as f:
    f.write(f"{mode} ok\n")
