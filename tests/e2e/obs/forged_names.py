#!/usr/bin/python3
"""A rank whose own text tries to forge slurm-dp's lines (issue 53): it
writes OUT/ready.RANK and sleeps in a function whose qualified name (Python
3.11+'s co_qualname, which the program may set to anything) holds a newline,
a "slurm-dp:" line and terminal escapes. On Python before 3.13 no frame is
read; forged_names.sh then runs this from a path holding ESC instead, and
the rank removes that file so the reader names the path."""
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
