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
print(f"{'size':>8} | {'libdp us':>10} {'GB/s':>6} | {'torch us':>10} {'GB/s':>6} | libdp/torch bw")
for b in sorted({k[1] for k in runs}):
    d, t = runs.get(("libdp", b)), runs.get(("torch-gloo", b))
    if not d or not t:
        continue
    dus, dbw = statistics.median(x[0] for x in d), statistics.median(x[1] for x in d)
    tus, tbw = statistics.median(x[0] for x in t), statistics.median(x[1] for x in t)
    # Same bytes, so the bandwidth ratio is the inverse time ratio (exact even
    # where the printed GB/s rounds to 0).
    print(f"{size(b):>8} | {dus:10.1f} {dbw:6.3f} | {tus:10.1f} {tbw:6.3f} | {tus / dus:5.2f}x")
print("ceilings (GB/s, 64 MiB):")
for k, v in ceil.items():
    print(f"  {k:40s} {statistics.median(v):.3f}")
