#!/usr/bin/python3
"""A JAX-shaped start-up: rank 0 serves a coordinator at an address every
task computes, and every other task connects to it and says which step it is
(as jax.distributed.initialize() does with its gRPC coordinator).

MODE dp:  the address is JAX_COORDINATOR_ADDRESS, which slurm-dp sets.
MODE jax: JAX's own Slurm guess: rank 0's node and 61440 + job id mod 4096.
Rank 0 accepts one peer per other task and checks each is of its own step,
writes OUT/TAG.served, and keeps the coordinator up until OUT/release.MODE
appears (so two steps' coordinators live at once). A failure is written to
OUT/TAG.failed and exits non-zero.
"""
import os
import socket
import sys
import time

mode, out, tag = sys.argv[1], sys.argv[2], sys.argv[3]
rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
step = f'{os.environ["SLURM_JOB_ID"]}.{os.environ["SLURM_STEP_ID"]}'
if mode == "dp":
    host, port = os.environ["JAX_COORDINATOR_ADDRESS"].rsplit(":", 1)
else:
    host, port = os.environ["MASTER_ADDR"], 61440 + int(os.environ["SLURM_JOB_ID"]) % 4096
port = int(port)


def fail(msg):
    with open(f"{out}/{tag}.failed", "a") as f:
        f.write(f"rank {rank}: {msg}\n")
    sys.exit(f"jax_shaped {tag} rank {rank}: {msg}")


if rank == 0:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds
    try:
        server.bind(("", port))
    except OSError as e:
        fail(f"cannot bind the coordinator port {port}: {e}")
    server.listen()
    # At JAX's own port a collision can leave one coordinator with no peer
    # (its peers reached the other step's): that is the failure this mode
    # shows, so it need not be waited out for a minute.
    server.settimeout(60 if mode == "dp" else 15)
    for _ in range(world - 1):
        try:
            conn, _ = server.accept()
        except socket.timeout:
            fail(f"a peer never came within {server.gettimeout():.0f} s")
        peer = conn.recv(64).decode()
        conn.close()
        if peer != step:
            fail(f"step {peer}'s task reached step {step}'s coordinator on port {port}")
    with open(f"{out}/{tag}.served", "w") as f:
        f.write(f"{port}\n")
    deadline = time.monotonic() + 120
    while not os.path.exists(f"{out}/release.{mode}"):
        if time.monotonic() > deadline:
            fail("never released")
        time.sleep(0.05)
else:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection((host, port), timeout=5).sendall(step.encode())
            break
        except OSError:
            if time.monotonic() > deadline:
                fail(f"cannot reach the coordinator {host}:{port}")
            time.sleep(0.1)
