#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Fresh memory-backed null_blk writes through libukern_aio.so, side by side.

    fresh_write_ab.py [--rounds K] [--cmdline STR ...] LIB [LIB2]

Runs the fio job of docs/performance.md ("Writes to a fresh memory-backed
device") K times with each library and each UKERN_CMDLINE (default: the
reserve sized to the data), all of them once in every round, in turn, so
that a shared machine's load lands on each. Per run it prints fio's write
bandwidth, the median and p99 completion latency (p50: an uninterrupted
batch of 32 writes) and the CPU time of fio's job thread per write (its
usr + sys share of the run), which a busy machine moves less than the
bandwidth. It ends with the medians of each, and with two libraries (one
command line) the LIB2/LIB ratios.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CMDLINE = "null_blk.memory_backed=1 null_blk.gb=1 page_alloc.reserve_mb=600"
JOB = ["fio", "--name=w", "--filename=/dev/ukern/nullb0", "--rw=write", "--bs=4k",
       "--iodepth=32", "--direct=1", "--size=512m", "--ioengine=libaio", "--thread",
       "--output-format=json"]
NAMES = ["MiB/s", "clat p50 us", "clat p99 us", "job cpu us/write"]


def run(lib, cmdline):
    """(MiB/s, clat p50 and p99 in us, job CPU us per write) of one fio run."""
    env = dict(os.environ, UKERN_CMDLINE=cmdline, LD_PRELOAD=os.path.abspath(lib))
    out = subprocess.run(JOB, env=env, capture_output=True, text=True, check=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]
    w = job["write"]
    pct = w["clat_ns"]["percentile"]
    cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100 * job["job_runtime"] / 1000
    return (w["bw"] / 1024, pct["50.000000"] / 1000, pct["99.000000"] / 1000,
            cpu_s * 1e6 / w["total_ios"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--cmdline", action="append",
                    help=f"UKERN_CMDLINE of a run (repeatable; default {CMDLINE!r})")
    ap.add_argument("libs", nargs="+")
    args = ap.parse_args()
    if len(args.libs) > 2:
        ap.error("one or two libraries")
    cmdlines = args.cmdline or [CMDLINE]
    kinds = [(lib, cl) for lib in args.libs for cl in cmdlines]
    res = {k: [] for k in kinds}
    for r in range(args.rounds):
        for lib, cl in kinds:
            bw, p50, p99, cpu = run(lib, cl)
            res[(lib, cl)].append((bw, p50, p99, cpu))
            label = lib if len(cmdlines) == 1 else cl
            print(f"round {r + 1:2} {label:40} {bw:7.0f} MiB/s  clat p50 {p50:6.1f} us  "
                  f"p99 {p99:7.1f} us  job cpu {cpu:.3f} us/write", flush=True)
    print("medians")
    for lib, cl in kinds:
        med = [statistics.median(x[i] for x in res[(lib, cl)]) for i in range(len(NAMES))]
        label = lib if len(cmdlines) == 1 else cl
        print(f"  {label:40} {med[0]:7.0f} MiB/s  clat p50 {med[1]:6.1f} us  "
              f"p99 {med[2]:7.1f} us  job cpu {med[3]:.3f} us/write")
    if len(args.libs) != 2 or len(cmdlines) != 1:
        return 0
    a, b = (res[k] for k in kinds)
    for i, name in enumerate(NAMES):
        ma = statistics.median(x[i] for x in a)
        mb = statistics.median(x[i] for x in b)
        per = statistics.median(y[i] / x[i] for x, y in zip(a, b))
        print(f"{name:17} median {ma:9.3f} -> {mb:9.3f}   ratio of medians {mb / ma:.3f}"
              f"   median of round ratios {per:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
