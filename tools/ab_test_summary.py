#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Summarises `tools/ukern ab --test`: the ctest results of both sides.

Usage: ab_test_summary.py [--before LABEL] [--after LABEL] LOGDIR PRESET...

For each PRESET it reads LOGDIR/before-PRESET.log and LOGDIR/after-PRESET.log
(ctest's output; a side whose build failed has LOGDIR/SIDE-PRESET.build.log
and no ctest log), and prints a table with one row per preset, then the
tests that fail on one side only, then a last line with each side's state.
Its exit status is 0 whenever it could print that.
"""
import argparse
import os
import re
import sys

# "96% tests passed, 2 tests failed out of 50"
SUMMARY = re.compile(r"^\s*\d+% tests passed, (\d+) tests? failed out of (\d+)\s*$")
# "\t  3 - Sbitmap.Fails (Failed)", perhaps followed by the test's labels;
# a name may itself hold spaces and parentheses (typed GoogleTest tests).
FAILED_ROW = re.compile(r"^\s*\d+ - (.+) \(([^()]+)\)(?:\s+[^()]*)?$")
CELL_NAMES = 5


class Result:
    """One side's ctest run for one preset.

    state: "ran" (a summary line was found), "build" (the build failed),
    "none" (no test matched), "missing" (no log), or "cut" (the log has no
    summary: ctest was killed or crashed).
    """

    def __init__(self, state, total=0, failed=None):
        self.state = state
        self.total = total
        self.failed = failed or []

    @property
    def ok(self):
        return self.state == "ran" and not self.failed

    def cell(self):
        if self.state == "build":
            return "BUILD FAILED"
        if self.state == "none":
            return "no tests matched"
        if self.state == "missing":
            return "not run"
        if self.state == "cut":
            return "no ctest summary (see log)"
        if not self.failed:
            return f"passed {self.total}/{self.total}"
        names = self.failed[:CELL_NAMES]
        more = len(self.failed) - len(names)
        return (f"FAILED {len(self.failed)}: " + " ".join(names) +
                (f" (+{more} more)" if more else ""))


def parse(text):
    """The Result of one ctest log."""
    total = failed_count = None
    failed = []
    in_failed = False
    no_tests = False
    for line in text.splitlines():
        m = SUMMARY.match(line)
        if m:
            failed_count, total = int(m.group(1)), int(m.group(2))
            continue
        if line.strip() == "No tests were found!!!":
            no_tests = True
            continue
        if line.startswith("The following tests FAILED:"):
            in_failed = True
            continue
        if in_failed:
            m = FAILED_ROW.match(line)
            if m:
                failed.append(m.group(1))
                continue
            in_failed = False
    if total is None:
        return Result("none" if no_tests else "cut")
    if failed_count and not failed:
        # The count without the names: keep the count visible.
        failed = [f"?{i + 1}" for i in range(failed_count)]
    return Result("ran", total, failed)


def load(logdir, side, preset):
    log = os.path.join(logdir, f"{side}-{preset}.log")
    if os.path.exists(log):
        with open(log, errors="replace") as f:
            return parse(f.read())
    if os.path.exists(os.path.join(logdir, f"{side}-{preset}.build.log")):
        return Result("build")
    return Result("missing")


def one_sided(rows):
    """{test: [presets]} for tests failing only after (broken) and only
    before (fixed), over the presets where both sides ran."""
    broken, fixed = {}, {}
    for preset, b, a in rows:
        if b.state != "ran" or a.state != "ran":
            continue
        bf, af = set(b.failed), set(a.failed)
        for t in af - bf:
            broken.setdefault(t, []).append(preset)
        for t in bf - af:
            fixed.setdefault(t, []).append(preset)
    return fixed, broken


def listing(tests, compared):
    """Names, each with its presets unless it is one-sided in all of them."""
    if not tests:
        return "none"
    out = []
    for t in sorted(tests):
        ps = tests[t]
        out.append(t if ps == compared else f"{t} [{','.join(ps)}]")
    return " ".join(out)


def side_state(results):
    """'ok', 'N failing', and what did not build or run."""
    failing = set()
    notes = []
    for preset, r in results:
        if r.state == "ran":
            failing.update(r.failed)
        elif r.state == "build":
            notes.append(f"build failed ({preset})")
        elif r.state == "none":
            notes.append(f"no tests matched ({preset})")
        else:
            notes.append(f"no result ({preset})")
    parts = [f"{len(failing)} failing"] if failing else []
    parts += notes
    return ", ".join(parts) if parts else "ok"


def report(rows, before="before", after="after"):
    """The summary's lines for rows of (preset, before Result, after Result)."""
    heads = ("preset", f"before {before}", f"after {after}")
    table = [heads] + [(p, b.cell(), a.cell()) for p, b, a in rows]
    w0 = max(len(r[0]) for r in table)
    w1 = max(len(r[1]) for r in table)
    lines = [f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]}".rstrip() for r in table]
    compared = [p for p, b, a in rows if b.state == "ran" and a.state == "ran"]
    fixed, broken = one_sided(rows)
    lines.append(f"fixed by after: {listing(fixed, compared)}")
    lines.append(f"broken by after: {listing(broken, compared)}")
    lines.append("ab --test: before {}, after {}".format(
        side_state([(p, b) for p, b, _ in rows]),
        side_state([(p, a) for p, _, a in rows])))
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="before", help="the before side's label")
    ap.add_argument("--after", default="after", help="the after side's label")
    ap.add_argument("logdir")
    ap.add_argument("presets", nargs="+")
    args = ap.parse_args(argv[1:])
    rows = [(p, load(args.logdir, "before", p), load(args.logdir, "after", p))
            for p in args.presets]
    print("\n".join(report(rows, args.before, args.after)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
