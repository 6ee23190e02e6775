#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""tools/ukern export: our change to ported files as a kernel-form patch.

The change is taken as hunks of our files (the working tree against a
revision, or each commit of a range). Each hunk is placed in the pristine
kernel file its file mirrors, by normalized tokens as `port` places kernel
hunks in ours, and carried over with our text; the result is diffed against
the pristine file with kernel paths. The output is an mbox that `git am`
takes on a kernel tree at the base (v6.12).

What C++ or the sanitizers need and the kernel does not (uk_tsan_*()
annotations, seams, nullptr) is turned back into kernel C in carried text.
"""
from __future__ import annotations

import argparse
import email.utils
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import engine  # noqa: E402
import patchfile  # noqa: E402
import upstream  # noqa: E402
from port import place_hunk  # noqa: E402

ZERO = "0" * 40


def git(top: str, *args: str, check: bool = True) -> str:
    r = subprocess.run(["git", "-C", top, *args], capture_output=True, text=True)
    if check and r.returncode:
        raise SystemExit(f"ukern export: git {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def kernel_c(text: str) -> str:
    """Carried text of ours in the kernel's C: annotations and seams that
    exist for the sanitizers and the tests go, nullptr reads NULL."""
    out = []
    for line in text.split("\n"):
        code = line.strip()
        if re.fullmatch(r"uk_tsan_\w+\(.*\);(\s*/\*.*\*/)?", code):
            continue
        if re.fullmatch(r"if \(unlikely\(\w+(_hook|_v[0-9]+)\)\)\s.*;", code):
            continue
        out.append(re.sub(r"\bnullptr\b", "NULL", line))
    return "\n".join(out)


def our_hunks(path: str, before: str, after: str) -> list[patchfile.Hunk]:
    if before == after:
        return []
    diff = patchfile.unified(path, before, after)
    return patchfile.parse(diff)[0].files[0].hunks


def export_change(top: str, changes: dict[str, tuple[str, str]], base: str, report) -> tuple[str, int]:
    """Kernel-form diff for {our path: (before, after)}; returns (diff, failed)."""
    per_kpath: dict[str, engine.Placer] = {}
    pristine: dict[str, str] = {}
    failed = 0
    for path in sorted(changes):
        before, after = changes[path]
        ups = [u for u in upstream.upstream_for(top, path) if u.base == base]
        if not ups:
            report(f"  {path}: not a ported file of base {base}: left out")
            continue
        files = upstream.ensure_base(top, base, [u.upstream for u in ups])
        for u in ups:
            if u.upstream not in per_kpath:
                with open(files[u.upstream], encoding="utf-8", errors="surrogateescape") as f:
                    pristine[u.upstream] = f.read()
                per_kpath[u.upstream] = engine.Placer(pristine[u.upstream], keep_comments=True)
        order = [u.upstream for u in ups]
        for n, h in enumerate(our_hunks(path, before, after), 1):
            status, kpath, line, why = place_hunk(per_kpath, order, h, kernel_c)
            if status == "failed":
                failed += 1
                report(f"  {path} hunk {n} {h.header()}: failed: {why}")
            else:
                report(f"  {path} hunk {n} {h.header()} -> {kpath or order[0]}: {status}")
    diff = "".join(patchfile.unified(k, pristine[k], per_kpath[k].text)
                   for k in sorted(per_kpath))
    return diff, failed


def mail(subject: str, author: str, date: str, body: str, diff: str, commit: str = ZERO) -> str:
    msg = f"From {commit} Mon Sep 17 00:00:00 2001\nFrom: {author}\nDate: {date}\n"
    msg += f"Subject: [PATCH] {subject}\n\n"
    if body.strip():
        msg += body.strip("\n") + "\n"
    msg += "---\n" + diff + "-- \nukern export\n\n"
    return msg


def ported_paths(top: str) -> list[str]:
    return sorted({p.ours for p in upstream.ported_files(top)})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="tools/ukern export",
        description="Our change to ported files as a kernel-form patch against the base.")
    ap.add_argument("revs", nargs="?", default=None,
                    help="REV: the working tree against REV (default HEAD); "
                         "A..B: one patch per commit of the range")
    ap.add_argument("-o", "--output", default="-", help="write here (default stdout)")
    ap.add_argument("--subject", default=None, help="subject for a working-tree export")
    ap.add_argument("--base", default="v6.12")
    ap.add_argument("--top", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    top = args.top or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = ported_paths(top)

    def report(line):
        print(line, file=sys.stderr)

    out = []
    failed = 0
    if args.revs and ".." in args.revs:
        commits = git(top, "rev-list", "--reverse", args.revs, "--", *paths).split()
        if not commits:
            report(f"ukern export: no commit in {args.revs} changes a ported file")
        for c in commits:
            changed = git(top, "diff", "--name-only", f"{c}^", c, "--", *paths).split()
            changes = {p: (git(top, "show", f"{c}^:{p}", check=False),
                           git(top, "show", f"{c}:{p}", check=False)) for p in changed}
            subject = git(top, "log", "-1", "--format=%s", c).strip()
            report(f"commit {c[:12]} {subject}")
            diff, f = export_change(top, changes, args.base, report)
            failed += f
            if diff:
                out.append(mail(subject, git(top, "log", "-1", "--format=%an <%ae>", c).strip(),
                                git(top, "log", "-1", "--format=%aD", c).strip(),
                                git(top, "log", "-1", "--format=%b", c), diff, c))
    else:
        rev = args.revs or "HEAD"
        git(top, "rev-parse", "--verify", f"{rev}^{{commit}}")
        changed = git(top, "diff", "--name-only", rev, "--", *paths).split()
        changes = {}
        for p in changed:
            full = os.path.join(top, p)
            after = open(full, encoding="utf-8").read() if os.path.exists(full) else ""
            changes[p] = (git(top, "show", f"{rev}:{p}", check=False), after)
        diff, failed = export_change(top, changes, args.base, report)
        if diff:
            name = git(top, "config", "user.name", check=False).strip() or "ukern"
            addr = git(top, "config", "user.email", check=False).strip() or "ukern@localhost"
            out.append(mail(args.subject or "ukern: change exported from the working tree",
                            f"{name} <{addr}>", email.utils.formatdate(), "", diff))
        elif not changed:
            report(f"ukern export: no ported file differs from {rev}")
    text = "".join(out)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    report(f"hunks: {'all placed' if not failed else f'{failed} failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
