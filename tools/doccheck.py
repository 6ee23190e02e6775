#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Runs the commands the docs show, and checks the docs' links.

README.md and docs/*.md mark the shell blocks that are quick enough to run
on every CI build with an HTML comment on the line before the fence:

    <!-- ci: run -->
    ```sh
    tools/ukern list
    ```

Each marked block runs with bash (-e -o pipefail) from the repository
root, after the release build; a block that exits non-zero, or runs past
the timeout, fails the check. Unmarked blocks are never run.

Every relative link in those files, [text](path) or [text](path#anchor),
must name a file or directory inside the repository, and every docs/*.md
path that a tracked file names (a comment that says "see docs/rcu.md")
must exist; tests/tools/ is left out, its tests plant such names.

Usage: tools/doccheck.py [--root DIR] [--list] [--timeout S] [--no-run] [FILE...]
Exit status: 0 when every block passed and every link resolves, else 1.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import time

MARKER = re.compile(r"^\s*<!--\s*ci:\s*run\s*-->\s*$")
FENCE_OPEN = re.compile(r"^\s*```\s*(sh|bash|shell)\s*$")
FENCE_CLOSE = re.compile(r"^\s*```\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


class Block:
    def __init__(self, path, line, text):
        self.path, self.line, self.text = path, line, text


def doc_files(root):
    files = [os.path.join(root, "README.md")]
    files += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    return [f for f in files if os.path.isfile(f)]


def extract(path, rel):
    """The marked blocks of one file, and errors for markers without one."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    blocks, errors = [], []
    i = 0
    while i < len(lines):
        if not MARKER.match(lines[i]):
            i += 1
            continue
        mark = i + 1
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines) or not FENCE_OPEN.match(lines[j]):
            errors.append(f"{rel}:{mark}: `ci: run` marker not followed by a ```sh block")
            i = j
            continue
        k = j + 1
        while k < len(lines) and not FENCE_CLOSE.match(lines[k]):
            k += 1
        if k >= len(lines):
            errors.append(f"{rel}:{j + 1}: unterminated ```sh block")
            break
        blocks.append(Block(rel, j + 2, "\n".join(lines[j + 1:k]) + "\n"))
        i = k + 1
    return blocks, errors


def check_links(path, rel, root):
    """Relative links that do not resolve inside the repository."""
    errors = []
    real_root = os.path.realpath(root)
    with open(path, encoding="utf-8") as f:
        in_fence = False
        for no, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            if in_fence:
                continue
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # a URL (http:, mailto:) or an anchor in this page
                target = target.split("#", 1)[0]
                if target.startswith("/"):
                    errors.append(f"{rel}:{no}: link to a local path outside the "
                                  f"repository: {target}")
                    continue
                full = os.path.realpath(os.path.join(os.path.dirname(path), target))
                if not (full == real_root or full.startswith(real_root + os.sep)):
                    errors.append(f"{rel}:{no}: link outside the repository: {target}")
                elif not os.path.exists(full):
                    errors.append(f"{rel}:{no}: link to a missing file: {target}")
    return errors


DOC_REF = re.compile(r"(?<![\w./-])docs/[\w.-]+(?:/[\w.-]+)*\.md\b")


def check_doc_refs(root):
    """docs/*.md paths named by tracked files that do not exist."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []  # not a git checkout: nothing to scan
    errors = []
    for rel in out.decode("utf-8", "surrogateescape").split("\0"):
        if not rel or rel.startswith("tests/tools/"):
            continue
        try:
            with open(os.path.join(root, rel), "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue
        for no, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            for m in DOC_REF.finditer(line):
                if not os.path.exists(os.path.join(root, m.group(0))):
                    errors.append(f"{rel}:{no}: names a missing document: {m.group(0)}")
    return errors


def run_block(block, root, timeout):
    start = time.monotonic()
    try:
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.text], cwd=root,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        rc, out = r.returncode, r.stdout
    except subprocess.TimeoutExpired as e:
        rc, out = None, e.stdout or b""
    return rc, out.decode("utf-8", "replace"), time.monotonic() - start


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=None, help="the repository (default: this tree)")
    ap.add_argument("--list", action="store_true", help="print the marked blocks, run nothing")
    ap.add_argument("--no-run", action="store_true", help="check markers and links only")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per block (300)")
    ap.add_argument("files", nargs="*", help="these files instead of README.md and docs/*.md")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root or
                           os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    files = [os.path.abspath(f) for f in args.files] or doc_files(root)

    blocks, errors = [], []
    for path in files:
        rel = os.path.relpath(path, root)
        b, e = extract(path, rel)
        blocks += b
        errors += e
        errors += check_links(path, rel, root)
    if not args.files:
        errors += check_doc_refs(root)

    if args.list:
        for b in blocks:
            print(f"--- {b.path}:{b.line}\n{b.text}", end="")
        return 0

    failed = 0
    if not args.no_run:
        for b in blocks:
            rc, out, secs = run_block(b, root, args.timeout)
            if rc == 0:
                print(f"doccheck: {b.path}:{b.line}: ok ({secs:.1f} s)")
                continue
            failed += 1
            why = "timed out" if rc is None else f"exit status {rc}"
            print(f"doccheck: {b.path}:{b.line}: FAILED ({why})\n{b.text}--- output:")
            print("\n".join(out.splitlines()[-40:]))
    for e in errors:
        print(f"doccheck: {e}")
    if failed or errors:
        print(f"doccheck: {failed} block(s) failed, {len(errors)} marker or link error(s)",
              file=sys.stderr)
        return 1
    if args.no_run:
        print(f"doccheck: markers and links fine; {len(blocks)} block(s) not run")
    else:
        print(f"doccheck: {len(blocks)} block(s) passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
