#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""tools/kpatch/upstream.py: the tree's Upstream: markers and the base cache."""
import contextlib
import io
import os
import re
import sys
import tarfile
import tempfile
import unittest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tools", "kpatch"))
import upstream  # noqa: E402

# Anything that looks like a marker, well-formed or not.
LOOSE = re.compile(r"^\s*(?:\*|//|/\*)?\s*Upstream\s*:", re.IGNORECASE)
BASES = {"v6.12", "v3.4"}


class TreeMarkers(unittest.TestCase):
    """The markers of this tree."""

    @classmethod
    def setUpClass(cls):
        cls.ported = upstream.ported_files(TOP)

    def test_every_marker_parses(self):
        bad = []
        for rel in upstream._tracked(TOP):
            try:
                with open(os.path.join(TOP, rel), encoding="utf-8") as f:
                    lines = f.read().split("\n")
            except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
                continue
            for n, line in enumerate(lines, 1):
                if not LOOSE.match(line):
                    continue
                if not upstream.MARKER_RE.match(line):
                    bad.append(f"{rel}:{n}: malformed: {line.strip()}")
                elif n > upstream.HEAD_LINES:
                    bad.append(f"{rel}:{n}: after line {upstream.HEAD_LINES}, never read")
        self.assertEqual(bad, [])

    def test_markers_name_kernel_paths_and_known_bases(self):
        self.assertGreater(len(self.ported), 0)
        for p in self.ported:
            self.assertIn(p.base, BASES, p)
            self.assertTrue(upstream._safe(p.upstream), p)
            self.assertRegex(p.upstream, r"^(arch|block|drivers|fs|include|kernel|lib|mm)/", p)
        dup = {(p.ours, p.upstream) for p in self.ported}
        self.assertEqual(len(dup), len(self.ported), "a file names one kernel path twice")

    def test_era_files(self):
        era = sorted((p.ours, p.upstream) for p in self.ported if p.base != "v6.12")
        self.assertEqual(era, [
            ("kernel_shim/include/uk/linux/radix-tree.h", "include/linux/radix-tree.h"),
            ("kernel_shim/radix-tree.cc", "lib/radix-tree.c"),
        ])

    def test_ours_for(self):
        self.assertEqual(upstream.ours_for(TOP, "lib/sbitmap.c"), ["blk/sbitmap.cc"])
        nullb = upstream.ours_for(TOP, "drivers/block/null_blk/main.c")
        self.assertEqual(sorted(nullb), ["devices/include/uk/devices/null_blk.h",
                                         "devices/null_blk_main.cc"])
        self.assertEqual(upstream.ours_for(TOP, "fs/aio.c"), ["aio/aio.cc"])
        self.assertEqual(upstream.ours_for(TOP, "lib/radix-tree.c", "v6.12"), [])
        self.assertEqual(upstream.ours_for(TOP, "lib/radix-tree.c", "v3.4"),
                         ["kernel_shim/radix-tree.cc"])
        self.assertEqual(upstream.ours_for(TOP, "fs/not-ported.c"), [])

    def test_upstream_for(self):
        want = [upstream.Ported("blk/sbitmap.cc", "lib/sbitmap.c", "v6.12")]
        self.assertEqual(upstream.upstream_for(TOP, "blk/sbitmap.cc"), want)
        self.assertEqual(upstream.upstream_for(TOP, os.path.join(TOP, "blk/sbitmap.cc")), want)
        self.assertEqual(upstream.upstream_for(TOP, "aio/aio_host.cc"), [])

    def test_list(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(upstream.main(["--top", TOP, "list"]), 0)
        rows = [line.split() for line in out.getvalue().splitlines()]
        self.assertIn(["blk/sbitmap.cc", "lib/sbitmap.c", "v6.12"], rows)
        self.assertEqual(len(rows), len(self.ported))

    def test_v612_paths_exist_in_the_pristine_tree(self):
        try:
            got = upstream.ensure_base(TOP, "v6.12")
        except upstream.BaseError as e:
            self.skipTest(f"no v6.12 base here: {e}")
        want = sorted({p.upstream for p in self.ported if p.base == "v6.12"})
        self.assertEqual(sorted(k for k in want if k not in got), [],
                         "marked paths that Linux 6.12 does not have")
        for k in want:
            self.assertTrue(os.path.isfile(got[k]), k)
        with open(got["lib/sbitmap.c"], encoding="utf-8") as f:
            self.assertIn("sbitmap_queue_get_shallow", f.read())


class BaseCache(unittest.TestCase):
    """ensure_base() over a small tarball of our own."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.top = os.path.join(d, "top")  # not a git checkout: files are walked
        self.write(os.path.join(self.top, "blk", "foo.cc"),
                   "// SPDX-License-Identifier: GPL-2.0-only\n"
                   "// Upstream: lib/foo.c @ v9.9\n")
        self.write(os.path.join(self.top, "kernel_shim", "bar.h"),
                   "/* SPDX-License-Identifier: GPL-2.0-only */\n/*\n * bar\n *\n"
                   " * Upstream: include/linux/bar.h @ v9.9\n */\n")
        self.tarball = os.path.join(d, "linux-source-9.9.tar.xz")
        self.make_tarball({"Makefile": "VERSION = 9\nPATCHLEVEL = 9\nSUBLEVEL = 3\n"
                                       "EXTRAVERSION =\n",
                           "lib/foo.c": "int foo;\n", "include/linux/bar.h": "int bar;\n",
                           "lib/extra.c": "int extra;\n"})
        self.runs = []
        real = upstream._extract

        def counting(tarball, folder, kpaths):
            self.runs.append(sorted(kpaths))
            return real(tarball, folder, kpaths)
        upstream._extract = counting
        self.addCleanup(setattr, upstream, "_extract", real)

    def tearDown(self):
        self.tmp.cleanup()

    @staticmethod
    def write(path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def make_tarball(self, files):
        src = os.path.join(self.tmp.name, "src")
        for k, text in files.items():
            self.write(os.path.join(src, "linux-source-9.9", k), text)
        with tarfile.open(self.tarball, "w:xz", preset=0) as t:
            t.add(os.path.join(src, "linux-source-9.9"), arcname="linux-source-9.9")

    def ensure(self, kpaths=None):
        with contextlib.redirect_stderr(io.StringIO()):
            return upstream.ensure_base(self.top, "v9.9", kpaths, tarball=self.tarball)

    def test_one_run_then_cached(self):
        got = self.ensure()
        self.assertEqual(sorted(got), ["include/linux/bar.h", "lib/foo.c"])
        with open(got["lib/foo.c"], encoding="utf-8") as f:
            self.assertEqual(f.read(), "int foo;\n")
        self.assertEqual(got["lib/foo.c"],
                         os.path.join(self.top, "build", "base", "v9.9", "lib", "foo.c"))
        self.assertEqual(self.runs, [["include/linux/bar.h", "lib/foo.c"]])
        self.assertEqual(self.ensure(["lib/foo.c"]), {"lib/foo.c": got["lib/foo.c"]})
        self.assertEqual(len(self.runs), 1)
        info = upstream.base_info(self.top, "v9.9")
        self.assertEqual(info["kernel"], "9.9.3")
        self.assertEqual(info["missing"], [])

    def test_extra_and_absent_paths(self):
        self.ensure()
        got = self.ensure(["lib/extra.c", "lib/absent.c"])
        self.assertEqual(sorted(got), ["lib/extra.c"])
        # Everything in one run: the marked paths come along.
        self.assertEqual(self.runs[-1], ["include/linux/bar.h", "lib/absent.c",
                                         "lib/extra.c", "lib/foo.c"])
        self.ensure(["lib/absent.c", "lib/extra.c", "lib/foo.c"])
        self.assertEqual(len(self.runs), 2)

    def test_a_lost_file_or_a_new_tarball_extracts_again(self):
        got = self.ensure()
        os.unlink(got["lib/foo.c"])
        self.ensure()
        self.assertEqual(len(self.runs), 2)
        self.assertTrue(os.path.isfile(got["lib/foo.c"]))
        self.make_tarball({"lib/foo.c": "int foo = 2;\n", "include/linux/bar.h": "int bar;\n"})
        os.utime(self.tarball, (1, 1))
        got = self.ensure()
        self.assertEqual(len(self.runs), 3)
        with open(got["lib/foo.c"], encoding="utf-8") as f:
            self.assertEqual(f.read(), "int foo = 2;\n")

    def test_bad_paths_and_bases(self):
        with self.assertRaises(upstream.BaseError):
            self.ensure(["../etc/passwd"])
        with self.assertRaises(upstream.BaseError):
            upstream.ensure_base(self.top, "6.12")
        self.assertEqual(self.runs, [])

    def test_no_debian_package_for_v3_4(self):
        saved = upstream.SRC_DIR
        upstream.SRC_DIR = os.path.join(self.tmp.name, "empty")
        try:
            with self.assertRaises(upstream.BaseError) as cm:
                upstream.ensure_base(self.top, "v3.4")
        finally:
            upstream.SRC_DIR = saved
        self.assertEqual(str(cm.exception), "no pristine source for v3.4 on this machine "
                         "(Debian ships linux-source-6.1 and 6.12)")


if __name__ == "__main__":
    unittest.main(verbosity=2)
