"""One rank of the torch.distributed (gloo) all-reduce anchor, same sizes,
iteration counts and statistics as allreduce_bench.cpp. Rank 0 prints
impl,bytes,iters,median_us,busbw_GBps. Environment: RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT."""
import os
import sys
import time

import torch
import torch.distributed as dist


def iterations_for(nbytes, most):
    return min(most, max(7, min(400, (1 << 30) // nbytes)))


def main():
    lo = int(sys.argv[1]) if len(sys.argv) > 2 else 1024
    hi = int(sys.argv[2]) if len(sys.argv) > 2 else 256 << 20
    most = int(sys.argv[3]) if len(sys.argv) > 3 else 400
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    buf = torch.ones(hi // 4, dtype=torch.float32)
    nbytes = lo
    while nbytes <= hi:
        t = buf[: nbytes // 4]
        iters = iterations_for(nbytes, most)
        samples = []
        for i in range(-2, iters):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            t1 = time.perf_counter()
            if i >= 0:
                samples.append((t1 - t0) * 1e6)
            if t[0].item() > 1e30:
                t.fill_(1.0)
        samples.sort()
        med = samples[len(samples) // 2]
        busbw = nbytes / (med * 1e-6) * 2.0 * (n - 1) / n / 1e9
        if rank == 0:
            print(f"torch-gloo,{nbytes},{iters},{med:.1f},{busbw:.3f}", flush=True)
        nbytes *= 4
    sys.stdout.flush()
    os._exit(0)  # DDP/gloo can deadlock at interpreter exit (see NOTES)


if __name__ == "__main__":
    main()
