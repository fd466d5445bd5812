#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# rounds-by-load.py FILE...: the latency ratios rdma-krust / perftest of
# paired rounds (the bench-boot-N.jsonl and bench-round-R.jsonl files of
# KRUST_BENCH_LAT_ROUNDS, or any bench.jsonl), pooled over every round
# given, and again in thirds by how loaded the host was in that round.
#
# A round's ratio for an operation is its rdma-krust row (e.g. send-spin)
# over perftest's row of that operation in the same file. The load of the
# round is the median of perftest's *other* latency rows in the same file
# (for SEND: WRITE and READ), not perftest's row of the ratio itself:
# sorting by the ratio's own denominator would put the rounds where
# perftest happened to be fast into the quiet third and bias it upwards
# (regression to the mean), whatever the host did.
#
# Prints, per rdma-krust row: the rounds, the pooled median ratio, how
# many rounds were at or below 1.0, and the median ratio of each third,
# from the quietest to the busiest, with the thirds' load bounds in us.
import json
import statistics
import sys


def rounds(paths):
    """(op, ratio, load) of every rdma-krust latency row with a perftest row."""
    out = []
    for path in paths:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        perftest = {
            r["op"]: r["t_typical"]
            for r in rows
            if r.get("tool") == "perftest" and r.get("mode") == "lat"
        }
        for r in rows:
            if r.get("tool") != "rdma-krust" or r.get("mode") != "lat":
                continue
            base = r["op"].removesuffix("-spin")
            if base not in perftest or not perftest[base]:
                continue
            others = [v for op, v in perftest.items() if op != base]
            load = statistics.median(others) if others else perftest[base]
            out.append((r["op"], r["t_typical"] / perftest[base], load))
    return out


def main():
    if len(sys.argv) < 2:
        print("usage: rounds-by-load.py FILE...", file=sys.stderr)
        return 2
    data = rounds(sys.argv[1:])
    print(f"{'op':<12} {'rounds':>6} {'ratio':>6} {'<=1.0':>6}  by load, quietest third first")
    for op in sorted({op for op, _, _ in data}):
        rs = sorted(((load, ratio) for o, ratio, load in data if o == op))
        n = len(rs)
        pooled = statistics.median(r for _, r in rs)
        at_most = sum(1 for _, r in rs if r <= 1.0)
        thirds = []
        for i in range(3):
            part = rs[i * n // 3 : (i + 1) * n // 3]
            if part:
                thirds.append(
                    f"{statistics.median(r for _, r in part):.2f}"
                    f" ({part[0][0]:.0f}-{part[-1][0]:.0f} us)"
                )
        print(f"{op:<12} {n:>6} {pooled:>6.3f} {at_most:>6}  {', '.join(thirds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
