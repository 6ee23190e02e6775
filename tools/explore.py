#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""tools/ukern explore: builds the explore preset and runs its explore tests
(docs/explore.md).

  tools/ukern explore [--list] [--historical] [--replay STRING] [--jobs N]
                      [--budget SECONDS] [--schedules N] [--strategy S]
                      [--tsan] [--no-build] [TEST...]

TEST is a gtest name or pattern (Historical.SbitmapV61WakeCntFound,
'Historical.*'). --historical runs the Historical suite and ends with the line
"races: F of N found, S of N survived, R schedules/s". --jobs N runs N copies
of each test with seeds 1..N (random or PCT) and stops at the first failure.
--tsan builds and runs the explore-tsan preset instead: ThreadSanitizer fails
a schedule with a data race between plain accesses.
"""
import argparse
import fnmatch
import os
import platform
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESET = "explore"


def build_dir():
    return os.path.join(ROOT, "build", PRESET)


def test_dir():
    return os.path.join(build_dir(), "tests", "explore")


def build():
    env = dict(os.environ)
    if env.get("CI") == "true":
        env["UKERN_WERROR"] = "ON"  # as tools/ukern test: warnings are errors
    subprocess.check_call(["cmake", "--preset", PRESET], cwd=ROOT, env=env,
                          stdout=subprocess.DEVNULL)
    out = subprocess.run(["nice", "-n", "10", "cmake", "--build", build_dir(), "-j2",
                          "--target", "explore_tests"], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(out.stdout[-6000:] + out.stderr[-3000:])
        sys.exit("ukern: explore: the build of " + PRESET + " failed")


def binaries():
    d = test_dir()
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if f.startswith("explore_") and f.endswith("_test")
                  and os.access(os.path.join(d, f), os.X_OK))


def list_tests(binary):
    out = subprocess.run(launcher() + [binary, "--gtest_list_tests"], capture_output=True,
                         text=True).stdout
    tests, suite = [], None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split()[0]
        else:
            tests.append(suite + line.split()[0])
    return tests


def all_tests():
    return [(b, t) for b in binaries() for t in list_tests(b)]


def select(tests, patterns):
    if not patterns:
        return tests
    return [(b, t) for b, t in tests
            if any(fnmatch.fnmatchcase(t, p) or t == p for p in patterns)]


LINE = re.compile(r"^\[explore\] (\S+): (found|NOT found) after (\d+) schedules .* in "
                  r"([\d.]+) s")
RUN = re.compile(r"^\[explore\] (\S+): (\d+) schedules in ([\d.]+) s")


def launcher():
    """ThreadSanitizer (GCC 12) cannot cope with high mmap ASLR entropy: the
    explore-tsan binaries run without address randomization, as tools/ukern
    test runs the tsan preset's tests."""
    if PRESET == "explore-tsan" and shutil.which("setarch"):
        return ["setarch", platform.machine(), "-R"]
    return []


def run_one(binary, test, env, extra):
    t0 = time.time()
    p = subprocess.run(launcher() + [binary, "--gtest_filter=" + test] + extra,
                       env=env, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr, time.time() - t0


def run_jobs(binary, test, env, jobs, strategy):
    procs = []
    for i in range(jobs):
        e = dict(env)
        e["UKERN_EXPLORE_SEED"] = str(int(env.get("UKERN_EXPLORE_SEED", "1")) + i)
        e["UKERN_EXPLORE_STRATEGY"] = strategy or "pct"
        procs.append(subprocess.Popen(launcher() + [binary, "--gtest_filter=" + test], env=e,
                                      stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outputs, rc = [], 0
    pending = list(procs)
    while pending:
        for p in list(pending):
            if p.poll() is None:
                continue
            pending.remove(p)
            outputs.append(p.stdout.read())
            if p.returncode != 0:
                rc = p.returncode
                for q in pending:  # the first failure stops the others
                    q.kill()
        time.sleep(0.05)
    for p in procs:
        if p.stdout and not p.stdout.closed:
            try:
                outputs.append(p.stdout.read())
            except ValueError:
                pass
    return rc, "\n".join(outputs)


def main():
    ap = argparse.ArgumentParser(prog="tools/ukern explore")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--historical", action="store_true")
    ap.add_argument("--replay")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--budget", type=float, help="seconds per test")
    ap.add_argument("--schedules", type=int)
    ap.add_argument("--strategy", choices=["random", "pct", "dfs"])
    ap.add_argument("--tsan", action="store_true",
                    help="the explore-tsan preset: data races fail a schedule")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("tests", nargs="*")
    a = ap.parse_args()

    global PRESET
    if a.tsan:
        PRESET = "explore-tsan"
    if not a.no_build:
        build()
    tests = all_tests()
    patterns = list(a.tests)
    if a.historical:
        patterns = patterns or ["Historical.*"]
    chosen = select(tests, patterns)
    if a.list:
        for _, t in chosen:
            print(t)
        return 0
    if not chosen:
        sys.exit("ukern: explore: no test matches " + " ".join(patterns))

    env = dict(os.environ)
    if a.budget is not None:
        env["UKERN_EXPLORE_SECONDS"] = str(a.budget)
        env.setdefault("UKERN_EXPLORE_SCHEDULES", str(a.schedules or 10**9))
    if a.schedules is not None:
        env["UKERN_EXPLORE_SCHEDULES"] = str(a.schedules)
    if a.strategy:
        env["UKERN_EXPLORE_STRATEGY"] = a.strategy

    if a.replay:
        if len(chosen) != 1:
            sys.exit("ukern: explore: --replay needs exactly one TEST")
        b, t = chosen[0]
        rc, out, _ = run_one(b, t, env, ["--explore_replay=" + a.replay])
        sys.stdout.write(out)
        return rc

    failed = []
    found, survived, races = 0, 0, set()
    schedules, seconds = 0, 0.0
    for b, t in chosen:
        if a.jobs > 1:
            rc, out = run_jobs(b, t, env, a.jobs, a.strategy)
        else:
            rc, out, _ = run_one(b, t, env, [])
        for line in out.splitlines():
            m = LINE.match(line)
            if m:
                schedules += int(m.group(3))
                seconds += float(m.group(4))
                print(line)
                continue
            m = RUN.match(line)
            if m:
                schedules += int(m.group(2))
                seconds += float(m.group(3))
                print(line)
        name = t.split(".", 1)[1]
        if name.endswith("Found"):
            races.add(name[:-5])
            found += rc == 0
        elif name.endswith("Survives"):
            races.add(name[:-8])
            survived += rc == 0
        if rc != 0:
            failed.append(t)
            if a.verbose or not a.historical:
                sys.stdout.write(out)
        print("%-50s %s" % (t, "ok" if rc == 0 else "FAILED"))
    if a.historical:
        n = len(races)
        rate = schedules / seconds if seconds > 0 else 0
        print("races: %d of %d found, %d of %d survived, %.0f schedules/s"
              % (found, n, survived, n, rate))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
