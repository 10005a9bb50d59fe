#!/usr/bin/python3
"""PyTorch DDP (gloo) anchor for bench/trainer/run.sh: the same MLP
(784-512-256-10), data (Fashion-MNIST IDX, same normalisation), optimizer
(SGD momentum 0.9), global batch and epochs as dp-trainer. One rank per
process, launched by run.sh with the torchrun variables. Prints one JSON line
per rank, timed like dp-trainer: the training loop only (data already in
memory), then test accuracy on rank 0."""
import gzip
import json
import os
import struct
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def read_idx(path, rank):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    return torch.frombuffer(bytearray(data[4 + 4 * rank:]), dtype=torch.uint8).reshape(dims)


def load(split, data_dir):
    x = read_idx(f"{data_dir}/{split}-images-idx3-ubyte.gz", 3).float().div(255.0)
    x = (x - 0.2860) / 0.3530
    y = read_idx(f"{data_dir}/{split}-labels-idx1-ubyte.gz", 1).long()
    return x.reshape(len(x), -1), y


def main():
    epochs = int(os.environ.get("EPOCHS", "5"))
    global_batch = int(os.environ.get("GLOBAL_BATCH", "256"))
    lr = float(os.environ.get("LR", "0.05"))
    data_dir = os.environ.get("DATA_DIR", "/usr/share/datasets/fashion-mnist")
    torch.set_num_threads(int(os.environ.get("THREADS", "1")))
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)
    x, y = load("train", data_dir)
    limit = int(os.environ.get("TRAIN_LIMIT", "0"))  # 0: every sample
    if limit > 0:
        x, y = x[:limit], y[:limit]
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    sampler = DistributedSampler(TensorDataset(x, y), num_replicas=world, rank=rank, shuffle=True, seed=1, drop_last=True)
    loader = DataLoader(TensorDataset(x, y), batch_size=global_batch // world, sampler=sampler, drop_last=True)
    dist.barrier()
    samples = 0
    t0 = time.perf_counter()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(ddp(xb), yb)
            loss.backward()
            opt.step()
            samples += len(xb)
    seconds = time.perf_counter() - t0
    acc = None
    if rank == 0:
        tx, ty = load("t10k", data_dir)
        with torch.no_grad():
            acc = (model(tx).argmax(1) == ty).float().mean().item()
    print(json.dumps({"impl": "pytorch-ddp", "rank": rank, "world": world, "samples": samples,
                      "seconds": seconds, "test_accuracy": acc}), flush=True)
    sys.stdout.flush()
    os._exit(0)  # DDP with gloo can hang at interpreter exit (NOTES)


if __name__ == "__main__":
    main()
