#!/usr/bin/python3
"""Every TCP or UDP socket a user's processes hold, as root sees it.

usage: user_sockets.py UID  ->  one line "PID FD PORT" per IPv4/IPv6 socket of
every process whose real uid is UID: its local port, bound or listening or
connected. Each descriptor is copied with pidfd_getfd (Linux 5.6+, root) and
asked with getsockname, so a socket that is bound and does not listen (which
/proc/net/tcp and ss never show) and one in another network namespace are
seen too.
"""
import ctypes
import os
import socket
import sys

SYS_PIDFD_GETFD = 438
libc = ctypes.CDLL(None, use_errno=True)
uid = sys.argv[1]


def real_uid(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Uid:"):
                return line.split()[1]
    return None


for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if real_uid(pid) != uid:
            continue
        fds = os.listdir(f"/proc/{pid}/fd")
        pidfd = os.pidfd_open(int(pid))
    except OSError:
        continue  # gone meanwhile
    for fd in fds:
        try:
            if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                continue
        except OSError:
            continue
        copy = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(fd), 0)
        if copy < 0:
            continue
        s = socket.socket(fileno=copy)
        try:
            if s.family in (socket.AF_INET, socket.AF_INET6):
                print(pid, fd, s.getsockname()[1], flush=True)
        finally:
            s.close()
    os.close(pidfd)
