#!/usr/bin/python3
"""Rank 0 publishes a key in the step's store and dies; rank 1 reads it after.

With the step's store (DP_STORE=step) both are plain PyTorch TCPStore
clients of MASTER_ADDR:MASTER_PORT (what env:// builds with
TORCHELASTIC_USE_AGENT_STORE=True); otherwise rank 0 hosts the store there,
as env:// has it do. Rank 0 sets the key,
touches READY once rank 1 is connected, and waits to be killed; rank 1 waits until DEAD exists (the test
creates it once rank 0 is gone), then reads the key and prints it. With
--wait-unset it then waits 2 s for a key rank 0 never set, through a client
of its own that then leaves (srun names the key at the step's end).
  store_keep.py READY DEAD [--wait-unset]
"""
import datetime
import os
import sys
import time

import torch.distributed as dist

ready, dead = sys.argv[1], sys.argv[2]
rank = int(os.environ["RANK"])
hosts = rank == 0 and os.environ.get("DP_STORE") != "step"
store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None,
                      hosts, datetime.timedelta(seconds=30))
if rank == 0:
    store.set("published_by_rank0", "written before rank 0 died")
    store.wait(["rank1_connected"])  # so the control's rank 1 reached rank 0's store in time
    open(ready, "w").close()
    time.sleep(600)  # the test kills it
    sys.exit(3)
store.set("rank1_connected", "1")
deadline = time.time() + 60
while not os.path.exists(dead):
    if time.time() > deadline:
        sys.exit("rank 1: the test never said rank 0 is dead")
    time.sleep(0.05)
try:
    print("rank 1 read:", store.get("published_by_rank0").decode(), flush=True)
except Exception as e:  # noqa: BLE001 - the test reads the message
    print("rank 1 could not read the key:", e, flush=True)
    sys.exit(4)
if len(sys.argv) > 3 and sys.argv[3] == "--wait-unset":
    waiter = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None,
                           False, datetime.timedelta(seconds=30))
    try:
        waiter.wait(["never_set_by_rank0"], datetime.timedelta(seconds=2))
        sys.exit("rank 1: a key rank 0 never set was there")
    except Exception as e:  # noqa: BLE001 - PyTorch's timeout names no key
        print("rank 1 wait ended:", e, flush=True)
    del waiter  # 1.13's client leaves only when its connection closes
    store.get("published_by_rank0")  # a round trip after it left: the agent saw it go
    print("rank 1 gave up a wait", flush=True)
