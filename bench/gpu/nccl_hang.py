#!/usr/bin/env python3
"""A rank of scripts/gpu-check's NCCL hang (issue 57): world 2 on one GPU,
21 collectives on the default group (20 all_reduce, a broadcast), then the
held rank sleeps before all_reduce #22 while the other waits in it (NCCL
spins there: its CPU time grows). Environment as gpu-check (or slurm-dp)
sets it: RANK, WORLD_SIZE, MASTER_ADDR/PORT, NCCL_HOSTID, the flight
recorder's variables. Prints "ready" after the 21, and the held rank
"held back before all_reduce #22 at <unix time>".

  nccl_hang.py [--held RANK] [--hold SECONDS] [--fake]

--fake: no PyTorch, no GPU (gpu-check --cpu): the same story told by a
stand-in for PyTorch's flight recorder, which makes the rank's pipe
(TORCH_NCCL_DEBUG_INFO_PIPE_FILE<rank>.pipe) and, when it is written, dumps
the collectives as PyTorch 2.11 does (a pickle of built-in values to
TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>) from a thread of its own; the waiting
rank spins as NCCL does. What it cannot show: that PyTorch itself does so."""
import os
import pickle
import sys
import threading
import time

COLLECTIVES = 21


def arg(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


HELD = arg("--held", 1)
HOLD_S = arg("--hold", 120.0)
RANK = int(os.environ["RANK"])


def held_back():
    print(f"held back before all_reduce #{COLLECTIVES + 1} at {time.time():.3f}", flush=True)
    time.sleep(HOLD_S)


def real():
    import torch
    import torch.distributed as dist
    dist.init_process_group("nccl", device_id=torch.device("cuda:0"))
    x = torch.ones(1 << 16, device="cuda")
    for _ in range(COLLECTIVES - 1):
        dist.all_reduce(x)
    dist.broadcast(x, 0)
    torch.cuda.synchronize()
    print("ready", flush=True)
    if RANK == HELD:
        held_back()
    dist.all_reduce(x)  # the others wait in it
    torch.cuda.synchronize()
    print("done", flush=True)


def entry(seq, op, state, created):
    frames = [{"name": "real", "filename": __file__, "line": 50}]
    return {"frames": frames, "record_id": seq - 1, "pg_id": 0, "process_group": ("0", "default_pg"),
            "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq, "profiling_name": f"nccl:{op}",
            "time_created_ns": created, "input_sizes": [[65536]], "input_dtypes": ["Float"],
            "output_sizes": [[65536]], "output_dtypes": ["Float"], "state": state,
            "time_discovered_started_ns": None,
            "time_discovered_completed_ns": created + 1000 if state == "completed" else None,
            "retired": state == "completed", "timeout_ms": 600000, "is_p2p": False,
            "thread_name": "python3", "thread_id": str(threading.get_ident())}


class FakeRecorder:
    """What PyTorch's heartbeat monitor does with the flight recorder."""

    def __init__(self):
        if int(os.environ.get("TORCH_NCCL_TRACE_BUFFER_SIZE", os.environ.get("TORCH_FR_BUFFER_SIZE", "0"))) <= 0:
            sys.exit("fake rank: no flight-recorder buffer (TORCH_NCCL_TRACE_BUFFER_SIZE)")
        stem = os.environ["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"]
        self.dump = os.environ["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] + str(RANK)
        pipe = f"{stem}{RANK}.pipe"
        if os.path.exists(pipe):
            os.unlink(pipe)
        os.mkfifo(pipe, 0o666)
        self.fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
        self.entries = []
        self.lock = threading.Lock()
        threading.Thread(target=self.monitor, daemon=True).start()

    def record(self, seq, op, state):
        created = time.time_ns()
        with self.lock:
            self.entries.append(entry(seq, op, state, created))
            del self.entries[:-2000]  # PyTorch's buffer (TORCH_NCCL_TRACE_BUFFER_SIZE=2000)
        return created

    def complete(self, seq, duration_ms):
        """Done, with its time as TORCH_NCCL_ENABLE_TIMING=1 gives it."""
        with self.lock:
            e = next(e for e in reversed(self.entries) if e["collective_seq_id"] == seq)
            e.update(state="completed", retired=True, duration_ms=duration_ms,
                     time_discovered_completed_ns=time.time_ns())

    def monitor(self):
        while True:
            time.sleep(0.2)
            try:
                asked = os.read(self.fd, 128)
            except BlockingIOError:
                asked = b""
            if asked:
                with self.lock:
                    entries = list(self.entries)
                last = max((e["collective_seq_id"] for e in entries), default=-1)
                done = max((e["collective_seq_id"] for e in entries if e["state"] == "completed"), default=-1)
                d = {"version": "2.10", "comm_lib_version": "fake", "entries": entries,
                     "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
                     "pg_status": {"0": {"last_enqueued_collective": last, "last_started_collective": -1,
                                         "last_completed_collective": done}}}
                with open(self.dump, "wb") as f:
                    f.write(pickle.dumps(d, protocol=2))


def fake():
    fr = FakeRecorder()
    for seq in range(1, COLLECTIVES + 1):
        fr.record(seq, "broadcast" if seq == COLLECTIVES else "all_reduce", "completed")
    print("ready", flush=True)
    if RANK == HELD:
        held_back()
        return
    fr.record(COLLECTIVES + 1, "all_reduce", "scheduled")
    end = time.time() + HOLD_S
    while time.time() < end:  # NCCL's wait spins
        pass


if __name__ == "__main__":
    fake() if "--fake" in sys.argv else real()
