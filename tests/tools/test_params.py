#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""ukern-params, what `tools/ukern params` runs: the listing, the table of
docs/params.md, and the exit codes of --check.

Usage: test_params.py /path/to/ukern-params
"""

import os
import subprocess
import sys
import unittest

BIN = None


def run(*args, env_cmdline=None):
    env = dict(os.environ)
    env.pop("UKERN_CMDLINE", None)
    if env_cmdline is not None:
        env["UKERN_CMDLINE"] = env_cmdline
    p = subprocess.run([BIN, *args], capture_output=True, text=True, env=env,
                       timeout=60, check=False)
    return p.returncode, p.stdout, p.stderr


class ParamsToolTest(unittest.TestCase):
    def test_check_accepts_a_good_line(self):
        rc, out, _ = run("--check",
                         "null_blk.irqmode=1 aio.lookup=list sbitmap.wake=v61 "
                         "null-blk.submit-queues=2 nr_cpus=4 rcu.membarrier")
        self.assertEqual(rc, 0)
        self.assertIn(": ok", out)
        self.assertEqual(run("--check", "")[0], 0)

    def test_check_rejects_an_unknown_name(self):
        rc, _, err = run("--check", "aio.lookup=list null_blk.nosuch=1")
        self.assertEqual(rc, 1)
        self.assertIn("Unknown parameter `null_blk.nosuch'", err)
        self.assertIn("rejected", err)

    def test_check_rejects_a_bad_value(self):
        for line, needle in (
                ("aio.lookup=hash", "`hash' invalid for parameter `aio.lookup'"),
                ("sbitmap.wake=v62", "is not one of current|v61"),
                ("null_blk.irqmode=3", "`3' invalid for parameter `null_blk.irqmode'"),
                ("null_blk.gb=4294967296", "invalid for parameter `null_blk.gb'"),
                ("null_blk.hw_queue_depth", "invalid for parameter `null_blk.hw_queue_depth'"),
                ("nr_cpus=0", "invalid for parameter `nr_cpus'")):
            rc, _, err = run("--check", line)
            self.assertEqual(rc, 1, line)
            self.assertIn(needle, err, line)

    def test_usage(self):
        self.assertEqual(run("--nope")[0], 2)
        self.assertEqual(run("--check")[0], 2)

    def test_listing_groups_by_module(self):
        rc, out, _ = run()
        self.assertEqual(rc, 0)
        heads = [l.split()[0] for l in out.splitlines()
                 if l and not l.startswith(" ")]
        for mod in ("aio", "kernel", "null_blk", "printk", "rcu", "sbitmap"):
            self.assertIn(mod, heads)
        self.assertEqual(heads, sorted(heads))
        lines = [l.split() for l in out.splitlines() if l.startswith("  ")]
        values = {l[0]: l[2] for l in lines if len(l) > 2 and l[1] == "="}
        self.assertEqual(values["aio.lookup"], "table")
        self.assertEqual(values["null_blk.irqmode"], "1")

    def test_listing_shows_values_after_the_env_cmdline(self):
        rc, out, _ = run(env_cmdline="aio.lookup=radix null_blk.irqmode=2")
        self.assertEqual(rc, 0)
        self.assertRegex(out, r"aio\.lookup +=  *radix")
        self.assertRegex(out, r"null_blk\.irqmode +=  *2 ")
        rc, _, err = run(env_cmdline="aio.lookup=radix nosuch.x=1")
        self.assertEqual(rc, 1)
        self.assertIn("Unknown parameter `nosuch.x'", err)

    def test_docs_table_is_the_listing(self):
        docs = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "..", "..", "docs", "params.md")
        with open(docs, encoding="utf-8") as f:
            text = f.read()
        rc, out, _ = run("--markdown")
        self.assertEqual(rc, 0)
        self.assertIn(out, text,
                      "docs/params.md's table differs from "
                      "`tools/ukern params --markdown`: paste its output there")

    def test_markdown_table(self):
        rc, out, _ = run("--markdown")
        self.assertEqual(rc, 0)
        rows = out.splitlines()
        self.assertEqual(rows[0], "| parameter | type | default | meaning |")
        row = [r for r in rows if r.startswith("| `aio.lookup` |")]
        self.assertEqual(len(row), 1)
        self.assertIn("| enum | `table` |", row[0])
        self.assertTrue(any(r.startswith("| `nr_cpus` | uint | `host CPUs` |")
                            for r in rows))


if __name__ == "__main__":
    BIN = sys.argv.pop(1)
    unittest.main()
