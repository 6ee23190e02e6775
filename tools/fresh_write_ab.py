#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Fresh memory-backed null_blk writes through libukern_aio.so, side by side.

    fresh_write_ab.py [--rounds K] LIB [LIB2]

Runs the fio job of docs/performance.md ("Writes to a fresh memory-backed
device") K times with each library, alternating LIB and LIB2 in every round
so that a shared machine's load lands on both. Per run it prints fio's write
bandwidth, the median completion latency (an uninterrupted batch of 32
writes) and the CPU time of fio's job thread per write (its usr + sys share
of the run), which a busy machine moves less than the bandwidth. With two
libraries it ends with the medians and the LIB2/LIB ratios.
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


def run(lib):
    """(MiB/s, clat p50 in us, job CPU us per write) of one fio run."""
    env = dict(os.environ, UKERN_CMDLINE=CMDLINE, LD_PRELOAD=os.path.abspath(lib))
    out = subprocess.run(JOB, env=env, capture_output=True, text=True, check=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]
    w = job["write"]
    cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100 * job["job_runtime"] / 1000
    return (w["bw"] / 1024, w["clat_ns"]["percentile"]["50.000000"] / 1000,
            cpu_s * 1e6 / w["total_ios"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("libs", nargs="+")
    args = ap.parse_args()
    if len(args.libs) > 2:
        ap.error("one or two libraries")
    res = {lib: [] for lib in args.libs}
    for r in range(args.rounds):
        for lib in args.libs:
            bw, p50, cpu = run(lib)
            res[lib].append((bw, p50, cpu))
            print(f"round {r + 1:2} {lib:40} {bw:7.0f} MiB/s  clat p50 {p50:6.1f} us  "
                  f"job cpu {cpu:.3f} us/write", flush=True)
    if len(args.libs) == 1:
        return 0
    a, b = (res[lib] for lib in args.libs)
    names = ["MiB/s", "clat p50 us", "job cpu us/write"]
    for i, name in enumerate(names):
        ma = statistics.median(x[i] for x in a)
        mb = statistics.median(x[i] for x in b)
        per = statistics.median(y[i] / x[i] for x, y in zip(a, b))
        print(f"{name:17} median {ma:9.3f} -> {mb:9.3f}   ratio of medians {mb / ma:.3f}"
              f"   median of round ratios {per:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
