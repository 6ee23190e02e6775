#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""tools/ukern port and export on kernel-form patches written against the
pristine 6.12 files (tests/tools/patches/).

Each test runs on a scratch copy of the ported sources (a git repository of
its own), so the checkout is never touched. A hunk that applies must make
the same change to our function as to the kernel's, once both are
normalized; -R must give back our file byte for byte; export must give back
the patch's own lines.
"""
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
KPATCH = os.path.join(TOP, "tools", "kpatch")
PATCHES = os.path.join(HERE, "patches")
sys.path.insert(0, KPATCH)

import cnorm  # noqa: E402
import patchfile  # noqa: E402
import upstream  # noqa: E402

AREAS = ("aio", "blk", "devices", "kernel_shim")


def patch_path(name):
    return os.path.join(PATCHES, name)


def slurp(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run(args, cwd=None, stdin=None):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, input=stdin)


def changes(before: str, after: str):
    """The normalized change between two texts, as (removed, added) runs."""
    a = [n.text for n in cnorm.normalize(cnorm.lex(before, False).toks)]
    b = [n.text for n in cnorm.normalize(cnorm.lex(after, False).toks)]
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(tuple(a[i1:i2]), tuple(b[j1:j2]))
            for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"]


def changed_lines(patch_text: str):
    out = []
    for p in patchfile.parse(patch_text):
        for f in p.files:
            for h in f.hunks:
                out.append((f.path, [(k, t) for k, t in h.lines if k != " "]))
    return out


class PortTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            cls.base = upstream.ensure_base(TOP, "v6.12")
        except upstream.BaseError as e:
            raise unittest.SkipTest(f"no pristine v6.12 base: {e}")
        cls.tmp = tempfile.mkdtemp(prefix="ukern-port-test-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        # A fresh scratch repository per test: our sources and the base cache.
        self.top = tempfile.mkdtemp(dir=self.tmp)
        files = run(["git", "-C", TOP, "ls-files", "-co", "--exclude-standard", *AREAS]).stdout.split()
        for f in files:
            dst = os.path.join(self.top, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(os.path.join(TOP, f), dst)
        os.makedirs(os.path.join(self.top, "build"))
        os.symlink(os.path.join(TOP, "build", "base"), os.path.join(self.top, "build", "base"))
        self.git("init", "-q")
        self.git("add", *AREAS)
        self.git("commit", "-q", "-m", "scratch")
        self.snapshot = {f: self.read(f) for f in files}

    def git(self, *args):
        r = run(["git", "-c", "user.name=ukern tests", "-c", "user.email=tests@ukern.invalid",
                 "-C", self.top, *args])
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def read(self, path):
        with open(os.path.join(self.top, path), encoding="utf-8") as f:
            return f.read()

    def port(self, *args, stdin=None):
        return run([sys.executable, os.path.join(KPATCH, "port.py"), "--top", self.top, *args],
                   stdin=stdin)

    def export(self, *args):
        return run([sys.executable, os.path.join(KPATCH, "export.py"), "--top", self.top, *args])

    def assert_unchanged(self):
        for f, text in self.snapshot.items():
            self.assertEqual(self.read(f), text, f"{f} changed")

    def pristine_after(self, name):
        """{kernel path: (pristine text, pristine text with the patch)} via patch(1)."""
        out = {}
        text = slurp(patch_path(name))
        for p in patchfile.parse(text):
            for f in p.files:
                if f.path not in self.base:
                    continue
                d = tempfile.mkdtemp(dir=self.tmp)
                dst = os.path.join(d, f.path)
                os.makedirs(os.path.dirname(dst))
                shutil.copy(self.base[f.path], dst)
                r = run(["patch", "-p1", "-s", "-i", patch_path(name)], cwd=d)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                out[f.path] = (slurp(self.base[f.path]), slurp(dst))
        return out

    def check_same_change(self, name):
        """Ports name and checks that each of our files changed as the kernel
        file did, once both are normalized; then -R restores them exactly."""
        r = self.port(patch_path(name))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for kpath, (before, after) in self.pristine_after(name).items():
            want = changes(before, after)
            got = []
            for ours in upstream.ours_for(self.top, kpath):
                got += changes(self.snapshot[ours], self.read(ours))
            self.assertEqual(got, want, f"{name}: our change differs from the kernel's\n{r.stdout}")
        r = self.port("-R", patch_path(name))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assert_unchanged()
        return r

    # --- port ---------------------------------------------------------------

    def test_renamed_local_places_after_normalization(self):
        r = self.port("--dry-run", patch_path("0001-sbitmap-rename-local.patch"))
        self.assertIn("normalized at blk/sbitmap.cc:", r.stdout)
        self.assertTrue(r.stdout.rstrip().endswith("hunks: 1 applied, 0 failed"), r.stdout)
        self.assert_unchanged()
        self.check_same_change("0001-sbitmap-rename-local.patch")

    def test_added_statement_lands_exactly(self):
        r = self.port(patch_path("0002-sbitmap-resize-warn.patch"))
        self.assertIn("exact at blk/sbitmap.cc:", r.stdout)
        text = self.read("blk/sbitmap.cc")
        self.assertIn("\tWARN_ON_ONCE(depth > sb->map_nr * bits_per_word);\n\n\tsb->depth = depth;",
                      text)
        self.port("-R", patch_path("0002-sbitmap-resize-warn.patch"))
        self.assert_unchanged()
        self.check_same_change("0002-sbitmap-resize-warn.patch")

    def test_changed_condition_inside_a_line(self):
        self.check_same_change("0003-sbitmap-cpu-hint-condition.patch")

    def test_comment_only_patch_carries_nothing(self):
        r = self.port(patch_path("0004-sbitmap-comment-only.patch"))
        self.assertEqual(r.returncode, 0)
        self.assertIn("comment: changes only comments", r.stdout)
        self.assertIn("hunks: 1 applied, 0 failed", r.stdout)
        self.assert_unchanged()

    def test_moved_lines(self):
        self.check_same_change("0005-blk-mq-tag-move-lines.patch")

    def test_aio_statement_replaced(self):
        self.check_same_change("0006-aio-refill-clamp.patch")

    def test_void_pointer_gets_its_cast(self):
        r = self.port(patch_path("0007-blk-mq-tag-void-pointer.patch"))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("C++ fix: cast `data` (void *) to struct bt_iter_data *", r.stdout)
        self.assertIn("struct bt_iter_data *walk = (struct bt_iter_data *)data;",
                      self.read("blk/blk-mq-tag.cc"))

    def test_hunk_without_a_place_fails_with_the_nearest_candidate(self):
        r = self.port(patch_path("0008-aio-migrate-folio-must-fail.patch"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("failed: `aio_migrate_folio` (the hunk header's function) is not in ours; "
                      "nearest: aio/aio.cc:", r.stdout)
        self.assertIn("hunks: 0 applied, 1 failed", r.stdout)
        self.assert_unchanged()

    def test_aio_poll_wake_takes_the_kernels_hunk(self):
        self.check_same_change("0010-aio-poll-wake-event-check.patch")

    def test_unported_file_is_left_out_and_counted(self):
        r = self.port(patch_path("0009-sbitmap-weight-unported-file.patch"))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("block/blk-sysfs.c: not ported by ukern", r.stdout)
        self.assertIn("hunks: 1 applied, 0 failed, 1 in files ukern does not port", r.stdout)
        self.port("-R", patch_path("0009-sbitmap-weight-unported-file.patch"))
        self.assert_unchanged()

    def test_series_in_one_mbox_and_its_reversal(self):
        mbox = "".join(slurp(patch_path(n)) for n in (
            "0001-sbitmap-rename-local.patch", "0002-sbitmap-resize-warn.patch",
            "0006-aio-refill-clamp.patch"))
        r = self.port("-", stdin=mbox)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("hunks: 3 applied, 0 failed", r.stdout)
        self.assertNotEqual(self.read("blk/sbitmap.cc"), self.snapshot["blk/sbitmap.cc"])
        r = self.port("-R", "-", stdin=mbox)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assert_unchanged()

    def test_already_applied_is_reported(self):
        self.port(patch_path("0002-sbitmap-resize-warn.patch"))
        r = self.port(patch_path("0002-sbitmap-resize-warn.patch"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("already applied", r.stdout)

    def test_commits_from_a_kernel_tree(self):
        kt, g = self.kernel_tree(("lib/sbitmap.c", "fs/aio.c"))
        for n in ("0002-sbitmap-resize-warn.patch", "0006-aio-refill-clamp.patch"):
            am = run(g + ["am", "-q", patch_path(n)])
            self.assertEqual(am.returncode, 0, am.stderr)
        r = self.port("--dry-run", "--from", kt, "HEAD~2..HEAD")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("patch: lib/sbitmap: warn when sbitmap_resize() grows past the map", r.stdout)
        self.assertIn("hunks: 2 applied, 0 failed", r.stdout)
        self.assert_unchanged()
        r = self.port("--from", kt, "HEAD")  # one commit
        self.assertIn("hunks: 1 applied, 0 failed", r.stdout)
        self.assertNotEqual(self.read("aio/aio.cc"), self.snapshot["aio/aio.cc"])
        r = self.port("--from", kt, "no-such-rev..HEAD")
        self.assertEqual(r.returncode, 2)
        self.assertIn("git format-patch", r.stderr)

    def test_worked_example_takes_the_fix_out_and_back(self):
        # docs/patch-workflow.md: the core of the fix for the race on
        # sbitmap_word::cleared, against 6.12's sbitmap_deferred_clear().
        ex = os.path.join(TOP, "docs", "examples", "sbitmap-deferred-clear-lock.patch")
        hunk = patchfile.parse(slurp(ex))[0].files[0].hunks[0]

        def ours_fn():
            lx = cnorm.lex(self.read("blk/sbitmap.cc"), False)
            f = next(f for f in cnorm.functions(lx) if f.name == "sbitmap_deferred_clear")
            return [n.text for n in cnorm.normalize(lx.toks[f.start_tok:f.end_tok + 1])]

        r = self.port("-R", ex)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("hunks: 1 applied, 0 failed", r.stdout)
        before_fix = cnorm.normalized_text(hunk.old_text(), None)
        self.assertEqual(ours_fn()[:len(before_fix)], before_fix)
        self.assertNotIn("swap_lock", ours_fn())
        r = self.port(ex)
        self.assertEqual(r.returncode, 0, r.stdout)
        lx = cnorm.lex(slurp(self.base["lib/sbitmap.c"]), False)
        f = next(f for f in cnorm.functions(lx) if f.name == "sbitmap_deferred_clear")
        self.assertEqual(ours_fn(), [n.text for n in cnorm.normalize(lx.toks[f.start_tok:f.end_tok + 1])])

    def test_check_compiles_what_port_changed(self):
        db = os.path.join(TOP, "build", "release", "compile_commands.json")
        if not os.path.exists(db):
            self.skipTest("no configured release build")
        os.symlink(os.path.dirname(db), os.path.join(self.top, "build", "release"))
        r = self.port("--check", patch_path("0002-sbitmap-resize-warn.patch"))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("check: blk/sbitmap.cc compiles", r.stdout)
        self.port("-R", patch_path("0002-sbitmap-resize-warn.patch"))
        # Code that names what ukern does not have: placed, then reported.
        text = slurp(patch_path("0002-sbitmap-resize-warn.patch")).replace(
            "depth > sb->map_nr * bits_per_word", "depth > no_such_limit")
        r = self.port("--check", "-", stdin=text)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("check: blk/sbitmap.cc does not compile:", r.stdout)
        self.assertIn("no_such_limit", r.stdout)
        self.assertIn("blk/sbitmap.cc:", r.stdout)

    # --- bad input ------------------------------------------------------------

    def test_not_a_patch(self):
        r = self.port("-", stdin="hello\nthis is not a patch\n")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a patch", r.stderr)
        self.assert_unchanged()

    def test_truncated_hunk_changes_nothing(self):
        text = slurp(patch_path("0002-sbitmap-resize-warn.patch"))
        cut = text[:text.index("+\tWARN_ON_ONCE")]
        r = self.port("-", stdin=cut)
        self.assertEqual(r.returncode, 2)
        self.assertIn("truncated hunk in lib/sbitmap.c", r.stderr)
        self.assert_unchanged()
        # A truncated second patch of a series stops the first one too.
        r = self.port("-", stdin=slurp(patch_path("0001-sbitmap-rename-local.patch")) + cut)
        self.assertEqual(r.returncode, 2)
        self.assert_unchanged()

    def test_missing_file_argument(self):
        r = self.port(os.path.join(self.tmp, "no-such.patch"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("No such file", r.stderr)

    def test_new_file_cannot_be_carried(self):
        text = ("diff --git a/lib/newfile.c b/lib/newfile.c\nnew file mode 100644\n"
                "--- /dev/null\n+++ b/lib/newfile.c\n@@ -0,0 +1,2 @@\n+int x;\n+int y;\n")
        r = self.port("-", stdin=text)
        self.assertEqual(r.returncode, 1)
        self.assertIn("creates a file", r.stdout)
        self.assert_unchanged()

    # --- export ---------------------------------------------------------------

    def kernel_tree(self, kpaths):
        """A git tree of pristine files at their kernel paths."""
        kt = tempfile.mkdtemp(dir=self.tmp)
        for kpath in kpaths:
            os.makedirs(os.path.join(kt, os.path.dirname(kpath)), exist_ok=True)
            shutil.copy(self.base[kpath], os.path.join(kt, kpath))
        g = ["git", "-c", "user.name=t", "-c", "user.email=t@ukern.invalid", "-C", kt]
        for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "v6.12"]):
            self.assertEqual(run(g + args).returncode, 0)
        return kt, g

    def assert_same_result(self, exported, names, kpaths):
        """The exported patch and the original ones make the same files of
        the pristine ones (git am on one tree, patch(1) on another)."""
        kt, g = self.kernel_tree(kpaths)
        am = run(g + ["am", "-q"], stdin=exported)
        self.assertEqual(am.returncode, 0, am.stdout + am.stderr + exported)
        ref, _ = self.kernel_tree(kpaths)
        for n in names:
            r = run(["patch", "-p1", "-s", "-i", patch_path(n)], cwd=ref)
            self.assertEqual(r.returncode, 0, r.stdout)
        for kpath in kpaths:
            self.assertEqual(slurp(os.path.join(kt, kpath)),
                             slurp(os.path.join(ref, kpath)), kpath + "\n" + exported)
        return g

    def test_export_round_trip_of_a_commit_range(self):
        names = ("0002-sbitmap-resize-warn.patch", "0006-aio-refill-clamp.patch",
                 "0005-blk-mq-tag-move-lines.patch")
        for n in names:
            r = self.port(patch_path(n))
            self.assertEqual(r.returncode, 0, r.stdout)
            self.git("commit", "-q", "-a", "-m", n)
        r = self.export("HEAD~3..HEAD")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("\nSubject: [PATCH] "), 3)
        g = self.assert_same_result(r.stdout, names,
                                    ("lib/sbitmap.c", "fs/aio.c", "block/blk-mq-tag.c"))
        log = run(g + ["log", "--format=%s", "-3"]).stdout.split("\n")
        self.assertEqual(log[:3], list(reversed(names)))

    def test_export_working_tree_round_trip(self):
        names = ("0001-sbitmap-rename-local.patch", "0003-sbitmap-cpu-hint-condition.patch")
        for n in names:
            self.port(patch_path(n))
        r = self.export("--subject", "lib/sbitmap: two changes")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Subject: [PATCH] lib/sbitmap: two changes", r.stdout)
        self.assert_same_result(r.stdout, names, ("lib/sbitmap.c",))

    def test_export_leaves_out_sanitizer_annotations(self):
        # Our own change with a TSan annotation: the kernel-form patch has
        # the statement and not the annotation.
        path = "blk/sbitmap.cc"
        text = self.snapshot[path]
        anchor = "\tsb->depth = depth;\n\tsb->map_nr = DIV_ROUND_UP(sb->depth, bits_per_word);\n"
        self.assertIn(anchor, text)
        new = text.replace(anchor, "\tuk_tsan_release(&sb->depth);\n\tsmp_wmb();\n" + anchor, 1)
        with open(os.path.join(self.top, path), "w") as f:
            f.write(new)
        r = self.export()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(changed_lines(r.stdout), [("lib/sbitmap.c", [("+", "\tsmp_wmb();")])])

    def test_export_with_nothing_changed(self):
        r = self.export()
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout, "")
        self.assertIn("no ported file differs", r.stderr)


class NormalizeTest(unittest.TestCase):
    """Normalization rules that fidelity, port and export share."""

    @staticmethod
    def norm(text):
        return cnorm.normalized_text(text)

    def test_braces_held_only_for_an_annotation_read_as_the_statement(self):
        kernel = "void f(void)\n{\n\tif (mask)\n\t\tclear(mask, addr);\n}\n"
        ours = ("void f(void)\n{\n\tif (mask) {\n\t\tuk_tsan_release(addr);\n"
                "\t\tclear(mask, addr);\n\t}\n}\n")
        self.assertEqual(self.norm(kernel), self.norm(ours))
        for_loop = ("void f(void)\n{\n\tfor (i = 0; i < n; i++) {\n"
                    "\t\tuk_tsan_acquire(p);\n\t\tuse(p);\n\t}\n}\n")
        self.assertEqual(self.norm(for_loop),
                         self.norm("void f(void)\n{\n\tfor (i = 0; i < n; i++)\n\t\tuse(p);\n}\n"))

    def test_braces_that_hold_more_stay(self):
        two = ("void f(void)\n{\n\tif (mask) {\n\t\tuk_tsan_release(addr);\n"
               "\t\ta();\n\t\tb();\n\t}\n}\n")
        self.assertIn("{", self.norm(two)[5:])
        # Without an annotation, braces around one statement are a difference.
        plain = "void f(void)\n{\n\tif (mask) {\n\t\ta();\n\t}\n}\n"
        self.assertNotEqual(self.norm(plain),
                            self.norm("void f(void)\n{\n\tif (mask)\n\t\ta();\n}\n"))
        # A nested if keeps its braces: without them an else would change owner.
        nested = ("void f(void)\n{\n\tif (a) {\n\t\tuk_tsan_release(p);\n"
                  "\t\tif (b)\n\t\t\tc();\n\t} else\n\t\td();\n}\n")
        self.assertNotEqual(self.norm(nested),
                            self.norm("void f(void)\n{\n\tif (a)\n\t\tif (b)\n\t\t\tc();\n"
                                      "\telse\n\t\td();\n}\n"))
        # A function body is never unwrapped.
        body = "void f(void)\n{\n\tuk_tsan_release(p);\n\ta();\n}\n"
        self.assertEqual(self.norm(body).count("{"), 1)


if __name__ == "__main__":
    unittest.main()
