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
"""
import argparse
import hashlib
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--step-ms", type=int, default=0)
    p.add_argument("--hang-rank", type=int, default=-1)
    p.add_argument("--hang-at", type=int, default=5)
    p.add_argument("--ready-file", default="")
    return p.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard
    for step in range(args.steps):
        if rank == args.hang_rank and step == args.hang_at:
            print(f"ddp rank={rank} hangs at step {step}", flush=True)
            while True:
                time.sleep(3600)
        x = torch.randn(8, 16, generator=gen)
        y = x.sum(dim=1, keepdim=True)
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        if step == 0 and args.ready_file:
            open(f"{args.ready_file}.{rank}", "w").close()
        if args.step_ms:
            time.sleep(args.step_ms / 1000.0)
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    print(f"ddp rank={rank} world={world} local_rank={os.environ.get('LOCAL_RANK', '-')} "
          f"host={socket.gethostname()} params={digest.hexdigest()[:16]}", flush=True)
    sys.stdout.flush()
    # gloo can deadlock at interpreter exit; a finished rank has nothing left to do.
    os._exit(0)


if __name__ == "__main__":
    main()
