#!/usr/bin/python3
"""A Hugging Face accelerate program as its tutorials write them: Accelerator(),
prepare(), backward() through the accelerator; nothing of slurm-dp or of the
launch form in it. On CPUs it asks for gloo, as accelerate's docs do: Debian's
PyTorch is built with MPI, which accelerate would pick otherwise, and MPI
needs mpirun (each process would be a world of its own). It trains a small model on a synthetic regression for 10
steps and prints, per process, one line:

  accel rank=R world=W local_rank=L host=H type=DISTRIBUTED_TYPE params=<sha256>

Identical params on every rank show one world all-reduced the gradients."""
import hashlib
import os
import socket

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(backend="gloo")])
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    model, opt = acc.prepare(model, opt)
    gen = torch.Generator().manual_seed(1000 + acc.process_index)  # each rank its own shard
    for _ in range(10):
        x = torch.randn(8, 16, generator=gen)
        loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
    digest = hashlib.sha256()
    for p in acc.unwrap_model(model).parameters():
        digest.update(p.detach().numpy().tobytes())
    line = (f"accel rank={acc.process_index} world={acc.num_processes} "
            f"local_rank={acc.local_process_index} host={socket.gethostname()} "
            f"type={acc.distributed_type.value} params={digest.hexdigest()[:16]}\n")
    os.write(1, line.encode())  # one write: a launcher's workers share a pipe
    acc.wait_for_everyone()
    os._exit(0)  # gloo can deadlock at interpreter exit


if __name__ == "__main__":
    main()
