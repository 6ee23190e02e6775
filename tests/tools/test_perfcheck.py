#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Tests of `tools/ukern perf-check`'s comparison (tools/perfcheck.py) on
canned counts: no build, no valgrind."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))

import perfcheck  # noqa: E402

A = "sbitmap:BM_SbqGetClear/64"
B = "shim:shim/spin_lock_unlock"


def verdicts(base, now, tolerance=2.0):
    rows, ok = perfcheck.compare(base, now, tolerance)
    return {r[0]: r[4] for r in rows}, ok


class CompareTest(unittest.TestCase):
    def test_same_counts_pass(self):
        v, ok = verdicts({A: 200.0, B: 40.0}, {A: 200.0, B: 40.0})
        self.assertTrue(ok)
        self.assertEqual(v, {A: perfcheck.OK, B: perfcheck.OK})

    def test_three_percent_up_fails(self):
        v, ok = verdicts({A: 200.0, B: 40.0}, {A: 206.0, B: 40.0})
        self.assertFalse(ok)
        self.assertEqual(v[A], perfcheck.UP)
        self.assertEqual(v[B], perfcheck.OK)

    def test_three_percent_down_fails(self):
        v, ok = verdicts({A: 200.0}, {A: 194.0})
        self.assertFalse(ok)
        self.assertEqual(v[A], perfcheck.DOWN)

    def test_one_percent_either_way_passes(self):
        self.assertTrue(verdicts({A: 200.0}, {A: 202.0})[1])
        self.assertTrue(verdicts({A: 200.0}, {A: 198.0})[1])

    def test_the_tolerance_is_a_bound_both_ways(self):
        self.assertTrue(verdicts({A: 100.0}, {A: 102.0})[1])
        self.assertFalse(verdicts({A: 100.0}, {A: 102.1})[1])
        self.assertFalse(verdicts({A: 100.0}, {A: 97.9})[1])
        self.assertTrue(verdicts({A: 100.0}, {A: 104.0}, tolerance=5)[1])

    def test_entry_missing_from_the_baseline_fails(self):
        v, ok = verdicts({A: 200.0}, {A: 200.0, B: 40.0})
        self.assertFalse(ok)
        self.assertEqual(v[B], perfcheck.NO_BASE)

    def test_entry_missing_from_the_build_fails(self):
        v, ok = verdicts({A: 200.0, B: 40.0}, {A: 200.0})
        self.assertFalse(ok)
        self.assertEqual(v[B], perfcheck.NO_BUILD)

    def test_a_run_without_a_count_fails(self):
        v, ok = verdicts({A: 200.0}, {A: None})
        self.assertFalse(ok)
        self.assertEqual(v[A], perfcheck.NO_COUNT)

    def test_change_in_percent(self):
        rows, _ = perfcheck.compare({A: 200.0}, {A: 206.0}, 2.0)
        self.assertAlmostEqual(rows[0][3], 3.0)
        self.assertIn("+3.00", perfcheck.table(rows))


class ExcludedTest(unittest.TestCase):
    DATA = {"excluded": [
        {"suite": "*", "match": "threads:", "reason": "threads"},
        {"suite": "shim", "match": "/real_time$", "reason": "waits"}]}

    def test_rules(self):
        ex = perfcheck.excluded
        self.assertEqual(ex(self.DATA, "aio", "BM_X/threads:4"), "threads")
        self.assertEqual(ex(self.DATA, "shim", "BM_Rcu/0/real_time"), "waits")
        self.assertIsNone(ex(self.DATA, "nullb", "BM_Rcu/0/real_time"))
        self.assertIsNone(ex(self.DATA, "shim", "shim/spin_lock_unlock"))


class CheckTest(unittest.TestCase):
    """check() end to end, the counts canned in place of callgrind."""

    def run_check(self, figures, now, subset=None, ci=()):
        """`now` gives each name a count, or a list of the counts its
        successive runs give."""
        data = {"excluded": [], "subsets": {"ci": list(ci)},
                "suites": {"sbitmap": {"measured": {},
                                       "ir_per_iteration": figures}}}
        names = list(now)
        left = {k: list(v) if isinstance(v, list) else None
                for k, v in now.items()}
        self.counted = {k: 0 for k in now}

        def measure(binary, name, min_time, tmp):
            self.counted[name] += 1
            if left[name] is None:
                return now[name]
            return left[name].pop(0)

        def profile(binary, name, min_time, tmp):
            return 1000, [(50.0, "blk/sbitmap.cc:sbitmap_get(sbitmap*)")]
        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(perfcheck, "measure", measure), \
                mock.patch.object(perfcheck, "profile", profile), \
                mock.patch.object(perfcheck.icount, "list_tests",
                                  lambda b, f: names), \
                redirect_stdout(out), redirect_stderr(err):
            rc = perfcheck.check(data, ["sbitmap"], subset, 2.0, "0.5")
        return rc, out.getvalue(), err.getvalue()

    def test_within_tolerance_exits_0(self):
        rc, out, _ = self.run_check({"a": 100.0, "b": 50.0},
                                    {"a": 101.0, "b": 50.0})
        self.assertEqual(rc, 0)
        self.assertIn("sbitmap:a", out)

    def test_a_move_exits_1_and_names_the_update(self):
        rc, _, err = self.run_check({"a": 100.0}, {"a": 97.0})
        self.assertEqual(rc, 1)
        self.assertIn("tools/ukern perf-check --update sbitmap", err)

    def test_an_entry_within_tolerance_is_counted_once(self):
        rc, _, _ = self.run_check({"a": 100.0}, {"a": [101.0, 150.0, 150.0]})
        self.assertEqual(rc, 0)
        self.assertEqual(self.counted["a"], 1)

    def test_one_high_count_is_outvoted_by_two_recounts(self):
        rc, out, err = self.run_check({"a": 100.0},
                                      {"a": [104.0, 100.0, 100.5]})
        self.assertEqual(rc, 0)
        self.assertEqual(self.counted["a"], 3)
        self.assertIn("counted 3 times: 100.0, 100.5, 104.0; median 100.5",
                      err)
        self.assertIn("100.5", out)
        self.assertNotIn("sbitmap_get", err)

    def test_a_move_in_two_of_three_counts_fails_with_a_profile(self):
        rc, out, err = self.run_check({"a": 100.0},
                                      {"a": [104.0, 100.0, 103.0]})
        self.assertEqual(rc, 1)
        self.assertIn("median 103.0", err)
        self.assertIn("per iteration of a run of 1000", err)
        self.assertIn("sbitmap_get", err)
        self.assertIn(perfcheck.UP, out)

    def test_a_recount_without_a_count_is_left_out(self):
        rc, _, err = self.run_check({"a": 100.0}, {"a": [97.0, None, 100.0]})
        self.assertEqual(rc, 0)
        self.assertIn("counted 2 times", err)

    def test_renamed_benchmark_exits_1(self):
        rc, out, _ = self.run_check({"a": 100.0}, {"a2": 100.0})
        self.assertEqual(rc, 1)
        self.assertIn(perfcheck.NO_BASE, out)
        self.assertIn(perfcheck.NO_BUILD, out)

    def test_subset_counts_only_its_entries(self):
        rc, out, _ = self.run_check({"a": 100.0, "b": 50.0},
                                    {"a": 100.0, "b": 60.0},
                                    subset="ci", ci=["sbitmap:a"])
        self.assertEqual(rc, 0)
        self.assertNotIn("sbitmap:b", out)

    def test_subset_entry_in_neither_exits_1(self):
        rc, out, _ = self.run_check({"a": 100.0}, {"a": 100.0},
                                    subset="ci", ci=["sbitmap:a", "sbitmap:z"])
        self.assertEqual(rc, 1)
        self.assertIn("sbitmap:z", out)


class FileTest(unittest.TestCase):
    def test_committed_baseline_is_consistent(self):
        data = perfcheck.load(perfcheck.BASELINE)
        for rule in data["excluded"]:
            self.assertTrue(rule["reason"])
        figures = {perfcheck.key(s, n)
                   for s, v in data["suites"].items()
                   for n in v["ir_per_iteration"]}
        for k in data["subsets"]["ci"]:
            self.assertIn(k, figures)
        for s, v in data["suites"].items():
            for field in ("commit", "compiler", "machine", "preset"):
                self.assertTrue(v["measured"][field])

    def test_save_load_round_trip(self):
        data = {"suites": {"x": {"ir_per_iteration": {"a/1": 12.5}}}}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "b.json")
            perfcheck.save(path, data)
            self.assertEqual(perfcheck.load(path), data)
            with open(path) as f:
                self.assertEqual(json.load(f), data)


# A callgrind file in the shape valgrind 3.19 writes: compressed names, the
# function's name first given as a callee (cfn=), and part of its lines in an
# inlined header (fi=/fe=). uk::host_vcpu_slow() has 4 + 6 instructions of
# its own and calls sched_getcpu() for 20: 30 in all, counted once.
CANNED_CALLGRIND = """version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 100

fl=(1) bench.cc
fn=(1) main
10 40
cfl=(2) cpu.cc
cfn=(2) uk::host_vcpu_slow()
calls=1 5
11 30
fl=(2)
fn=(2)
fi=(3) cpu.h
7 4
cfl=(4) sched_getcpu.c
cfn=(4) sched_getcpu
calls=1 3
8 20
fe=(2)
12 6
fl=(4)
fn=(4)
3 20
"""


class InclusiveTest(unittest.TestCase):
    def test_function_with_inlined_parts_counts_once(self):
        import icount
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cg.out")
            with open(path, "w") as f:
                f.write(CANNED_CALLGRIND)
            self.assertEqual(icount.inclusive(path, icount.SLOW_CPU), 30)
            self.assertEqual(icount.summary(path), 100)


if __name__ == "__main__":
    unittest.main()
