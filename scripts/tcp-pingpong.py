#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# tcp-pingpong.py N: one byte each way over a TCP loopback connection, N
# round trips, both ends in this process on CPU 0 (no wake-ups: each send
# runs the whole TCP path, through the loopback device's softirq, in the
# sender's own call). Prints the mean half round trip in microseconds.
# scripts/guest-bench.sh (KRUST_NEIGHBOUR=1) runs it beside what CPU 1 runs.
import os
import socket
import sys
import time

os.sched_setaffinity(0, {0})
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
a = socket.create_connection(listener.getsockname())
b, _ = listener.accept()
for s in (a, b):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def rounds(n):
    for _ in range(n):
        a.send(b"x")
        b.recv(1)
        b.send(b"y")
        a.recv(1)


n = int(sys.argv[1])
rounds(2000)
start = time.perf_counter()
rounds(n)
print("%.2f" % ((time.perf_counter() - start) / n / 2 * 1e6))
