#!/usr/bin/python3
"""PyTorch eager anchor for scripts/gpu-check: the trainer's models (MLP
784-512-256-10; CNN conv5 16 -> pool -> conv5 32 -> pool -> fc128 -> fc10,
"same" padding) trained with SGD momentum on random-index batches gathered on
the GPU from a dataset already in device memory, as dp-trainer does. Also the
card's measured bf16 GEMM rate (8192^3, random data). Prints one JSON line.
  torch_gpu.py [--quick | --smoke]   --quick: a tenth of the steps; --smoke: a few
  steps of every case and a 1024^3 GEMM, for ctest's bench.gpu, which skips (exit 77)
  with the reason where there is no PyTorch or no CUDA device."""
import json
import sys
import time

SMOKE = "--smoke" in sys.argv[1:]
try:
    import torch
    import torch.nn as nn
except ImportError as e:
    if SMOKE:
        print(f"skip: no PyTorch here ({e}); scripts/gpu-check runs this on a GPU machine")
        sys.exit(77)
    raise
if SMOKE and not torch.cuda.is_available():
    print("skip: no CUDA device visible to PyTorch; scripts/gpu-check runs this on a GPU machine")
    sys.exit(77)


def model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def samples_per_sec(kind, batch, precision, steps):
    torch.manual_seed(1)
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    n = 60000
    x = torch.randn(n, 1, 28, 28, device=dev)
    if kind == "mlp":
        x = x.reshape(n, 784)
    y = torch.randint(0, 10, (n,), device=dev)
    m = model(kind).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    ctx = torch.autocast("cuda", dtype=torch.bfloat16) if precision == "bf16" else torch.autocast("cuda", enabled=False)

    def step():
        idx = torch.randint(0, n, (batch,), device=dev)
        with ctx:
            loss = loss_fn(m(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - t0)


def bf16_peak(n=8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(10):
        a @ b
    e.record()
    torch.cuda.synchronize()
    return 2 * n ** 3 * 10 / (s.elapsed_time(e) / 1e3) / 1e12


def main():
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
           "bf16_tflops": round(bf16_peak(1024 if SMOKE else 8192), 1)}
    cases = [("mlp", 128, "fp32", 2000), ("mlp", 4096, "fp32", 400), ("mlp", 4096, "bf16", 400),
             ("cnn", 128, "fp32", 1000), ("cnn", 128, "bf16", 1000)]
    if "--quick" in sys.argv[1:]:
        cases = [(k, b, p, s // 10) for k, b, p, s in cases]
    if SMOKE:
        cases = [(k, b, p, 3) for k, b, p, s in cases]
    for kind, batch, prec, steps in cases:
        out[f"{kind}_b{batch}_{prec}"] = round(samples_per_sec(kind, batch, prec, steps))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
