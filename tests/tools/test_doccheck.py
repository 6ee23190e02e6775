#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Tests of tools/doccheck.py on small doc trees made for each test."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCCHECK = os.path.join(TOP, "tools", "doccheck.py")
MARK = "<!-- ci: run -->"


class DoccheckTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ukern_doccheck.")
        os.mkdir(os.path.join(self.dir, "docs"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def run_check(self, *args):
        return subprocess.run([sys.executable, DOCCHECK, "--root", self.dir, *args],
                              capture_output=True, text=True)

    def test_marked_blocks_run_from_the_root(self):
        # The block runs in the root: it finds README.md and leaves a file there.
        self.write("README.md", f"# R\n\nSee [a](docs/a.md).\n\n{MARK}\n```sh\n"
                   "test -f README.md\ntouch ran\n```\n")
        self.write("docs/a.md", "# A\n\nBack to [the index](../README.md#r).\n")
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("README.md:7: ok", r.stdout)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "ran")))

    def test_a_failing_block_fails(self):
        self.write("README.md", f"# R\n\n{MARK}\n```sh\ntrue\n```\n")
        self.write("docs/b.md", f"# B\n\n{MARK}\n\n```sh\necho before\nfalse\n"
                   "echo after\n```\n")
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("README.md:5: ok", r.stdout)
        self.assertIn("docs/b.md:6: FAILED (exit status 1)", r.stdout)
        # bash -e: the block stops at its first failing command.
        output = r.stdout.split("--- output:", 1)[1]
        self.assertIn("before", output)
        self.assertNotIn("after", output)

    def test_a_failing_pipeline_fails(self):
        self.write("README.md", f"{MARK}\n```sh\nfalse | cat\n```\n")
        self.assertEqual(self.run_check().returncode, 1)

    def test_unmarked_blocks_do_not_run(self):
        self.write("README.md", "# R\n\n```sh\nfalse\n```\n\n<!-- other -->\n```sh\nfalse\n```\n")
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("0 block(s) passed", r.stdout)

    def test_a_marker_without_a_block_fails(self):
        self.write("README.md", f"# R\n\n{MARK}\nsome text\n")
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("README.md:3: `ci: run` marker", r.stdout)

    def test_a_block_past_its_timeout_fails(self):
        self.write("README.md", f"{MARK}\n```sh\nsleep 5\n```\n")
        r = self.run_check("--timeout", "0.5")
        self.assertEqual(r.returncode, 1)
        self.assertIn("timed out", r.stdout)

    def test_links_must_resolve_inside_the_repository(self):
        self.write("README.md", "[ok](docs/a.md) [web](https://kernel.org) [here](#x)\n"
                   "[gone](docs/missing.md)\n[out](../shared/notes.md)\n"
                   "[abs](/etc/passwd)\n")
        self.write("docs/a.md", "# A\n")
        r = self.run_check("--no-run")
        self.assertEqual(r.returncode, 1)
        self.assertIn("README.md:2: link to a missing file: docs/missing.md", r.stdout)
        self.assertIn("README.md:3: link outside the repository: ../shared/notes.md", r.stdout)
        self.assertIn("README.md:4: link to a local path outside", r.stdout)
        self.assertNotIn("README.md:1:", r.stdout)

    def test_tracked_files_must_name_existing_documents(self):
        subprocess.run(["git", "init", "-q", self.dir], check=True)
        self.write("README.md", "# R\n")
        self.write("docs/rcu.md", "# RCU\n")
        os.makedirs(os.path.join(self.dir, "src"))
        self.write("src/a.cc", "// see docs/rcu.md\n// and docs/gone.md, \"The path\"\n")
        self.write("src/b.cc", "// docs/untracked.md is not a tracked file's\n")
        subprocess.run(["git", "-C", self.dir, "add", "README.md", "docs/rcu.md", "src/a.cc"],
                       check=True)
        r = self.run_check("--no-run")
        self.assertEqual(r.returncode, 1)
        self.assertIn("src/a.cc:2: names a missing document: docs/gone.md", r.stdout)
        self.assertNotIn("src/a.cc:1", r.stdout)
        self.assertNotIn("src/b.cc", r.stdout)

    def test_list_prints_blocks_without_running(self):
        self.write("README.md", f"{MARK}\n```sh\ntouch ran\n```\n")
        r = self.run_check("--list")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--- README.md:3\ntouch ran\n", r.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "ran")))


if __name__ == "__main__":
    unittest.main()
