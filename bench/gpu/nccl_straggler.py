#!/usr/bin/env python3
"""A rank of scripts/gpu-check's NCCL straggler (issue 57): world 2 on one
GPU, each step some GPU work (torch.cuda._sleep, BASE ms), the slow rank
EXTRA ms more, then two all_reduce (two buckets) and a synchronize, for
SECONDS. The other rank's all_reduce waits on its GPU for the slow one's
(NCCL spins there), which only the flight recorder's GPU times tell
(TORCH_NCCL_ENABLE_TIMING=1). Environment as gpu-check (or slurm-dp) sets
it. Prints "ready at <unix time>" after the first collective and
"steps N in S s" at the end.

  nccl_straggler.py [--slow RANK] [--base MS] [--extra MS] [--seconds S] [--fake]

--fake: no PyTorch, no GPU (gpu-check --cpu): nccl_hang.py's stand-in for
PyTorch's flight recorder, each collective timed as PyTorch times it on the
GPU (from when the rank enqueued it to when both had), the ranks meeting
over a socket on MASTER_PORT; the slow rank sleeps EXTRA ms more a step."""
import os
import socket
import sys
import time

from nccl_hang import FakeRecorder, arg

SLOW = arg("--slow", 1)
BASE_MS = arg("--base", 50.0)
EXTRA_MS = arg("--extra", 25.0)
SECONDS = arg("--seconds", 90.0)
RANK = int(os.environ["RANK"])


def real():
    import torch
    import torch.distributed as dist
    dist.init_process_group("nccl", device_id=torch.device("cuda:0"))
    x, y = torch.ones(1 << 16, device="cuda"), torch.ones(1 << 12, device="cuda")
    # _sleep spins a number of GPU clock cycles: how many make a millisecond here.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    per_ms = 10_000_000 / start.elapsed_time(end)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    print(f"ready at {time.time():.3f} ({per_ms / 1e6:.2f} M cycles/ms)", flush=True)
    steps, t0 = 0, time.time()
    while time.time() < t0 + SECONDS:
        torch.cuda._sleep(int(BASE_MS * per_ms))
        if RANK == SLOW:
            torch.cuda._sleep(int(EXTRA_MS * per_ms))
        dist.all_reduce(x)
        dist.all_reduce(y)
        torch.cuda.synchronize()
        steps += 1
    print(f"steps {steps} in {time.time() - t0:.1f} s", flush=True)
    dist.destroy_process_group()


def meet():
    """The ranks' socket: rank 0 listens on MASTER_PORT, rank 1 connects."""
    addr = (os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ["MASTER_PORT"]))
    if RANK == 0:
        s = socket.create_server(addr)
        conn, _ = s.accept()
        s.close()
        return conn
    for _ in range(200):
        try:
            return socket.create_connection(addr)
        except OSError:
            time.sleep(0.05)
    sys.exit("fake rank 1: rank 0 never listened")


def fake():
    fr = FakeRecorder()
    peer = meet()
    print(f"ready at {time.time():.3f}", flush=True)
    steps, seq, t0 = 0, 1, time.time()
    while time.time() < t0 + SECONDS:
        time.sleep((BASE_MS + (EXTRA_MS if RANK == SLOW else 0)) / 1000)
        for _ in range(2):
            created = fr.record(seq, "all_reduce", "scheduled")
            peer.sendall(b"1")
            if peer.recv(1) != b"1":
                sys.exit(0)  # the other rank ended
            fr.complete(seq, (time.time_ns() - created) / 1e6)
            seq += 1
        steps += 1
    print(f"steps {steps} in {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    fake() if "--fake" in sys.argv else real()
