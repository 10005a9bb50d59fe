#!/usr/bin/python3
"""An unmodified PyTorch DDP program, as users run them: gloo, env://, no libdp.

It reads only torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT), so it runs under `srun --dp-world=auto` (one task per rank) and
under a per-node launcher (torchrun) alike. Each rank trains the same small
model on its own data shard and prints one line at the end:

  ddp rank=R world=W local_rank=L host=H params=<sha256 of the parameters>

Identical `params` on every rank show the gradients were really all-reduced
over one world. The test hooks below only change when a rank stops; the
program never talks to slurm-dp:
  --steps N          training steps (20)
  --step-ms MS       sleep per step, so a test can act mid-run (0)
  --hang-rank R      rank R stops making progress (sleeps in the loop) ...
  --hang-at S        ... at step S (5)
  --ready-file F     each rank touches F.<rank> once its first all-reduce is done
  --until-signals L  handle the signals of the list (USR1,USR2) as checkpointing
                     programs do: touch F.<rank>.<SIG> (F: --ready-file) and train on
                     until every rank has seen them all, then stop (rc 0)
  --until-file P     train on until P exists (every rank stops at the same step)
  --wait-file P      after the last step and its line, wait until P exists (a test
                     inspects the running step without changing what it computes)
  --compute-ms MS    every rank computes (matrix products) for MS before each step's
                     forward pass: a long stretch between collectives (0)
  --save-every N     every N steps rank 0 sleeps --save-sleep-ms, then saves the
  --save-sleep-ms MS model (torch.save) while the others wait in the next all-reduce
  --work MS          every rank computes for MS of its own CPU time per step: the same
                     work on every rank, which a competing process slows (--compute-ms
                     is wall time)
  --jitter PCT       each rank's --step-ms varies by up to +-PCT % at random, every
                     step and every rank alike (0)
  --slow-rank R      rank R (or ranks R,S,...) sleeps --slow-ms more in each step,
  --slow-ms MS       or --slow-pct of its own step's time more (its step before,
  --slow-pct P       without the extra: P % slower whatever the machine's speed) ...
  --slow-file P      ... while P exists (default: always)
  --hog-file P       while P exists, rank --slow-rank runs a competing busy process
                     pinned with it to one CPU (its child: the two share its scheduling
                     group, and the other ranks' groups are untouched)
  --own-group        each rank leaves its task's session, so that each has a scheduling
                     group (autogroup) of its own, as if it had its own cores (the
                     first task of a node leads the group and keeps it, alone)
  --loader-ms MS     each step takes a batch from a DataLoader (2 workers, 2 batches
                     each prefetched); on --slow-rank, while --slow-file exists, each
                     batch takes MS in its worker: an input pipeline slower than the step
  --read-ms MS       each step reads its 4 KiB of input from a pipe a feeder process
                     fills (a file system's stand-in); on --slow-rank, while
                     --slow-file exists, the feeder writes a block every MS: slow reads
  --broadcast        each step ends with rank 0 broadcasting a stop flag (async_op,
                     then its .wait()), as training loops often do
"""
import argparse
import hashlib
import os
import random
import signal
import socket
import subprocess
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--step-ms", type=int, default=0)
    p.add_argument("--hang-rank", type=int, default=-1)
    p.add_argument("--hang-at", type=int, default=5)
    p.add_argument("--ready-file", default="")
    p.add_argument("--until-signals", default="")
    p.add_argument("--until-file", default="")
    p.add_argument("--wait-file", default="")
    p.add_argument("--compute-ms", type=int, default=0)
    p.add_argument("--save-every", type=int, default=0)
    p.add_argument("--save-sleep-ms", type=int, default=0)
    p.add_argument("--work", type=int, default=0)
    p.add_argument("--jitter", type=float, default=0)
    p.add_argument("--slow-rank", type=lambda v: [int(r) for r in v.split(",")], default=[])
    p.add_argument("--slow-ms", type=int, default=0)
    p.add_argument("--slow-pct", type=float, default=0)
    p.add_argument("--slow-file", default="")
    p.add_argument("--hog-file", default="")
    p.add_argument("--own-group", action="store_true")
    p.add_argument("--loader-ms", type=int, default=0)
    p.add_argument("--read-ms", type=int, default=0)
    p.add_argument("--broadcast", action="store_true")
    return p.parse_args()


def handle_signals(names, ready_file, seen):
    """The checkpoint notices a program listens for (Lightning, submitit: SIGUSR1)."""
    def on_signal(signum, _frame):
        name = signal.Signals(signum).name[3:]
        seen.add(name)
        if ready_file:
            open(f"{ready_file}.{os.environ.get('RANK', '-')}.{name}", "w").close()
    for name in names:
        signal.signal(getattr(signal, "SIG" + name), on_signal)


# The notices' handlers go in before the slow import of torch: a signal
# that arrives while torch loads must find them (as in a real trainer's
# first lines), not end the rank.
ARGS = parse_args()
WANTED = [n for n in ARGS.until_signals.split(",") if n]
SEEN = set()
handle_signals(WANTED, ARGS.ready_file, SEEN)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402


def all_done(done):
    """True once every rank is done: all stop at the same step."""
    flag = torch.tensor([1.0 if done else 0.0])
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return flag.item() == 1.0


def compute(ms):
    """Busy on the CPU for ms (no collective): a long forward pass, say."""
    a = torch.randn(64, 64)
    end = time.monotonic() + ms / 1000.0
    while time.monotonic() < end:
        a = torch.tanh(a @ a)


def work(ms):
    """ms of this process's CPU time: the same on every rank, however long it takes."""
    a = torch.randn(64, 64)
    end = time.process_time() + ms / 1000.0
    while time.process_time() < end:
        a = torch.tanh(a @ a)


HOG = "while True: pass"


class Hog:
    """A busy process on this rank's CPU while the file exists."""
    def __init__(self, path):
        self.path, self.proc, self.cpus = path, None, os.sched_getaffinity(0)

    def check(self):
        want = os.path.exists(self.path)
        if want and not self.proc:
            cpu = {max(self.cpus)}
            os.sched_setaffinity(0, cpu)
            self.proc = subprocess.Popen([sys.executable, "-c", HOG],
                                         preexec_fn=lambda: os.sched_setaffinity(0, cpu))
        elif not want and self.proc:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            os.sched_setaffinity(0, self.cpus)


def slow_now(args, rank):
    return rank in args.slow_rank and (not args.slow_file or os.path.exists(args.slow_file))


class Batches(torch.utils.data.Dataset):
    """Batches that take --loader-ms each on a slow rank, in the loader's workers."""
    def __init__(self, args, rank):
        self.args, self.rank = args, rank

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        if slow_now(self.args, self.rank):
            time.sleep(self.args.loader_ms / 1000.0)
        return torch.full((8, 16), float(i % 7))


def loader(args, rank):
    return iter(torch.utils.data.DataLoader(
        Batches(args, rank), batch_size=None, num_workers=2, prefetch_factor=2,
        persistent_workers=True, multiprocessing_context="fork"))


FEED = """
import os, sys, time
pipe, slow_file, ms, slow = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
with open(pipe, "wb", buffering=0) as out:
    while True:
        out.write(b"x" * 4096)
        if slow and (not slow_file or os.path.exists(slow_file)):
            time.sleep(ms / 1000.0)
"""


def feeder(args, rank):
    """A pipe its own process fills: reading it is this rank's file read."""
    pipe = f"/tmp/ddp-feed-{os.getpid()}"
    os.mkfifo(pipe)
    subprocess.Popen([sys.executable, "-c", FEED, pipe, args.slow_file, str(args.read_ms),
                      "1" if rank in args.slow_rank else "0"])
    source = open(pipe, "rb", buffering=0)
    os.unlink(pipe)
    return source


def read_input(source):
    got = 0
    while got < 4096:
        got += len(source.read(4096 - got))


def step_seconds(args, rank, jitter, last):
    """The step's sleep and a slow rank's extra (last: its step before, without the extra)."""
    ms = args.step_ms * (1 + jitter.uniform(-args.jitter, args.jitter) / 100.0)
    extra = 0.0
    if slow_now(args, rank):
        extra = args.slow_ms / 1000.0 + args.slow_pct / 100.0 * last
    return ms / 1000.0, extra


def save(model, rank, sleep_ms):
    """Rank 0's slow checkpoint: the others wait for it in the next all-reduce."""
    time.sleep(sleep_ms / 1000.0)
    path = f"/tmp/ddp-save-{os.getpid()}.pt"
    torch.save(model.state_dict(), path)
    os.unlink(path)


def main():
    args, wanted, seen = ARGS, WANTED, SEEN
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if args.own_group and os.getpgrp() != os.getpid():
        os.setsid()
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard
    jitter = random.Random(2000 + rank)
    hog = Hog(args.hog_file) if args.hog_file and rank in args.slow_rank else None
    batches = loader(args, rank) if args.loader_ms else None
    source = feeder(args, rank) if args.read_ms else None
    flag = torch.zeros(1)
    last = 0.0  # the step before's seconds, without a slow rank's extra
    for step in range(args.steps):
        began = time.monotonic()
        if rank == args.hang_rank and step == args.hang_at:
            print(f"ddp rank={rank} hangs at step {step}", flush=True)
            while True:
                time.sleep(3600)
        if hog:
            hog.check()
        if args.compute_ms:
            compute(args.compute_ms)
        if args.work:
            work(args.work)
        if batches:
            next(batches)  # its input: as slow as its loader
        if source:
            read_input(source)
        x = torch.randn(8, 16, generator=gen)
        y = x.sum(dim=1, keepdim=True)
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        if step == 0 and args.ready_file:
            open(f"{args.ready_file}.{rank}", "w").close()
        sleep, extra = step_seconds(args, rank, jitter, last)
        if sleep + extra > 0:
            time.sleep(sleep + extra)
        if args.save_every and rank == 0 and (step + 1) % args.save_every == 0:
            save(model, rank, args.save_sleep_ms)
        if args.broadcast:
            pending = dist.broadcast(flag, src=0, async_op=True)
            pending.wait()
        if wanted or args.until_file:
            done = all(n in seen for n in wanted) and (
                not args.until_file or os.path.exists(args.until_file))
            if all_done(done):
                break
        last = time.monotonic() - began - extra
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    line = (f"ddp rank={rank} world={world} local_rank={os.environ.get('LOCAL_RANK', '-')} "
            f"host={socket.gethostname()} params={digest.hexdigest()[:16]}"
            f"{' signals=' + ','.join(sorted(seen)) if wanted else ''}\n")
    # One write: torchrun's workers share a pipe, and print() writes the line
    # and its newline apart, so two workers' lines could interleave.
    sys.stdout.flush()
    os.write(1, line.encode())
    while args.wait_file and not os.path.exists(args.wait_file):
        time.sleep(0.05)  # the test's inspection, bounded by its own timeout
    # gloo can deadlock at interpreter exit; a finished rank has nothing left to do.
    os._exit(0)


if __name__ == "__main__":
    main()
