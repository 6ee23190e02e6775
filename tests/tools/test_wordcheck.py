#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Tests of tools/wordcheck.py on small git trees made for each test.

The planted phrases are assembled from pieces, so that this file itself
passes the check it tests.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORDCHECK = os.path.join(TOP, "tools", "wordcheck.py")

# Legitimate text that mentions helpers, work items, tasks and seeds.
CLEAN = """\
// SPDX-License-Identifier: GPL-2.0-only
// A test helper that waits for the task's state; helper functions below.
// A work item's data word holds WORK_STRUCT_PENDING.
// Seed 2 shares one context; the H100 card; see (v6.1) and issue the I/O.
// The later helpers radix_tree_iter_retry() work inside for_each.
/* Follows the kernel: the word is left as it was. */
/* The 2004 patch and its follow-ups, as run-time switches. */
"""


def planted(*parts):
    return "".join(parts)


class WordcheckTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ukern_wordcheck.")
        subprocess.run(["git", "init", "-q", self.dir], check=True)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        subprocess.run(["git", "-C", self.dir, "add", name], check=True)

    def run_check(self, *files):
        return subprocess.run([sys.executable, WORDCHECK, "--root", self.dir, *files],
                              capture_output=True, text=True)

    def test_clean_text_passes(self):
        self.write("src/a.cc", CLEAN)
        self.write("docs/a.md", "# A page\n\nThe test helper counts work items.\n")
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")

    def test_planted_phrases_fail(self):
        self.write("src/a.cc", CLEAN)
        phrases = [
            planted("Measured in ses", "sion 4."),
            planted("Update (H", "10): faster."),
            planted("Fixes iss", "ue #7."),
            planted("Shared with other help", "ers building."),
            planted("This is left for a fol", "low-up."),
            planted("The ratios the iss", "ue asks for."),
            planted("// TODO(ses", "sion 3): finish"),
        ]
        self.write("docs/b.md", "\n".join(phrases) + "\n")
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        lines = r.stdout.splitlines()
        # One finding per planted line, each as file:line: match.
        found = {int(l.split(":")[1]) for l in lines}
        self.assertEqual(found, set(range(1, len(phrases) + 1)), r.stdout)
        self.assertTrue(all(l.startswith("docs/b.md:") for l in lines), r.stdout)
        self.assertIn("docs/b.md:1: " + planted("ses", "sion 4"), lines)

    def test_untracked_and_patch_files_are_not_scanned(self):
        self.write("src/a.cc", CLEAN)
        self.write("tests/tools/patches/0001-x.patch", planted("ses", "sion 4\n"))
        self.write("docs/examples/fix.patch", planted("H", "5 wrote this\n"))
        with open(os.path.join(self.dir, "untracked.md"), "w") as f:
            f.write(planted("ses", "sion 4\n"))
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_named_files(self):
        self.write("a.md", planted("ses", "sion 9 notes\n"))
        self.write("b.md", "clean\n")
        self.assertEqual(self.run_check(os.path.join(self.dir, "b.md")).returncode, 0)
        self.assertEqual(self.run_check(os.path.join(self.dir, "a.md")).returncode, 1)


if __name__ == "__main__":
    unittest.main()
