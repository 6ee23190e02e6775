#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Summarises `tools/ukern ab --rounds K`.

Arguments: the two revision names, then the rounds' Google Benchmark JSON
files in pairs (before, after). For each benchmark it prints the median
over the rounds of each side's per-round median, the after/before ratio of
those, the median and range of the per-round after/before ratios, and each
side's fastest repetition over all rounds (on a shared VM the minimum is the
figure that neighbours disturb least).
"""
import json
import statistics
import sys


def load(path):
    """Per benchmark: the median aggregate and the fastest repetition."""
    with open(path) as f:
        data = json.load(f)
    med, low = {}, {}
    for b in data.get("benchmarks", []):
        n = b["run_name"]
        if b.get("aggregate_name") == "median":
            med[n] = b["real_time"]
        elif b.get("run_type") == "iteration":
            low[n] = min(low.get(n, b["real_time"]), b["real_time"])
    return med, low


def main(argv):
    before, after, files = argv[1], argv[2], argv[3:]
    if len(files) % 2:
        sys.exit("ab_rounds.py: the JSON files must come in pairs")
    loaded = [(load(files[i]), load(files[i + 1])) for i in range(0, len(files), 2)]
    rounds = [(b[0], a[0]) for b, a in loaded]
    names = [n for n in rounds[0][0] if all(n in a and n in b for a, b in rounds)]
    print(f"{len(rounds)} rounds, alternating; times are medians (real time);"
          " 'fastest' is each side's fastest repetition over all rounds")
    print(f"{'benchmark':50} {before[:12]:>12} {after[:12]:>12} {'after/before':>12}"
          f" {'per-round ratio (min..max)':>28} {'fastest before':>14}"
          f" {'fastest after':>14} {'ratio':>6}")
    for n in names:
        b = [r[0][n] for r in rounds]
        a = [r[1][n] for r in rounds]
        ratios = [y / x for x, y in zip(b, a) if x > 0]
        mb, ma = statistics.median(b), statistics.median(a)
        lb = min((r[0][1].get(n, float("inf")) for r in loaded), default=0)
        la = min((r[1][1].get(n, float("inf")) for r in loaded), default=0)
        fast = f" {lb:14.4g} {la:14.4g} {la / lb:6.3f}" if 0 < lb < float("inf") else ""
        print(f"{n[:50]:50} {mb:12.4g} {ma:12.4g} {ma / mb if mb else 0:12.3f}"
              f" {statistics.median(ratios):10.3f} ({min(ratios):.3f}..{max(ratios):.3f})"
              + fast)


if __name__ == "__main__":
    main(sys.argv)
