#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""docs/bad-input.md: every test its tables name exists.

The last column of each table names tests as `Suite.Test`; each must be a
GoogleTest TEST/TEST_F/TEST_P in tests/ or an add_test() NAME in a
CMakeLists.txt of the tree.
"""
import pathlib
import re
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NAME = re.compile(r"`([A-Za-z][A-Za-z0-9]*)\.([A-Za-z][A-Za-z0-9]*)`")


def named_tests():
    names = set()
    for line in (ROOT / "docs" / "bad-input.md").read_text().splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        names.update(NAME.findall(cells[-1]))
    return names


def defined_tests():
    found = set()
    for src in (ROOT / "tests").rglob("*.cc"):
        for m in re.finditer(r"\bTEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)", src.read_text()):
            found.add((m.group(1), m.group(2)))
    for cm in ROOT.rglob("CMakeLists.txt"):
        if "build" in cm.relative_to(ROOT).parts[:1]:
            continue
        for m in re.finditer(r"add_test\(NAME\s+(\w+)\.(\w+)", cm.read_text()):
            found.add((m.group(1), m.group(2)))
    return found


class BadInputTableTest(unittest.TestCase):
    def test_every_named_test_exists(self):
        names = named_tests()
        self.assertGreater(len(names), 10)
        missing = sorted(f"{s}.{t}" for s, t in names - defined_tests())
        self.assertEqual(missing, [], "tests named in docs/bad-input.md that do not exist")

    def test_every_row_names_a_test(self):
        for line in (ROOT / "docs" / "bad-input.md").read_text().splitlines():
            if not line.startswith("|") or line.startswith("|---") or "| test |" in line:
                continue
            last = line.strip("|").split("|")[-1]
            self.assertRegex(last, NAME, line)


if __name__ == "__main__":
    unittest.main()
