#!/usr/bin/python3
"""An unmodified PyTorch DDP program that resumes from its checkpoint, as
programs written for torchrun's restarts do: gloo, env://, no libdp.

The data of step s on rank r depends only on (s, r), and rank 0 saves model,
optimizer and step every --save-every steps, atomically (write, then rename),
so a run that loses a node and starts again from its last checkpoint ends
with bit-for-bit the parameters of a run that never stopped (gloo's
all_reduce is deterministic for a fixed world). It reads only torchrun's
variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_*, TORCHELASTIC_RESTART_COUNT),
so it runs per task and under torchrun alike. Lines it prints:

  begin rank=R restart=C at=NS                 its process began (forked: before any import,
                                               a sitecustomize's included)
  resume rank=R step=S load_ms=M restart=C     it loaded the checkpoint of step S
  first rank=R step=S restart=C at=NS          its first step of this start completed
                                               (CLOCK_REALTIME ns, the test's clock)
  done rank=R world=W restart=C params=<sha256 prefix of the parameters>

  --steps N        training steps (40)
  --step-ms MS     sleep per step, so a test can act mid-run (0)
  --save-every K   rank 0 checkpoints after every K steps (5)
  --ckpt PATH      the checkpoint (a shared folder); required
  --ready-file F   each rank touches F.<rank> once a step completed
  --fail-always    raise after the first step of every start (a program that cannot recover)
  --fail-at-once-on NODE
                   raise before any step, every start, on Slurm node NODE (a bad GPU there)
  --trace FILE     each completed step appends "step pid=P rank=R step=S at=NS" to FILE,
                   each checkpoint "save pid=P step=S at=NS" (one O_APPEND write each):
                   which process did what, when, after a node was cut off or thawed
  --loader         each step's data comes from a DataLoader (2 worker processes, 2
                   batches prefetched each): the same data, from a process tree
"""
import argparse
import hashlib
import os
import socket
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--step-ms", type=int, default=0)
    p.add_argument("--save-every", type=int, default=5)
    p.add_argument("--ckpt", required=True)
    p.add_argument("--ready-file", default="")
    p.add_argument("--fail-always", action="store_true")
    p.add_argument("--fail-at-once-on", default="")
    p.add_argument("--loader", action="store_true")
    p.add_argument("--trace", default="")
    return p.parse_args()


def started_ns():
    """When the launcher forked this process, in CLOCK_REALTIME ns (10 ms
    steps): /proc's start time, not the clock at this line, which a
    sitecustomize that imports PyTorch (the suite's no_libuv shim) delays by
    seconds on a loaded machine."""
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
    age = time.clock_gettime_ns(time.CLOCK_BOOTTIME) - ticks * 10**9 // os.sysconf("SC_CLK_TCK")
    return time.time_ns() - age


ARGS = parse_args()
# A test tells a launcher's restart from the program's own start-up (PyTorch's
# import takes seconds on a small machine) by it.
print(f"begin rank={os.environ.get('RANK', '-')} "
      f"restart={os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')} at={started_ns()}", flush=True)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402


class Steps(torch.utils.data.Dataset):
    """Step s's data on this rank, whichever process makes it."""
    def __init__(self, rank, first, last):
        self.rank, self.first, self.last = rank, first, last

    def __len__(self):
        return self.last - self.first

    def __getitem__(self, i):
        return step_data(self.first + i, self.rank)


def step_data(step, rank):
    gen = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(8, 16, generator=gen)
    return x, x.sum(dim=1, keepdim=True)


def batches(args, rank, start):
    if not args.loader:
        return (step_data(s, rank) for s in range(start, args.steps))
    return iter(torch.utils.data.DataLoader(
        Steps(rank, start, args.steps), batch_size=None, num_workers=2, prefetch_factor=2,
        multiprocessing_context="fork"))


def trace(line):
    if ARGS.trace:
        fd = os.open(ARGS.trace, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, f"{line} at={time.time_ns()}\n".encode())
        os.close(fd)


def save(path, model, opt, step):
    tmp = f"{path}.tmp.{os.getpid()}"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
    os.rename(tmp, path)
    trace(f"save pid={os.getpid()} step={step}")


def main():
    args = ARGS
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start = 0
    if os.path.exists(args.ckpt):
        t = time.monotonic()
        state = torch.load(args.ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        load_ms = (time.monotonic() - t) * 1000.0
        print(f"resume rank={os.environ['RANK']} step={start} load_ms={load_ms:.1f} "
              f"restart={restart}", flush=True)
    node = os.environ.get("SLURMD_NODENAME", "")
    if args.fail_at_once_on and node == args.fail_at_once_on:
        raise RuntimeError(f"rank {os.environ['RANK']} fails at once on {node} in start "
                           f"{restart} (--fail-at-once-on)")
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = nn.parallel.DistributedDataParallel(model)
    # DDP regroups its gradient buckets after a start's first backward pass,
    # and gloo's sums round by an element's place in its bucket: one backward
    # pass that changes nothing (the optimizer never sees it) makes every real
    # step, the first after a resume too, use the regrouped buckets.
    ddp(torch.zeros(1, 16)).sum().backward()
    opt.zero_grad()
    for step, (x, y) in zip(range(start, args.steps), batches(args, rank, start)):
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        trace(f"step pid={os.getpid()} rank={rank} step={step}")
        if step == start:
            print(f"first rank={rank} step={step} restart={restart} at={time.time_ns()}", flush=True)
            if args.ready_file:
                open(f"{args.ready_file}.{rank}", "w").close()
            if args.fail_always:
                raise RuntimeError(f"rank {rank} cannot go on (--fail-always)")
        if rank == 0 and (step + 1) % args.save_every == 0:
            save(args.ckpt, model, opt, step + 1)
        if args.step_ms:
            time.sleep(args.step_ms / 1000.0)
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    line = (f"done rank={rank} world={world} restart={restart} host={socket.gethostname()} "
            f"params={digest.hexdigest()[:16]}\n")
    sys.stdout.flush()
    os.write(1, line.encode())
    # gloo can deadlock at interpreter exit; a finished rank has nothing left to do.
    os._exit(0)


if __name__ == "__main__":
    main()
