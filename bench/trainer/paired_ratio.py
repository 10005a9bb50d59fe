#!/usr/bin/env python3
"""Median on/off ratio of paired runs, with a distribution-free confidence
interval, for bench/trainer/run.sh's PROGRESS_OVERHEAD mode.

Input: one "on off" line of samples/s per pair (the two runs of a pair ran
back to back, in random order). Each pair's ratio cancels the machine's slow
drift (other load, thermal, frequency); the interval for the median of the
ratios comes from order statistics (the sign test), so it assumes nothing of
the noise's shape and one outlying pair moves it by one rank at most.
"""
import math
import statistics
import sys


def median_ci(values, confidence=0.95):
    """Ranks (k, n-1-k) of the sorted values whose span covers the median
    with at least `confidence`, from the Binomial(n, 1/2) distribution."""
    n = len(values)
    s = sorted(values)
    best = None
    for k in range(n // 2 + 1):
        # P(X < k+1 or X > n-k-1) for X ~ Bin(n, 1/2): the interval
        # [s[k], s[n-1-k]] misses the median only then.
        tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
        if 1 - 2 * tail >= confidence:
            best = k
        else:
            break
    if best is None:
        return None
    lo, hi = s[best], s[n - 1 - best]
    cover = 1 - 2 * sum(math.comb(n, i) for i in range(best + 1)) / 2**n
    return lo, hi, cover


def main():
    pairs = [tuple(map(float, line.split())) for line in sys.stdin if line.strip()]
    if not pairs:
        sys.exit("paired_ratio.py: no pairs on stdin")
    if any(off <= 0 or on <= 0 for on, off in pairs):
        sys.exit("paired_ratio.py: a run reported no rate (fewer than 10 steps: no progress window?)")
    ratios = [on / off for on, off in pairs]
    on_med = statistics.median(p[0] for p in pairs)
    off_med = statistics.median(p[1] for p in pairs)
    spread = statistics.median(abs(r - statistics.median(ratios)) for r in ratios)
    print(f"{len(pairs)} pairs; samples/s median: on {on_med:.0f}, off {off_med:.0f}; "
          f"single runs {min(min(p) for p in pairs):.0f}..{max(max(p) for p in pairs):.0f}")
    r = statistics.median(ratios)
    ci = median_ci(ratios)
    if ci is None:  # fewer than 6 pairs (a smoke run)
        print(f"on/off per pair: median {r:.4f} ({100 * (r - 1):+.2f} %); no 95 % interval "
              f"from {len(pairs)} pairs (6 or more give one)")
        return
    lo, hi, cover = ci
    print(f"on/off per pair: median {r:.4f} ({100 * (r - 1):+.2f} %), "
          f"{100 * cover:.1f} % interval [{lo:.4f}, {hi:.4f}] "
          f"({100 * (lo - 1):+.2f} % .. {100 * (hi - 1):+.2f} %); "
          f"pair ratios {min(ratios):.3f}..{max(ratios):.3f}, median deviation {100 * spread:.1f} %")
    within = lo >= 0.98
    print("target: on within 2 % of off -> " +
          ("met: the interval's lower end is above 0.98" if within
           else "not shown: the interval reaches below 0.98 (more pairs, or a quieter machine)"))


if __name__ == "__main__":
    main()
