"""An unmodified PyTorch DDP script, as users write it: the device is
cuda:LOCAL_RANK (torch.cuda.set_device(LOCAL_RANK)), everything else from
env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). No GPU: Gloo on the CPU.
Prints one JSON line: its rank, the device it drove (and that device's UUID)
and whether its parameters equal rank 0's after DDP's all-reduces."""
import json
import os

import torch
import torch.distributed as dist

if __name__ == "__main__":
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device, backend = torch.device("cuda", local_rank), "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    dist.init_process_group(backend)
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[local_rank] if device.type == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())  # each rank its own data
    for _ in range(5):
        loss = ddp(torch.randn(8, 16, device=device)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    ref = flat.clone()
    dist.broadcast(ref, 0)
    info = {"rank": dist.get_rank(), "local_rank": local_rank, "backend": backend,
            "device": str(device), "same_params": bool(torch.equal(flat, ref))}
    if device.type == "cuda":
        info["uuid"] = str(getattr(torch.cuda.get_device_properties(device), "uuid", ""))
    print(json.dumps(info), flush=True)
    dist.destroy_process_group()
    os._exit(0)  # DDP over Gloo can hang at interpreter exit
