#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Instruction counts against a committed baseline (`tools/ukern perf-check`).

    perfcheck.py [--subset ci] [--tolerance PCT] [SUITE...]
    perfcheck.py --update [SUITE...]

Each entry is one single-threaded benchmark of one suite, counted as
tools/icount.py counts it: the instructions one iteration of the timed loop
retires under callgrind, the benchmark's own thread only, the rseq stand-in
(uk::host_vcpu_slow()) left out. The baseline, benchmarks/icount-baseline.json,
holds the figure of every entry, the commit, compiler and machine each suite
was measured with, the benchmarks left out (with the reason) and the subsets.

A check prints one row an entry: the baseline, the count now and the change
in percent. An entry out of the tolerance is counted twice more and the
median of its three counts compared; one still out gets a profile of its
functions. It exits 1 when an entry moves by more than the tolerance, up or
down, so that the file stays true, and when an entry is in the baseline but
not in the build or the other way round (a renamed benchmark updates the
file). --update counts the suites again and writes their figures.

The figure is the timed run's count divided by its iterations (264,510 for
BM_SbqGetClear/64 at --min-time 0.5): what one run costs once, a few
hundred instructions, is lost in the division.
Google Benchmark 1.7.1 (Debian 12) takes no fixed iteration count
(--benchmark_min_time=Nx came with 1.8), so the count of iterations varies
from run to run and the figure must not depend on it: docs/perf-check.md
gives the measured spread.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

import icount
import seeds

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = os.path.join(TOP, "benchmarks", "icount-baseline.json")
BINDIR = os.path.join(TOP, "build", "release", "benchmarks")


def gbench_suites():
    """The suites of Google Benchmark benchmarks: benchmarks/<suite>/ whose
    *.cc include <benchmark/benchmark.h> (a suite may be a program of its
    own)."""
    out = []
    root = os.path.join(TOP, "benchmarks")
    for d in sorted(os.listdir(root)):
        path = os.path.join(root, d)
        if not os.path.isdir(path):
            continue
        for f in os.listdir(path):
            if f.endswith(".cc"):
                with open(os.path.join(path, f)) as src:
                    if "<benchmark/benchmark.h>" in src.read():
                        out.append(d)
                        break
    return out
MIN_TIME = "0.5"


# --- the baseline file --------------------------------------------------

def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, data):
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


def excluded(data, suite, name):
    """The reason `name` of `suite` is left out, or None."""
    for rule in data.get("excluded", []):
        if rule["suite"] in (suite, "*") and re.search(rule["match"], name):
            return rule["reason"]
    return None


def key(suite, name):
    return f"{suite}:{name}"


def split_key(k):
    suite, _, name = k.partition(":")
    return suite, name


# --- comparison: pure, on numbers ---------------------------------------

OK, UP, DOWN, NO_BASE, NO_BUILD, NO_COUNT = (
    "ok", "rose", "fell", "not in the baseline", "not in the build",
    "no count (the run failed)")


def change_pct(base, now):
    if base == 0:
        return 0.0 if now == 0 else float("inf")
    return (now - base) / base * 100.0


def compare(base, now, tolerance):
    """Rows (key, baseline, now, change %, verdict) over the union of the
    keys of `base` {key: Ir} and `now` {key: Ir, or None where the run gave
    no count}, and whether every row is OK."""
    rows = []
    for k in sorted(set(base) | set(now), key=lambda k: (split_key(k), k)):
        b = base.get(k)
        if k not in now:
            rows.append((k, b, None, None, NO_BUILD))
            continue
        n = now[k]
        if b is None:
            rows.append((k, None, n, None, NO_BASE))
        elif n is None:
            rows.append((k, b, None, None, NO_COUNT))
        else:
            c = change_pct(b, n)
            verdict = OK
            if c > tolerance:
                verdict = UP
            elif c < -tolerance:
                verdict = DOWN
            rows.append((k, b, n, c, verdict))
    return rows, all(r[4] == OK for r in rows)


def table(rows):
    width = max([len("benchmark")] + [len(r[0]) for r in rows])
    out = [f"{'benchmark':{width}} {'baseline':>10} {'now':>10} "
           f"{'change %':>9}  verdict"]
    for k, b, n, c, v in rows:
        bs = "-" if b is None else f"{b:.1f}"
        ns = "-" if n is None else f"{n:.1f}"
        cs = "-" if c is None else f"{c:+.2f}"
        out.append(f"{k:{width}} {bs:>10} {ns:>10} {cs:>9}  {v}")
    return "\n".join(out)


# --- counting -----------------------------------------------------------

def measure(binary, name, min_time, tmp):
    res = icount.count(binary, name, min_time, tmp)
    return None if res is None else round(res[1], 1)


RECOUNTS = 2
PROFILE_ROWS = 25


def profile(binary, name, min_time, tmp):
    """Rows (Ir per iteration, function) of the functions that retire the
    most instructions of their own in one count of `name`, the iterations
    of that run, or None."""
    res = icount.runs(binary, name, min_time, tmp)
    if res is None:
        return None
    n, dump = res[-1]
    out = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--auto=no", dump],
        capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*([\d.]+)%\)\s+(\S.*)$", line)
        # callgrind_annotate gives the frames above the timed loop (main,
        # the benchmark function) the whole count: they are not its own.
        if m and float(m.group(2)) < 50.0:
            fn = re.sub(r"^(\S*/)?\.\./\.\./", "", m.group(3))
            fn = re.sub(r" \[[^]]*\]$", "", fn)
            rows.append((int(m.group(1).replace(",", "")) / n, fn))
    rows.sort(key=lambda r: -r[0])
    return n, rows[:PROFILE_ROWS]


def recount(rows, tolerance, min_time, tmp):
    """Counts each entry that rose or fell RECOUNTS more times and takes
    the median of its counts: work that one run now and then carries
    moves one count and not the median, and a changed path moves all
    three. Prints the counts, and for an entry still out of the tolerance
    the functions that retire the most of its instructions, to compare
    with a count of the baseline's tree (tools/ukern icount). Returns the
    rows with the medians."""
    out = []
    for r in rows:
        k, b, n, c, v = r
        if v not in (UP, DOWN):
            out.append(r)
            continue
        suite, name = split_key(k)
        binary = os.path.join(BINDIR, f"ukern_bench_{suite}")
        counts = [n] + [measure(binary, name, min_time, tmp)
                        for _ in range(RECOUNTS)]
        counts = sorted(x for x in counts if x is not None)
        med = counts[len(counts) // 2]
        say(f"{k}: counted {len(counts)} times: "
            f"{', '.join(f'{x:.1f}' for x in counts)}; median {med:.1f}")
        row = compare({k: b}, {k: med}, tolerance)[0][0]
        if row[4] != OK:
            prof = profile(binary, name, min_time, tmp)
            if prof is not None:
                say(f"{k}: the functions that retire the most instructions "
                    f"of their own, per iteration of a run of {prof[0]}:")
                for ir, fn in prof[1]:
                    print(f"    {ir:10.1f}  {fn[:140]}", file=sys.stderr)
        out.append(row)
    return out, all(r[4] == OK for r in out)


def entries(data, suite, binary):
    """The benchmarks of `binary` that the gate counts."""
    return [n for n in icount.list_tests(binary, ".")
            if icount.single_threaded(n) and excluded(data, suite, n) is None]


def compiler():
    cache = os.path.join(os.path.dirname(BINDIR), "CMakeCache.txt")
    cxx = "c++"
    if os.path.exists(cache):
        with open(cache) as f:
            for line in f:
                if line.startswith("CMAKE_CXX_COMPILER:"):
                    cxx = line.split("=", 1)[1].strip()
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True,
                             text=True).stdout
        return out.splitlines()[0]
    except (OSError, IndexError):
        return cxx


def tool_version(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True).stdout
        return out.strip().splitlines()[0]
    except (OSError, IndexError):
        return "unknown"


def commit(baseline):
    """HEAD, with -dirty when tracked files other than the baseline differ."""
    def git(*a):
        return subprocess.run(["git", "-C", TOP, *a], capture_output=True,
                              text=True).stdout.strip()
    sha = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                f":!{os.path.relpath(os.path.abspath(baseline), TOP)}")
    return sha + ("-dirty" if dirty else "")


def say(msg):
    print(f"perf-check: {msg}", file=sys.stderr, flush=True)


def count_suite(data, suite, names, min_time, tmp):
    binary = os.path.join(BINDIR, f"ukern_bench_{suite}")
    out = {}
    for name in names:
        out[key(suite, name)] = measure(binary, name, min_time, tmp)
        say(f"{key(suite, name)}: {out[key(suite, name)]}")
    return out


def update(data, suites, min_time, path):
    rev = commit(path)
    with tempfile.TemporaryDirectory() as tmp:
        for suite in suites:
            binary = os.path.join(BINDIR, f"ukern_bench_{suite}")
            now = count_suite(data, suite, entries(data, suite, binary),
                              min_time, tmp)
            failed = [k for k, v in now.items() if v is None]
            if failed:
                say(f"no count for {', '.join(failed)}: {suite} left as it was")
                return 1
            data.setdefault("suites", {})[suite] = {
                "measured": {
                    "commit": rev,
                    "date": datetime.datetime.now(datetime.timezone.utc)
                    .strftime("%Y-%m-%d %H:%M UTC"),
                    "preset": "release",
                    "compiler": compiler(),
                    "machine": seeds.machine(),
                    "valgrind": tool_version(["valgrind", "--version"]),
                    "min_time": min_time,
                },
                "ir_per_iteration": {split_key(k)[1]: v
                                     for k, v in now.items()},
            }
            save(path, data)
            say(f"{suite}: {len(now)} entries written to {path}")
    return 0


def check(data, suites, subset, tolerance, min_time):
    base = {}
    for suite in suites:
        figures = data.get("suites", {}).get(suite, {}).get(
            "ir_per_iteration", {})
        base.update({key(suite, n): v for n, v in figures.items()})
    wanted = None
    if subset:
        wanted = {k for k in data["subsets"][subset]
                  if split_key(k)[0] in suites}
        base = {k: v for k, v in base.items() if k in wanted}
    now = {}
    with tempfile.TemporaryDirectory() as tmp:
        for suite in suites:
            binary = os.path.join(BINDIR, f"ukern_bench_{suite}")
            names = entries(data, suite, binary)
            if wanted is not None:
                names = [n for n in names if key(suite, n) in wanted]
            now.update(count_suite(data, suite, names, min_time, tmp))
        if wanted is not None:
            # A subset entry in neither the baseline nor the build.
            for k in wanted - set(base) - set(now):
                now[k] = None
        rows, ok = compare(base, now, tolerance)
        if not ok:
            rows, ok = recount(rows, tolerance, min_time, tmp)
    print(table(rows))
    comp = compiler()
    for suite in suites:
        m = data.get("suites", {}).get(suite, {}).get("measured", {})
        if m and m.get("compiler") != comp:
            say(f"{suite}: the baseline was measured with {m.get('compiler')}, "
                f"this build uses {comp}: counts differ between compilers")
    if ok:
        say(f"{len(rows)} entries within {tolerance:g}% of the baseline")
        return 0
    bad = [r for r in rows if r[4] != OK]
    moved = sorted({split_key(r[0])[0] for r in bad})
    say(f"{len(bad)} of {len(rows)} entries fail. A change that moves a count "
        f"by more than {tolerance:g}%, or adds, removes or renames a benchmark, "
        f"updates the baseline in the same commit:\n"
        f"    tools/ukern perf-check --update {' '.join(moved)}\n"
        f"    git add benchmarks/icount-baseline.json")
    return 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true",
                    help="count the suites again and write their figures")
    ap.add_argument("--subset", help="only the entries of this subset (ci)")
    ap.add_argument("--tolerance", type=float, default=2.0,
                    help="percent an entry may move either way (2)")
    ap.add_argument("--min-time", default=MIN_TIME,
                    help="Google Benchmark's --benchmark_min_time (0.5)")
    ap.add_argument("--baseline", default=BASELINE)
    ap.add_argument("suites", nargs="*", metavar="SUITE")
    args = ap.parse_args(argv)
    have = gbench_suites()
    for s in args.suites:
        if s not in have:
            ap.error(f"no suite {s!r} (have: {' '.join(have)})")
    suites = args.suites or have
    data = load(args.baseline)
    if args.update:
        if args.subset:
            ap.error("--update counts whole suites: no --subset")
        return update(data, suites, args.min_time, args.baseline)
    if args.subset and args.subset not in data.get("subsets", {}):
        ap.error(f"no subset {args.subset!r} in {args.baseline}")
    return check(data, suites, args.subset, args.tolerance, args.min_time)


if __name__ == "__main__":
    sys.exit(main())
