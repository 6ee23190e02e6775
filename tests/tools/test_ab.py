#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Tests of `tools/ukern ab`'s helpers, cheap enough for every CI run.

tools/ab_test_summary.py is fed ctest logs kept in ab_samples/ (a passing and
a failing run of the sbitmap tests, and a run with every kind of failure and
a typed test's name), and tools/ab_snapshot.py copies the working tree of a
throw-away git repository.
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "..", "tools")
SAMPLES = os.path.join(HERE, "ab_samples")
sys.path.insert(0, TOOLS)

import ab_snapshot  # noqa: E402
import ab_test_summary as summary  # noqa: E402

BROKEN = "SbitmapTest.RoundRobinAllocatesInOrder"
TYPED = "AtomicOpsTest.WholeOpSet<(anonymous namespace)::IntTag>"


def sample(name):
    with open(os.path.join(SAMPLES, name)) as f:
        return f.read()


class ParseTest(unittest.TestCase):
    def test_passing_run(self):
        r = summary.parse(sample("sbitmap-pass.log"))
        self.assertEqual(r.state, "ran")
        self.assertEqual(r.failed, [])
        self.assertEqual(r.total, 11)
        self.assertTrue(r.ok)
        self.assertEqual(r.cell(), "passed 11/11")

    def test_failing_run(self):
        r = summary.parse(sample("sbitmap-fail.log"))
        self.assertEqual(r.state, "ran")
        self.assertEqual(r.total, 11)
        self.assertEqual(r.failed, [BROKEN])
        self.assertFalse(r.ok)
        self.assertEqual(r.cell(), f"FAILED 1: {BROKEN}")

    def test_every_kind_of_failure(self):
        r = summary.parse(sample("mixed.log"))
        self.assertEqual(r.total, 7)
        # Failed, Timeout, SEGFAULT, Not Run; a skipped test is no failure.
        self.assertEqual(r.failed, [TYPED, "Sbitmap.Fails", "Sbitmap.Slow",
                                    "Sbitmap.Segv", "Sbitmap.NotRun"])
        self.assertTrue(r.cell().startswith(f"FAILED 5: {TYPED} Sbitmap.Fails"))

    def test_failed_row_with_labels(self):
        text = ("50% tests passed, 1 tests failed out of 2\n\n"
                "The following tests FAILED:\n"
                "\t  2 - Foo.Bar<(anon)::X> (Failed)            blk shim\n"
                "Errors while running CTest\n")
        self.assertEqual(summary.parse(text).failed, ["Foo.Bar<(anon)::X>"])

    def test_count_without_names(self):
        r = summary.parse("90% tests passed, 1 tests failed out of 10\n")
        self.assertEqual(len(r.failed), 1)
        self.assertFalse(r.ok)

    def test_no_tests_and_cut_logs(self):
        self.assertEqual(summary.parse(sample("no-tests.log")).state, "none")
        cut = sample("sbitmap-pass.log").split("tests passed")[0]
        self.assertEqual(summary.parse(cut).state, "cut")
        self.assertEqual(summary.parse("").state, "cut")


class ReportTest(unittest.TestCase):
    def test_broken_by_after(self):
        rows = [("release", summary.parse(sample("sbitmap-pass.log")),
                 summary.parse(sample("sbitmap-fail.log")))]
        lines = summary.report(rows, "f17a1ac", "WORKTREE")
        self.assertEqual(lines[0].split(), ["preset", "before", "f17a1ac",
                                            "after", "WORKTREE"])
        self.assertEqual(lines[1].split(), ["release", "passed", "11/11",
                                            "FAILED", "1:", BROKEN])
        self.assertEqual(lines[-3], "fixed by after: none")
        self.assertEqual(lines[-2], f"broken by after: {BROKEN}")
        self.assertEqual(lines[-1], "ab --test: before ok, after 1 failing")

    def test_fixed_by_after(self):
        rows = [("release", summary.parse(sample("sbitmap-fail.log")),
                 summary.parse(sample("sbitmap-pass.log")))]
        lines = summary.report(rows)
        self.assertEqual(lines[-3], f"fixed by after: {BROKEN}")
        self.assertEqual(lines[-2], "broken by after: none")
        self.assertEqual(lines[-1], "ab --test: before 1 failing, after ok")

    def test_failing_on_both_sides_is_one_sided_nowhere(self):
        fail = summary.parse(sample("sbitmap-fail.log"))
        lines = summary.report([("release", fail, fail)])
        self.assertEqual(lines[-3:], [
            "fixed by after: none", "broken by after: none",
            "ab --test: before 1 failing, after 1 failing"])

    def test_one_sided_in_some_presets(self):
        ok = summary.parse(sample("sbitmap-pass.log"))
        fail = summary.parse(sample("sbitmap-fail.log"))
        rows = [("release", ok, ok), ("asan", ok, fail), ("tsan", ok, fail)]
        lines = summary.report(rows)
        self.assertEqual(len(lines), 1 + 3 + 3)
        self.assertEqual(lines[-2], f"broken by after: {BROKEN} [asan,tsan]")
        rows = [("asan", ok, fail), ("tsan", ok, fail)]
        self.assertEqual(summary.report(rows)[-2], f"broken by after: {BROKEN}")

    def test_logdir_with_a_failed_build(self):
        with tempfile.TemporaryDirectory() as d:
            for name, text in [("before-release.log", sample("sbitmap-pass.log")),
                               ("after-release.build.log", "ninja: build stopped\n"),
                               ("before-asan.log", sample("sbitmap-pass.log")),
                               ("after-asan.log", sample("mixed.log"))]:
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            p = subprocess.run(
                [sys.executable, os.path.join(TOOLS, "ab_test_summary.py"),
                 "--before", "abc1234", "--after", "WORKTREE", d,
                 "release", "asan", "tsan"],
                check=True, stdout=subprocess.PIPE, text=True)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[1].split()[-2:], ["BUILD", "FAILED"])
        self.assertEqual(lines[3].split()[1:], ["not", "run", "not", "run"])
        self.assertIn("Sbitmap.Segv", lines[-2])
        self.assertNotIn("[asan]", lines[-2])
        self.assertEqual(lines[-1], "ab --test: before no result (tsan), after "
                         "5 failing, build failed (release), no result (tsan)")


def git(repo, *args):
    subprocess.run(["git", "-C", repo, "-c", "user.name=ukern",
                    "-c", "user.email=ukern@localhost", *args],
                   check=True, stdout=subprocess.DEVNULL)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


class SnapshotTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.src = os.path.join(self.tmp.name, "src")
        self.dst = os.path.join(self.tmp.name, "dst")
        os.makedirs(self.src)
        git(self.src, "init", "-q")
        write(os.path.join(self.src, ".gitignore"), "/build/\n*.o\n")
        write(os.path.join(self.src, "a.c"), "a\n")
        write(os.path.join(self.src, "sub/b.c"), "b\n")
        write(os.path.join(self.src, "gone/c.c"), "c\n")
        git(self.src, "add", ".")
        git(self.src, "commit", "-q", "-m", "base")

    def tearDown(self):
        self.tmp.cleanup()

    def exists(self, rel):
        return os.path.lexists(os.path.join(self.dst, rel))

    def test_changes_untracked_and_deleted_files(self):
        write(os.path.join(self.src, "a.c"), "a, changed\n")
        write(os.path.join(self.src, "new.c"), "untracked\n")
        write(os.path.join(self.src, "x.o"), "ignored\n")
        write(os.path.join(self.src, "build/out"), "ignored\n")
        n, copied, gone = ab_snapshot.snapshot(self.src, self.dst)
        self.assertEqual((n, copied, gone), (5, 5, 0))
        self.assertEqual(read(os.path.join(self.dst, "a.c")), "a, changed\n")
        self.assertEqual(read(os.path.join(self.dst, "new.c")), "untracked\n")
        self.assertTrue(self.exists("sub/b.c"))
        self.assertTrue(self.exists("gone/c.c"))
        self.assertTrue(self.exists(".gitignore"))
        self.assertFalse(self.exists("x.o"))
        self.assertFalse(self.exists("build"))
        self.assertFalse(self.exists(".git"))

        # What the builds leave in the copy's build/ stays; a tracked file
        # deleted on disk and an untracked one removed go.
        write(os.path.join(self.dst, "build/release/build.ninja"), "kept\n")
        write(os.path.join(self.dst, "stray.txt"), "not in the checkout\n")
        os.unlink(os.path.join(self.src, "gone/c.c"))
        os.rmdir(os.path.join(self.src, "gone"))
        os.unlink(os.path.join(self.src, "new.c"))
        n, copied, gone = ab_snapshot.snapshot(self.src, self.dst)
        self.assertEqual((n, copied), (3, 0))
        self.assertFalse(self.exists("gone"))
        self.assertFalse(self.exists("new.c"))
        self.assertFalse(self.exists("stray.txt"))
        self.assertTrue(self.exists("build/release/build.ninja"))

    def test_unchanged_files_keep_their_copy_and_time(self):
        ab_snapshot.snapshot(self.src, self.dst)
        b = os.path.join(self.dst, "sub/b.c")
        before = os.stat(b).st_mtime_ns
        self.assertEqual(before, os.stat(os.path.join(self.src, "sub/b.c")).st_mtime_ns)
        write(os.path.join(self.src, "a.c"), "edited\n")
        n, copied, gone = ab_snapshot.snapshot(self.src, self.dst)
        self.assertEqual((copied, gone), (1, 0))
        self.assertEqual(os.stat(b).st_mtime_ns, before)
        self.assertEqual(read(os.path.join(self.dst, "a.c")), "edited\n")

    def test_a_file_becomes_a_folder(self):
        ab_snapshot.snapshot(self.src, self.dst)
        os.unlink(os.path.join(self.src, "a.c"))
        write(os.path.join(self.src, "a.c/inner.c"), "now a folder\n")
        ab_snapshot.snapshot(self.src, self.dst)
        self.assertEqual(read(os.path.join(self.dst, "a.c/inner.c")), "now a folder\n")

    def test_the_command_line(self):
        write(os.path.join(self.src, "new.c"), "untracked\n")
        p = subprocess.run(
            [sys.executable, os.path.join(TOOLS, "ab_snapshot.py"), self.src, self.dst],
            check=True, stderr=subprocess.PIPE, text=True)
        self.assertIn("5 files, 5 copied, 0 deleted", p.stderr)
        self.assertTrue(self.exists("new.c"))


if __name__ == "__main__":
    unittest.main()
