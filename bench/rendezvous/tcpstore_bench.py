#!/usr/bin/python3
"""The anchor: the same start-up workflow against PyTorch's c10d TCPStore.

N simulated ranks, each with its own TCPStore client connection: set its own
key, rank 0 publishes a 128-byte ID, every rank gets it, one barrier (an add
counter plus a wait on the key the last arriving rank sets). Ranks are spread
over several processes (the fd limit is per process) and threads, so their
connections arrive concurrently as real ranks' would. Wall time runs from the
first connect to the last rank out of the barrier (CLOCK_MONOTONIC, shared by
all processes).

--serve: only PyTorch's TCPStore server on a free loopback port, printed as
"port N", until stdin closes: dp-store-bench --torch-server drives it with
its own clients (run.sh --torch).
"""
import argparse
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
from datetime import timedelta

import torch.distributed as dist

ID = b"I" * 128


def tcp_store(*args, **kwargs):
    """PyTorch's TCPStore on its classic backend: Debian builds torch without
    libuv, and 2.4+ asks for libuv by default (2.6, 2.14 refuse to start);
    1.13 has no use_libuv and only the classic backend."""
    try:
        return dist.TCPStore(*args, use_libuv=False, **kwargs)
    except TypeError:
        return dist.TCPStore(*args, **kwargs)


def worker(port, world, ranks, threads, out, torch_init=False):
    first = time.monotonic_ns()
    stores = {}
    errors = []

    def join(slice_):
        try:
            for r in slice_:
                # --torch-init: what env:// sends, as dp-store-bench's clients do:
                # the worker count (ADD init/), no key of each rank's own.
                s = tcp_store("127.0.0.1", port, world, False, timedelta(seconds=120),
                                  wait_for_workers=torch_init)
                stores[r] = s
                if not torch_init:
                    s.set(f"rank/{r}", "ready")
                if r == 0:
                    s.set("nccl_id", ID)
                if s.get("nccl_id") != ID:
                    errors.append(r)
                if s.add("barrier", 1) == world:
                    s.set("barrier_done", "1")
        except Exception as e:  # noqa: BLE001 - reported, counted as failure
            errors.append(repr(e))

    slices = [ranks[i::threads] for i in range(threads)]
    ts = [threading.Thread(target=join, args=(sl,)) for sl in slices if sl]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    last = first
    for r in ranks:
        if r in stores:
            stores[r].wait(["barrier_done"])
            last = max(last, time.monotonic_ns())
    out.put((first, last, len(errors)))
    out.close()
    out.join_thread()
    os._exit(0)  # TCPStore teardown of thousands of clients is not part of the measurement


def server(q, ready):
    s = tcp_store("127.0.0.1", 0, None, True, timedelta(seconds=300), wait_for_workers=False)
    q.put(s.port)
    ready.wait()
    os._exit(0)


def one_run(world, procs, threads, torch_init):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    stop = ctx.Event()
    srv = ctx.Process(target=server, args=(q, stop))
    srv.start()
    port = q.get(timeout=60)
    out = ctx.Queue()
    ps = []
    for p in range(procs):
        ranks = list(range(p, world, procs))
        ps.append(ctx.Process(target=worker, args=(port, world, ranks, threads, out, torch_init)))
    for p in ps:
        p.start()
    results = [out.get(timeout=600) for _ in ps]
    for p in ps:
        p.join()
    stop.set()
    srv.join()
    first = min(r[0] for r in results)
    last = max(r[1] for r in results)
    return (last - first) / 1e9, sum(r[2] for r in results)


def serve():
    s = tcp_store("127.0.0.1", 0, None, True, timedelta(seconds=300), wait_for_workers=False)
    print(f"port {s.port}", flush=True)
    sys.stdin.read()
    os._exit(0)  # not the teardown of thousands of connections


def main():
    if sys.argv[1:] == ["--serve"]:
        return serve()
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--torch-init", action="store_true",
                    help="the clients send what init_process_group(env://) does (dp-store-bench's workflow)")
    a = ap.parse_args()
    walls = []
    for run in range(a.runs):
        wall, failures = one_run(a.ranks, a.procs, a.threads, a.torch_init)
        walls.append(wall)
        print(f"tcpstore ranks={a.ranks} run={run} wall_s={wall:.3f} failures={failures}", flush=True)
    print(f"tcpstore ranks={a.ranks} median_wall_s={statistics.median(walls):.3f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
