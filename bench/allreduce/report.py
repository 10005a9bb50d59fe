"""Medians of the raw CSV lines of run.sh, as one table."""
import collections
import statistics
import sys

raw, rounds = sys.argv[1], sys.argv[2]
pinned = len(sys.argv) > 3 and sys.argv[3] == "1"
world = int(sys.argv[4]) if len(sys.argv) > 4 else 2
runs = collections.defaultdict(list)   # (impl, bytes) -> [(us, busbw)]
ceil = collections.defaultdict(list)
for line in open(raw):
    f = line.strip().split(",")
    if f[0] == "ceiling":
        ceil[(f[1], int(f[2]))].append(float(f[3]))
    elif len(f) == 5:
        runs[(f[0], int(f[1]))].append((float(f[3]), float(f[4])))


def size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


print(f"{world} ranks{' pinned, rank r to CPU r mod CPUs' if pinned else ''}, medians of {rounds} runs (each run: median of its iterations)")
print(f"{'size':>8} | {'libdp tcp us':>12} {'GB/s':>6} | {'libdp shm us':>12} {'GB/s':>6} | {'torch us':>10} {'GB/s':>6} | tcp/torch shm/torch")
def cells(xs, width):
    """Median time and GB/s of one implementation, or dashes when it did not run."""
    if not xs:
        return f"{'-':>{width}} {'-':>6}"
    return f"{statistics.median(x[0] for x in xs):{width}.1f} {statistics.median(x[1] for x in xs):6.3f}"


def ratio(t, x):
    # Same bytes, so the bandwidth ratio is the inverse time ratio (exact even
    # where the printed GB/s rounds to 0).
    if not t or not x:
        return f"{'-':>9}"
    return f"{statistics.median(a[0] for a in t) / statistics.median(a[0] for a in x):8.2f}x"


missing = sorted({"libdp-tcp", "libdp-shm", "torch-gloo"} - {k[0] for k in runs})
for b in sorted({k[1] for k in runs}):
    d, m, t = runs.get(("libdp-tcp", b)), runs.get(("libdp-shm", b)), runs.get(("torch-gloo", b))
    print(f"{size(b):>8} | {cells(d, 12)} | {cells(m, 12)} | {cells(t, 10)} | {ratio(t, d)} {ratio(t, m)}")
if missing:
    print(f"not run: {', '.join(missing)}")
print("ceilings (GB/s):")
for (k, b), v in ceil.items():
    print(f"  {k:40s} {statistics.median(v):.3f} ({size(b)})")
