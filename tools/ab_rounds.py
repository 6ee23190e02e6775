#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Summarises `tools/ukern ab --rounds K`.

Arguments: the two revision names, then the rounds' Google Benchmark JSON
files in pairs (before, after). For each benchmark it prints the median
over the rounds of each side's per-round median, the after/before ratio of
those, and the median and range of the per-round after/before ratios.
"""
import json
import statistics
import sys


def medians(path):
    with open(path) as f:
        data = json.load(f)
    out = {}
    for b in data.get("benchmarks", []):
        if b.get("aggregate_name") == "median":
            out[b["run_name"]] = b["real_time"]
    return out


def main(argv):
    before, after, files = argv[1], argv[2], argv[3:]
    if len(files) % 2:
        sys.exit("ab_rounds.py: the JSON files must come in pairs")
    rounds = [(medians(files[i]), medians(files[i + 1]))
              for i in range(0, len(files), 2)]
    names = [n for n in rounds[0][0] if all(n in a and n in b for a, b in rounds)]
    print(f"{len(rounds)} rounds, alternating; times are medians (real time)")
    print(f"{'benchmark':58} {before[:12]:>12} {after[:12]:>12} {'after/before':>12}"
          f" {'per-round ratio (min..max)':>28}")
    for n in names:
        b = [r[0][n] for r in rounds]
        a = [r[1][n] for r in rounds]
        ratios = [y / x for x, y in zip(b, a) if x > 0]
        mb, ma = statistics.median(b), statistics.median(a)
        print(f"{n[:58]:58} {mb:12.4g} {ma:12.4g} {ma / mb if mb else 0:12.3f}"
              f" {statistics.median(ratios):10.3f} ({min(ratios):.3f}..{max(ratios):.3f})")


if __name__ == "__main__":
    main(sys.argv)
