#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""tools/kpatch/fidelity.py on small synthetic kernel files and ports of them."""
import contextlib
import io
import json
import os
import sys
import tempfile
import types
import unittest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tools", "kpatch"))
import cnorm  # noqa: E402
import fidelity  # noqa: E402

KERNEL = """\
// SPDX-License-Identifier: GPL-2.0
#include <linux/foo.h>

static int foo_get(struct foo *f, unsigned int nr)
{
	struct foo_item *it = f->items;
	int n = READ_ONCE(f->count);

	if (n >= nr)
		return -EBUSY;
	it[n].owner = (struct task_struct *)f->priv;
	WRITE_ONCE(f->count, n + 1);
	return n;
}

void foo_put(struct foo *f, int n)
{
	f->items[n].owner = NULL;
	f->count--;
}

static void foo_reset(struct foo *f)
{
	f->count = 0;
	f->type = (enum foo_type)f->raw_type;
	f->wait.private = NULL;
}

int foo_missing(struct foo *f)
{
	return f->count == 0;
}

SYSCALL_DEFINE1(foo_sync, unsigned int, flags)
{
	return flags ? -EINVAL : 0;
}
"""

# The port: the same functions rewrapped and commented, with the marked
# accesses and casts C++ needs; foo_put changed; foo_missing not there.
OURS = """\
// SPDX-License-Identifier: GPL-2.0-only
// Upstream: lib/foo.c @ v6.12
#include <uk/linux/foo.h>

/* Takes the next item. */
static int foo_get(struct foo *f,
		   unsigned int nr)
{
	struct foo_item *it = static_cast<struct foo_item *>(f->items);
	int n = f->count;   // read once

	if (n >= nr)
		return -EBUSY;
	it[n].owner = (struct task_struct *)f->priv;
	f->count = n + 1;
	return n;
}

void foo_put(struct foo *f, int n)
{
	f->items[n].owner = nullptr;
	atomic_dec(&f->count);
}

static void foo_reset(struct foo *f)
{
	uk_tsan_release(f);
	WRITE_ONCE(f->count, 0);
	f->type = (enum foo_type)f->raw_type;
	f->wait.private_ = nullptr;
}

static int foo_get_v61(struct foo *f)
{
	return 0;
}
"""

OURS2 = """\
// SPDX-License-Identifier: GPL-2.0-only
// Upstream: lib/foo.c @ v6.12
long sys_foo_sync(unsigned int flags)
{
	return flags ? -EINVAL : 0;
}
"""

TABLE_OK = """\
# Upstream

| file | function | state | reason |
|------|----------|-------|--------|
| lib/foo.c | `foo_put` | differs | an atomic counter here |
| `lib/foo.c` | foo_missing() | absent | not ported yet |
"""


class Tree:
    """A temporary tree: the kernel file under k/, ours under the top."""

    def __init__(self, files):
        self.dir = tempfile.TemporaryDirectory()
        self.top = self.dir.name
        for path, text in files.items():
            full = os.path.join(self.top, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)

    def path(self, p):
        return os.path.join(self.top, p)

    def close(self):
        self.dir.cleanup()


def fake_upstream(ported, kernel_dir):
    """A stand-in for tools/kpatch/upstream.py over a tree of our own."""
    mod = types.ModuleType("upstream")

    class Ported:
        def __init__(self, ours, upstream, base):
            self.ours, self.upstream, self.base = ours, upstream, base

    mod.BaseError = RuntimeError
    mod.ported_files = lambda top: [Ported(*p) for p in ported]
    mod.ensure_base = lambda top, base, kpaths: {
        k: os.path.join(kernel_dir, k) for k in kpaths}
    return mod


class CompoundStoreTest(unittest.TestCase):
    """WRITE_ONCE(x, x OP e) against the kernel's x OP= e (cnorm)."""

    def norm(self, text):
        return " ".join(cnorm.normalized_text(text))

    def same(self, kernel, ours):
        self.assertEqual(self.norm(kernel), self.norm(ours))

    def test_marked_read_modify_write_reads_as_compound(self):
        self.same("r->ptr |= FLAG;", "WRITE_ONCE(r->ptr, READ_ONCE(r->ptr) | FLAG);")
        self.same("r->ptr &= ~FLAG;", "WRITE_ONCE(r->ptr, r->ptr & ~(unsigned long)FLAG);")
        self.same("*w |= BIT_MASK(n);", "WRITE_ONCE(*w, READ_ONCE(*w) | BIT_MASK(n));")
        self.same("r->ptr |= cnt(&d->c) << BITS;",
                  "WRITE_ONCE(r->ptr, r->ptr | (unsigned long)cnt(&d->c) << BITS);")
        self.same("x->done++;", "WRITE_ONCE(x->done, x->done + 1);")
        self.same("x->done--;", "WRITE_ONCE(x->done, x->done - 1);")
        self.same("n -= a * b;", "WRITE_ONCE(n, n - a * b);")

    def test_regrouping_or_other_forms_stay_plain(self):
        # x - (a - b) is not (x - a) - b, nor x | a ? b : c one compound store.
        self.assertEqual(self.norm("WRITE_ONCE(x, x - a - b);"), "x = x - a - b ;")
        self.assertEqual(self.norm("WRITE_ONCE(x, x | a ? b : c);"), "x = x | a ? b : c ;")
        self.assertEqual(self.norm("WRITE_ONCE(x, x & a || b);"), "x = x & a || b ;")
        self.assertEqual(self.norm("WRITE_ONCE(x, y | a);"), "x = y | a ;")
        self.assertEqual(self.norm("WRITE_ONCE(x->a, x->ab | 1);"), "x -> a = x -> ab | 1 ;")
        self.assertNotEqual(self.norm("r->ptr = r->ptr | FLAG;"), self.norm("r->ptr |= FLAG;"))


class MeasureTest(unittest.TestCase):
    def setUp(self):
        self.t = Tree({"k/lib/foo.c": KERNEL, "lib/foo.cc": OURS, "lib/foo_sys.cc": OURS2})
        self.res = fidelity.measure("lib/foo.c", self.t.path("k/lib/foo.c"),
                                    ["lib/foo.cc", "lib/foo_sys.cc"], self.t.top)
        self.by = {f.name: f for f in self.res.funcs}

    def tearDown(self):
        self.t.close()

    def test_rewrapped_commented_marked_and_cast_is_identical(self):
        self.assertEqual(self.by["foo_get"].state, "identical")
        self.assertEqual(self.by["foo_get"].ratio, 1.0)

    def test_sanitizer_annotation_enum_cast_and_keyword_name_are_identical(self):
        self.assertEqual(self.by["foo_reset"].state, "identical")

    def test_changed_statement_differs(self):
        f = self.by["foo_put"]
        self.assertEqual(f.state, "differs")
        self.assertGreater(f.ratio, 0.5)
        self.assertLess(f.ratio, 1.0)
        self.assertEqual((f.ours.path, f.ours.line), ("lib/foo.cc", 19))

    def test_missing_function_is_absent(self):
        self.assertEqual(self.by["foo_missing"].state, "absent")
        self.assertIsNone(self.by["foo_missing"].ours)

    def test_files_of_one_kernel_file_count_together(self):
        self.assertEqual(self.by["sys_foo_sync"].state, "differs")
        self.assertEqual(self.by["sys_foo_sync"].ours.path, "lib/foo_sys.cc")

    def test_counts_and_extra(self):
        self.assertEqual((self.res.total, self.res.present, self.res.identical), (5, 4, 2))
        self.assertEqual([d.name for d in self.res.extra], ["foo_get_v61"])

    def test_first_difference_names_our_line(self):
        text = fidelity.first_difference(self.by["foo_put"])
        self.assertIn("lib/foo.cc:22:", text)
        self.assertIn("atomic_dec", text)

    def test_summary_line(self):
        self.assertEqual(fidelity.summary_line("lib/foo.c", 41, 38, 20),
                         "lib/foo.c: 41 functions, 38 present (93%), 20 identical (49%)")
        self.assertEqual(fidelity.pct(199, 200), "99%")
        self.assertEqual(fidelity.pct(1, 300), "1%")


class CheckTest(unittest.TestCase):
    def setUp(self):
        self.t = Tree({"k/lib/foo.c": KERNEL, "lib/foo.cc": OURS, "lib/foo_sys.cc": OURS2})

    def tearDown(self):
        self.t.close()

    def results(self):
        return [fidelity.measure("lib/foo.c", self.t.path("k/lib/foo.c"),
                                 ["lib/foo.cc", "lib/foo_sys.cc"], self.t.top)]

    def problems(self, table):
        rows, problems = fidelity.parse_table(table)
        return problems + fidelity.apply_table(self.results(), rows)

    def test_declared_deviations_pass(self):
        table = TABLE_OK + "| lib/foo.c | sys_foo_sync | differs | a plain function |\n"
        self.assertEqual(self.problems(table), [])

    def test_one_row_for_several_functions(self):
        table = TABLE_OK.replace("`foo_put`", "foo_put, sys_foo_sync")
        self.assertEqual(self.problems(table), [])

    def test_undeclared_difference_fails(self):
        problems = self.problems(TABLE_OK)
        self.assertEqual(len(problems), 1)
        self.assertIn("undeclared: lib/foo.c: sys_foo_sync differs", problems[0])

    def test_undeclared_absence_fails(self):
        table = TABLE_OK.replace("foo_missing()", "sys_foo_sync").replace("absent", "differs")
        problems = self.problems(table)
        self.assertEqual(problems, ["undeclared: lib/foo.c: foo_missing absent"])

    def test_stale_rows_fail(self):
        table = TABLE_OK + (
            "| lib/foo.c | sys_foo_sync | differs | a plain function |\n"
            "| lib/foo.c | foo_get | differs | no longer true |\n"
            "| lib/foo.c | foo_gone | absent | removed upstream |\n"
            "| lib/bar.c | bar | absent | no such file of ours |\n")
        problems = self.problems(table)
        self.assertEqual(len(problems), 3, problems)
        self.assertIn("foo_get is identical now", problems[0])
        self.assertIn("defines no foo_gone()", problems[1])
        self.assertIn("lib/bar.c is not a measured file", problems[2])

    def test_wrong_state_fails(self):
        table = TABLE_OK.replace("| differs | an atomic", "| absent | an atomic")
        table += "| lib/foo.c | sys_foo_sync | differs | a plain function |\n"
        problems = self.problems(table)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("foo_put is declared absent but is present and differs", problems[0])

    def test_star_covers_the_rest_of_a_state(self):
        table = TABLE_OK + "| lib/foo.c | * | differs | the rest |\n"
        self.assertEqual(self.problems(table), [])
        res = self.results()
        fidelity.apply_table(res, fidelity.parse_table(table)[0])
        reasons = {f.name: f.reason for f in res[0].funcs}
        self.assertEqual(reasons["sys_foo_sync"], "the rest")
        self.assertEqual(reasons["foo_put"], "an atomic counter here")

    def test_star_row_with_nothing_left_is_stale(self):
        table = TABLE_OK + ("| lib/foo.c | sys_foo_sync | differs | a plain function |\n"
                            "| lib/foo.c | * | absent | the rest |\n")
        problems = self.problems(table)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("no other function is absent", problems[0])

    def test_star_does_not_cover_another_state(self):
        table = TABLE_OK + "| lib/foo.c | * | absent | the rest |\n"
        problems = self.problems(table)
        self.assertIn("undeclared: lib/foo.c: sys_foo_sync differs (0.833)", problems)

    def test_malformed_rows_fail(self):
        table = TABLE_OK + "| lib/foo.c | sys_foo_sync | changed | x |\n"
        table += "| lib/foo.c | sys_foo_sync | differs |  |\n"
        rows, problems = fidelity.parse_table(table)
        self.assertEqual(len(rows), 2)
        self.assertEqual(len(problems), 2)

    def test_escaped_bar_in_a_cell(self):
        rows, problems = fidelity.parse_table(
            TABLE_OK + "| lib/foo.c | sys_foo_sync | differs | `a \\| b` and `\\|=` |\n")
        self.assertEqual(problems, [])
        self.assertEqual(rows[-1].reason, "`a | b` and `|=`")

    def test_other_tables_are_ignored(self):
        rows, problems = fidelity.parse_table(
            "| file | what |\n|---|---|\n| lib/foo.c | x |\n\n" + TABLE_OK)
        self.assertEqual(len(rows), 2)
        self.assertEqual(problems, [])


class TargetTest(unittest.TestCase):
    """`| file | present | identical |` rows: the targets a held file meets."""

    def setUp(self):
        self.t = Tree({"k/lib/foo.c": KERNEL, "lib/foo.cc": OURS, "lib/foo_sys.cc": OURS2})
        # lib/foo.c: 5 functions, 4 present (80%), 2 identical (40%)
        self.res = [fidelity.measure("lib/foo.c", self.t.path("k/lib/foo.c"),
                                     ["lib/foo.cc", "lib/foo_sys.cc"], self.t.top)]

    def tearDown(self):
        self.t.close()

    def problems(self, rows):
        targets, problems = fidelity.parse_targets(
            "| file | present | identical |\n|---|---|---|\n" + rows)
        return problems + fidelity.apply_targets(self.res, targets)

    def test_met_exactly(self):
        self.assertEqual(self.problems("| lib/foo.c | 80% | 40% |\n"), [])
        self.assertEqual(self.res[0].shortfalls(), [])

    def test_below_names_what_is_needed(self):
        problems = self.problems("| `lib/foo.c` | 90% | 70% |\n")
        self.assertEqual(problems, [
            "below target: lib/foo.c: 4 present (80%), below the 90% target (5 needed)",
            "below target: lib/foo.c: 2 identical (40%), below the 70% target (4 needed)"])

    def test_one_function_short(self):
        problems = self.problems("| lib/foo.c | 80% | 41% |\n")
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("2 identical (40%), below the 41% target (3 needed)", problems[0])

    def test_target_for_a_file_not_measured_is_stale(self):
        problems = self.problems("| lib/bar.c | 90% | 70% |\n")
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("stale target: no file of ours mirrors lib/bar.c", problems[0])

    def test_malformed_rows_fail(self):
        problems = self.problems("| lib/foo.c | 90 | 70% |\n| lib/foo.c | 120% | 70% |\n"
                                 "| lib/foo.c | 80% | 40% |\n| lib/foo.c | 80% | 40% |\n")
        self.assertEqual(len(problems), 3, problems)
        self.assertIn("a target row is", problems[0])
        self.assertIn("a target row is", problems[1])
        self.assertIn("a second target for lib/foo.c", problems[2])

    def test_other_tables_are_not_targets(self):
        targets, problems = fidelity.parse_targets(TABLE_OK)
        self.assertEqual((targets, problems), ({}, []))


class CommandTest(unittest.TestCase):
    """main() end to end, over a stand-in for upstream.py."""

    def setUp(self):
        self.t = Tree({"k/lib/foo.c": KERNEL, "lib/foo.cc": OURS, "lib/foo_sys.cc": OURS2,
                       "lib/radix.cc": "int radix_tree_insert(void) { return 0; }\n",
                       "docs/upstream.md": TABLE_OK})
        ported = [("lib/foo.cc", "lib/foo.c", "v6.12"), ("lib/foo_sys.cc", "lib/foo.c", "v6.12"),
                  ("lib/radix.cc", "lib/radix-tree.c", "v3.4")]
        self.saved = sys.modules.get("upstream")
        sys.modules["upstream"] = fake_upstream(ported, self.t.path("k"))

    def tearDown(self):
        if self.saved is None:
            del sys.modules["upstream"]
        else:
            sys.modules["upstream"] = self.saved
        self.t.close()

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = fidelity.main(["--top", self.t.top, *args])
        return rc, out.getvalue(), err.getvalue()

    def test_report(self):
        rc, out, _ = self.run_main()
        self.assertEqual(rc, 0)
        self.assertIn("lib/foo.c: 5 functions, 4 present (80%), 2 identical (40%)", out)
        self.assertIn("lib/radix.cc: lib/radix-tree.c @ v3.4: an era file, not measured", out)
        self.assertIn("extra (1): foo_get_v61", out)
        self.assertRegex(out, r"differs 0\.\d+ +sys_foo_sync +lib/foo_sys.cc:3 +UNDECLARED")
        self.assertTrue(out.rstrip().endswith(
            "total (1 file): 5 functions, 4 present (80%), 2 identical (40%)"))

    def test_verbose_shows_first_difference_and_reason(self):
        rc, out, _ = self.run_main("--verbose")
        self.assertIn("lib/foo.cc:22:", out)
        self.assertIn("reason: an atomic counter here", out)

    def test_check_fails_on_undeclared(self):
        rc, _, err = self.run_main("--check")
        self.assertEqual(rc, 1)
        self.assertIn("undeclared: lib/foo.c: sys_foo_sync differs", err)

    def test_check_passes_when_declared(self):
        with open(self.t.path("docs/upstream.md"), "a") as f:
            f.write("| lib/foo.c | sys_foo_sync | differs | a plain function |\n")
        rc, out, err = self.run_main("--check")
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("all declared", out)

    def test_targets_are_printed_and_checked(self):
        with open(self.t.path("docs/upstream.md"), "a") as f:
            f.write("| lib/foo.c | sys_foo_sync | differs | a plain function |\n\n"
                    "| file | present | identical |\n|---|---|---|\n"
                    "| lib/foo.c | 80% | 50% |\n")
        rc, out, _ = self.run_main()
        self.assertEqual(rc, 0)
        self.assertIn("  target 80% present, 50% identical: BELOW: 2 identical (40%), "
                      "below the 50% target (3 needed)", out)
        self.assertIn("targets: 1 file held, 1 below: lib/foo.c", out)
        rc, _, err = self.run_main("--check")
        self.assertEqual(rc, 1)
        self.assertIn("below target: lib/foo.c: 2 identical (40%)", err)
        rc, out, _ = self.run_main("--json")
        self.assertEqual(json.loads(out)["files"][0]["target"],
                         {"present": 80, "identical": 50, "met": False})

    def test_json(self):
        rc, out, _ = self.run_main("--json", "--file", "lib/foo.c")
        data = json.loads(out)
        self.assertEqual(rc, 0)
        self.assertEqual((data["functions"], data["present"], data["identical"]), (5, 4, 2))
        states = {e["name"]: e["state"] for e in data["files"][0]["entries"]}
        self.assertEqual(states["foo_missing"], "absent")
        self.assertEqual(data["era"], [])

    def test_era_file_is_named_not_measured(self):
        rc, out, _ = self.run_main("--file", "lib/radix-tree.c")
        self.assertEqual(rc, 0)
        self.assertEqual(out.strip(),
                         "lib/radix.cc: lib/radix-tree.c @ v3.4: an era file, not measured")

    def test_unknown_file(self):
        with self.assertRaises(SystemExit):
            self.run_main("--file", "lib/nothing.c")


if __name__ == "__main__":
    unittest.main()
