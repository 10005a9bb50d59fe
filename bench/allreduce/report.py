"""Medians of the raw CSV lines of run.sh, as one table."""
import collections
import statistics
import sys

raw, rounds = sys.argv[1], sys.argv[2]
pinned = len(sys.argv) > 3 and sys.argv[3] == "1"
runs = collections.defaultdict(list)   # (impl, bytes) -> [(us, busbw)]
ceil = collections.defaultdict(list)
for line in open(raw):
    f = line.strip().split(",")
    if f[0] == "ceiling":
        ceil[f[1]].append(float(f[3]))
    elif len(f) == 5:
        runs[(f[0], int(f[1]))].append((float(f[3]), float(f[4])))


def size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


print(f"2 ranks{' pinned to CPUs 0,1' if pinned else ''}, medians of {rounds} runs (each run: median of its iterations)")
print(f"{'size':>8} | {'libdp tcp us':>12} {'GB/s':>6} | {'libdp shm us':>12} {'GB/s':>6} | {'torch us':>10} {'GB/s':>6} | tcp/torch shm/torch")
for b in sorted({k[1] for k in runs}):
    d, m, t = runs.get(("libdp-tcp", b)), runs.get(("libdp-shm", b)), runs.get(("torch-gloo", b))
    if not d or not m or not t:
        continue
    med = lambda xs, i: statistics.median(x[i] for x in xs)
    # Same bytes, so the bandwidth ratio is the inverse time ratio (exact even
    # where the printed GB/s rounds to 0).
    print(f"{size(b):>8} | {med(d, 0):12.1f} {med(d, 1):6.3f} | {med(m, 0):12.1f} {med(m, 1):6.3f} | "
          f"{med(t, 0):10.1f} {med(t, 1):6.3f} | {med(t, 0) / med(d, 0):8.2f}x {med(t, 0) / med(m, 0):8.2f}x")
print("ceilings (GB/s, 64 MiB):")
for k, v in ceil.items():
    print(f"  {k:40s} {statistics.median(v):.3f}")
