#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The message path's paired rounds (scripts/guest-bench.sh, group msg):
per figure, the median over every round of this build and of the old one,
and the median of the per-round ratios this / old with their spread.

    scripts/msg-rounds.py BOOT-DIR/out/msg-rounds.txt...

A ratio above 1 is this build faster for bandwidth (MB/s), slower for
latency (half a round trip in us): the "this is" column says which."""
import re
import statistics
import sys

LAT = re.compile(r"ping-pong (\d+) bytes.*half a round trip ([\d.]+) us median")
BW = re.compile(r"stream (\d+) bytes, \d+ messages: ([\d.]+) MB/s")


def rounds(paths):
    """{(file, round): {build: {figure: value}}}"""
    got = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"round (\d+) (\w+): (.*)", line)
                if not m:
                    continue
                r, build, rest = m.groups()
                fig = LAT.search(rest)
                if fig:
                    key, val = f"lat {fig.group(1)} B (us)", float(fig.group(2))
                else:
                    fig = BW.search(rest)
                    if not fig:
                        continue
                    key, val = f"bw {fig.group(1)} B (MB/s)", float(fig.group(2))
                got.setdefault((path, r), {}).setdefault(build, {})[key] = val
    return got


def main():
    got = rounds(sys.argv[1:])
    keys = sorted({k for r in got.values() for b in r.values() for k in b})
    print(f"{'figure':<20} {'rounds':>6} {'old':>9} {'this':>9} {'ratio':>6} {'spread':>11}  this is")
    for key in keys:
        this = [r["this"][key] for r in got.values() if key in r.get("this", {})]
        old = [r["old"][key] for r in got.values() if key in r.get("old", {})]
        ratios = [r["this"][key] / r["old"][key] for r in got.values()
                  if key in r.get("this", {}) and key in r.get("old", {}) and r["old"][key] > 0]
        med = lambda v: f"{statistics.median(v):9.2f}" if v else f"{'-':>9}"
        if ratios:
            lo, hi, mid = min(ratios), max(ratios), statistics.median(ratios)
            better = (lo > 1) if key.startswith("bw") else (hi < 1)
            worse = (hi < 1) if key.startswith("bw") else (lo > 1)
            verdict = "faster" if better else "slower" if worse else "neither"
            print(f"{key:<20} {len(ratios):>6} {med(old)} {med(this)} {mid:6.2f} {lo:5.2f}-{hi:<5.2f}  {verdict}")
        else:
            print(f"{key:<20} {len(this):>6} {med(old)} {med(this)}")


if __name__ == "__main__":
    main()
