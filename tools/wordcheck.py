#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Finds words about how the tree came to be written.

The tree describes what the code is and does. Labels of the work that
produced it (numbered sessions, short work labels, issue and work-item
numbers), the people or programs that wrote it, and notes about work left
for later do not belong in code, comments, strings, scripts or docs. This
scans every text file that git tracks and prints `file:line: match` for
each such phrase (PATTERNS below); the exit status is 1 when there is any.

Not scanned: verbatim kernel-form patches (tests/tools/patches/,
docs/examples/*.patch) and the pattern list of this file, between its
two marker lines.

Usage: tools/wordcheck.py [--root DIR] [FILE...]
"""

import argparse
import os
import re
import subprocess
import sys

# Paths (relative to the root) that are not scanned.
SKIP_PREFIXES = ("tests/tools/patches/",)
SKIP_SUFFIXES = (".patch", ".mbox")
SELF = "tools/wordcheck.py"

# wordcheck: patterns begin
PATTERNS = [
    # Labels of the work: "session 4", "Sessions 2-3", "this session".
    (r"\b[Ss]essions?\s*#?\d", 0),
    (r"\b(?:this|that|previous|earlier|last|next|same|one) session\b", re.I),
    # A work label such as H5 or (H10), not H100 or a hex digit run.
    (r"(?<![\w./-])H\d{1,2}\b(?!\.\d)", 0),
    # Issue and work-item numbers: "issue #7", "(#5)", "work item 3".
    (r"\bissues?\s*#\s*\d", re.I),
    (r"\(#\d+\)", 0),
    (r"\bwork[- ]items?\s*#?\s*\d", re.I),
    (r"\bitem #\d", re.I),
    # The request that started the work, spoken of as such.
    (r"\bthe (?:issue|brief)(?:'s|s'| asks| says| wants| names)\b", re.I),
    (r"\b(?:from|in|per) the (?:issues?|brief)\b", re.I),
    # The writers themselves, as people or programs.
    (r"\b(?:other|another|fellow|parallel|sibling)\s+(?:helpers?|agents?)\b", re.I),
    (r"\bhelpers?'\s", re.I),
    (r"\bhelper\s+(?:agents?|sessions?|instances?|engineers?)\b", re.I),
    (r"\bhelpers?\s+(?:building|running|working|wrote|writes|added|editing)\b", re.I),
    (r"\bagents?'\s+(?:builds?|work|runs?)\b", re.I),
    (r"\bsub-?agents?\b", re.I),
    # Work left for later, or history of the text.
    # (A kernel patch's follow-ups are history of the kernel, and fine.)
    (r"\b(?:in|as|for|with|into) (?:a|the) follow[- ]?up\b", re.I),
    (r"\bfollow[- ]?ups? (?:work|tasks?|sessions?|items?|issues?|PRs?)\b", re.I),
    (r"\bleft as (?:an? )?(?:todo|follow|future|exercise|open|later|known)", re.I),
    (r"\bTODO\(\s*(?:session|H\d|helper|agent|issue)", re.I),
    (r"\badded (?:later|in (?:session|round|H\d))\b", re.I),
    (r"\b(?:optimi[sz]ations?|changes?) of this round\b", re.I),
]
# wordcheck: patterns end

COMPILED = [re.compile(p, f) for p, f in PATTERNS]


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"],
                         check=True, capture_output=True).stdout
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def skipped(path):
    return path.startswith(SKIP_PREFIXES) or path.endswith(SKIP_SUFFIXES)


def read_text(path):
    """The file's lines, or None for a binary or unreadable file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace").splitlines()


def scan_lines(name, lines, self_file=False):
    findings = []
    quiet = False
    for no, line in enumerate(lines, 1):
        if self_file and "wordcheck: patterns begin" in line:
            quiet = True
        if self_file and "wordcheck: patterns end" in line:
            quiet = False
            continue
        if quiet:
            continue
        for rx in COMPILED:
            for m in rx.finditer(line):
                findings.append((name, no, m.group(0).strip()))
    return findings


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=None,
                    help="the git checkout to scan (default: this tree)")
    ap.add_argument("files", nargs="*",
                    help="scan these files instead of every tracked one")
    args = ap.parse_args(argv)
    root = args.root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if args.files:
        names = [os.path.relpath(os.path.abspath(f), root) for f in args.files]
    else:
        names = [p for p in tracked_files(root) if not skipped(p)]
    findings = []
    for name in sorted(names):
        lines = read_text(os.path.join(root, name))
        if lines is None:
            continue
        findings += scan_lines(name, lines, self_file=(name == SELF))
    for name, no, text in findings:
        print(f"{name}:{no}: {text}")
    if findings:
        print(f"wordcheck: {len(findings)} phrase(s) about how the tree was "
              "written; say what the code is and does instead", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
