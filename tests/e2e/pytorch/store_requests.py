#!/usr/bin/python3
"""Requests PyTorch's own TCPStore server takes, through the store of the step
(DP_STORE=step: every rank a client of its node's agent) or of rank 0 (rank 0
hosts PyTorch's server on MASTER_PORT, as env:// has it do). Issue 43.

1. The last rank (on the other node than rank 0) sets an 8 MiB value, a
   multi_set of 3 x 3 MiB (torch 2.x; 1.13 has no multi_set: three sets) and
   a 6 KiB key; every rank reads them back, byte for byte.
2. The last rank sets a 64 MiB value through a client of its own: the step's
   store refuses it and closes that client ("huge: refused"), rank 0's stores
   it ("huge: stored"); every rank runs on either way.
3. Each rank's client waits 1 s, on purpose, for a key never set; the same
   client's next get of an existing key must answer at once (PyTorch's
   server answers it; 1.13's client sends nothing when its wait times out).
Each check prints "rank R: NAME: ok ..." or "... FAIL ..."; the exit status
is 1 when one failed. No sleep: ranks meet through the store's own waits.
"""
import datetime
import hashlib
import os
import sys
import time

import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
hosts = rank == 0 and os.environ.get("DP_STORE") != "step"
writer = world - 1
failed = []


def client(seconds=30):
    return dist.TCPStore(addr, port, None, False, datetime.timedelta(seconds=seconds))


def check(name, ok, detail=""):
    print(f"rank {rank}: {name}: {'ok' if ok else 'FAIL'} {detail}", flush=True)
    if not ok:
        failed.append(name)


def pattern(seed, size):  # deterministic bytes, the same on every rank
    block = hashlib.sha256(seed.encode()).digest()
    return block * (size // len(block))


def meet(name):  # every rank got here: a store barrier
    if store.add("meet/" + name, 1) == world:
        store.set("meet/" + name + "/all", "1")
    store.wait(["meet/" + name + "/all"])


store = dist.TCPStore(addr, port, None, hosts, datetime.timedelta(seconds=60))
big = pattern("big", 8 << 20)
thirds = {f"third{i}": pattern(f"third{i}", 3 << 20) for i in range(3)}
long_key = "k" * (6 * 1024)

# 1. Large values and a long key, read back on every rank.
if rank == writer:
    store.set("big", big)
    if hasattr(store, "multi_set"):
        store.multi_set(list(thirds), list(thirds.values()))
        print(f"rank {rank}: multi_set of 3 x 3 MiB sent", flush=True)
    else:
        for k, v in thirds.items():
            store.set(k, v)
    store.set(long_key, "a 6 KiB key")
    store.set("large_written", "1")
store.wait(["large_written"])
check("8 MiB value", store.get("big") == big)
check("3 x 3 MiB", all(store.get(k) == v for k, v in thirds.items()))
check("6 KiB key", store.get(long_key) == b"a 6 KiB key")
meet("read")

# 2. 64 MiB through a client of its own: refused for that client alone, or stored.
if rank == writer:
    huge_client = client()
    try:
        huge_client.set("huge", b"h" * (64 << 20))
        outcome = "stored, %d bytes read back" % len(huge_client.get("huge"))
    except Exception as e:  # noqa: BLE001 - PyTorch names no reason; the agent does
        outcome = "refused (%s: %s)" % (type(e).__name__, str(e).splitlines()[0][:80])
    print(f"rank {rank}: huge: {outcome}", flush=True)
    del huge_client
meet("huge")

# 3. A timed wait for a key never set, on purpose; then a get at once.
c = client(20)
start = time.monotonic()
try:
    c.wait(["never_set"], datetime.timedelta(seconds=1))
    check("timed wait", False, "a key never set was there")
except Exception:  # noqa: BLE001 - its timeout, as the program meant
    check("timed wait", True, "timed out after %.1f s" % (time.monotonic() - start))
start = time.monotonic()
try:
    got = c.get("large_written")
    took = time.monotonic() - start  # blocked behind the wait: the client's 20 s timeout
    check("get after a timed-out wait", got == b"1" and took < 2.0, "answered in %.3f s" % took)
except Exception as e:  # noqa: BLE001
    check("get after a timed-out wait", False,
          "%s after %.1f s" % (type(e).__name__, time.monotonic() - start))
del c
meet("done")
# Rank 0's own server (rank0) leaves last: once every rank's last request is in.
if store.add("bye", 1) == world:
    store.set("bye/all", "1")
if hosts:
    store.wait(["bye/all"])
sys.exit(1 if failed else 0)
