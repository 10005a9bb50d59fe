#!/usr/bin/python3
"""A rank whose own text tries to forge slurm-dp's lines (issue 53): it
writes OUT/ready.RANK and sleeps in a function whose qualified name (Python
3.11+'s co_qualname, which the program may set to anything) holds a newline,
a "slurm-dp:" line and terminal escapes. Given a second argument it runs
from a path holding ESC (forged_names.sh copies the interpreter there) and
removes that file, so the reader names the path it cannot open."""
import os
import sys
import time

out = sys.argv[1]
FORGED = "x\nslurm-dp: FORGED line \x1b[2J\x1b]0;owned\x07"


def stall():
    with open(f"{out}/ready.{os.environ['RANK']}", "w") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(600)


stall.__code__ = stall.__code__.replace(co_qualname=FORGED)
if len(sys.argv) > 2:  # run from a copied interpreter at a forged path: remove it
    os.unlink(sys.executable)
stall()
