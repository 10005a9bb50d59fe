#!/usr/bin/python3
"""Relative L2 distance between the parameters of two dp-trainer checkpoints
(trainer/src/checkpoint.cpp's format): ||b - a|| / ||a||. For scripts/gpu-check."""
import math
import struct
import sys


def params(path):
    b = open(path, "rb").read()
    assert b[:8] == b"DPTCKPT1", f"{path}: not a dp-trainer checkpoint"
    pos = 8
    (n,) = struct.unpack_from("<Q", b, pos)
    pos += 8 + n + 24  # fingerprint, then step, epoch, batch
    (count,) = struct.unpack_from("<Q", b, pos)
    return struct.unpack_from(f"<{count}f", b, pos + 8)


a, b = params(sys.argv[1]), params(sys.argv[2])
assert len(a) == len(b), "different model sizes"
d = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
r = math.sqrt(sum(x * x for x in a))
print(f"{d / r:.3g}")
