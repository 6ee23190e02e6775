#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Instructions per iteration of single-threaded benchmarks, under callgrind.

    icount.py [--filter RE] [--min-time T] BIN [BIN2]

On a shared VM one benchmark's ns/op moves by half between runs of the same
binary; the number of instructions it retires does not. Each benchmark of
BIN that the filter selects runs once under valgrind's callgrind, which
zeroes its counters when a timed loop starts (State::StartKeepRunning) and
writes them out when it ends (State::FinishKeepRunning): one dump per run,
the sizing runs and the timed one. Google Benchmark's `--v=2` log gives each
run's iteration count, and the last (timed) run's dump divided by it is the
figure: setup outside the loop is never counted, and what the loop costs
once (entry, exit: a few hundred instructions) is lost in the division.
Only the benchmark's own thread is counted (callgrind --separate-threads),
not the shim's tick thread.

The counts are exact but not always identical from run to run: the code
under test may take another path where it draws a random number or waits
for another thread. (sbitmap's allocation hints start at random, as in the
kernel; the sbitmap suite's get+clear loops set them to bit 0 first.)
tools/perfcheck.py holds each suite's counts against a baseline and lists
the benchmarks whose count moves.

Valgrind has no rseq, so there the shim reads the CPU number through
sched_getcpu() (uk::host_vcpu_slow()) where natively it loads it from the
rseq area in one instruction. That cost is printed apart ("getcpu") and
left out of "Ir/iter".

With a second binary (the same suite built from another revision) each
benchmark is counted in both and the ratio BIN2/BIN is printed.

Benchmarks that run threads (`threads:N`, `manual_time`) are skipped: the
count is meant for per-operation cost on one thread.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

SLOW_CPU = "uk::host_vcpu_slow()"


def list_tests(binary, filt):
    out = subprocess.run(
        [binary, "--benchmark_list_tests", f"--benchmark_filter={filt}"],
        check=True, capture_output=True, text=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def single_threaded(name):
    return "threads:" not in name and "manual_time" not in name


def summary(path):
    with open(path) as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1])
    return 0


def inclusive(path, fn):
    """Inclusive Ir of function fn, read from the callgrind file itself.

    The sum is of the cost lines recorded while fn is the current function:
    its own instructions, in whichever file their lines are (callgrind_annotate
    splits a function with inlined code into one entry per file, and gives the
    whole inclusive cost to one of them as well, so adding its entries counts
    part of the function twice), and the inclusive cost of each call it makes
    (the cost line after each `calls=` line).
    """
    names = {}
    total = 0
    cur = None
    with open(path) as f:
        for line in f:
            if line.startswith(("fn=", "cfn=")):
                # A compressed name "(id) name" is defined where it first
                # appears, as caller or callee; later lines give "(id)".
                key, _, val = line.rstrip("\n").partition("=")
                m = re.match(r"\((\d+)\)(?: (.*))?$", val)
                if m and m.group(2) is not None:
                    names[m.group(1)] = m.group(2)
                if key == "fn":
                    cur = names.get(m.group(1)) if m else val
            elif cur == fn and line[:1] in "0123456789+-*":
                fields = line.split()
                if len(fields) > 1:
                    total += int(fields[1])
    return total


def runs(binary, name, min_time, tmp):
    """[(iterations, callgrind dump)] of each run of the timed loop, the
    sizing runs first and the timed one last, or None. The dumps live in
    tmp until the next call."""
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    cg = os.path.join(tmp, "cg.out")
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--log-file={tmp}/vg.log",
         f"--callgrind-out-file={cg}", "--separate-threads=yes",
         "--zero-before=benchmark::State::StartKeepRunning()",
         "--dump-before=benchmark::State::FinishKeepRunning()", binary,
         f"--benchmark_filter=^{re.escape(name)}$",
         f"--benchmark_min_time={min_time}", "--benchmark_repetitions=1",
         "--v=2"],
        capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stderr[-2000:])
        return None
    iters = [int(n) for n in re.findall(
        rf"Running {re.escape(name)} for (\d+)", run.stderr)]
    # Thread 1 is the one that runs a single-threaded benchmark.
    dumps = sorted(int(m.group(1)) for m in (
        re.fullmatch(r"cg\.out\.(\d+)-01", f) for f in os.listdir(tmp)) if m)
    if not iters or len(dumps) != len(iters):
        return None
    return [(n, os.path.join(tmp, f"cg.out.{d}-01"))
            for n, d in zip(iters, dumps)]


def count(binary, name, min_time, tmp):
    """(iterations, Ir per iteration, getcpu Ir per iteration) or None."""
    res = runs(binary, name, min_time, tmp)
    if res is None:
        return None
    n, last = res[-1]
    ir, slow = summary(last), inclusive(last, SLOW_CPU)
    return n, (ir - slow) / n, slow / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--filter", default=".")
    ap.add_argument("--min-time", default="0.5")
    ap.add_argument("binaries", nargs="+")
    args = ap.parse_args()
    if len(args.binaries) > 2:
        ap.error("one or two binaries")
    names = list_tests(args.binaries[0], args.filter)
    with tempfile.TemporaryDirectory() as tmp:
        two = len(args.binaries) == 2
        head = f"{'benchmark':44} {'iterations':>10} {'Ir/iter':>9} {'getcpu':>7}"
        if two:
            head += f" {'Ir/iter 2':>9} {'2/1':>6}"
        print(head)
        for name in names:
            if not single_threaded(name):
                print(f"{name:44} skipped (threads)")
                continue
            res = [count(b, name, args.min_time, tmp) for b in args.binaries]
            if res[0] is None:
                print(f"{name:44} no count (the run failed)")
                continue
            iters, ir, slow = res[0]
            line = f"{name:44} {iters:10d} {ir:9.1f} {slow:7.1f}"
            if two:
                if res[1] is None:
                    line += f" {'-':>9} {'-':>6}"
                else:
                    line += f" {res[1][1]:9.1f} {res[1][1] / ir:6.3f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
