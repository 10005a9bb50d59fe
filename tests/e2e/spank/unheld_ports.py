#!/usr/bin/python3
"""usage: unheld_ports.py PORT...  ->  the ports nobody holds: each binds here
(every address, as root, without SO_REUSEADDR) and is let go at once."""
import socket
import sys

free = []
for port in map(int, sys.argv[1:]):
    s = socket.socket(socket.AF_INET6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    try:
        s.bind(("::", port))
        free.append(str(port))
    except OSError:
        pass
    finally:
        s.close()
print(" ".join(free))
