#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""tools/ukern port: carry kernel-form patches onto ukern's ported files.

Each kernel path in a patch is mapped to our file(s) by their Upstream:
markers; each hunk is found there by normalized tokens (cnorm.py) and its
change carried over as text. A hunk is reported as one of

  exact       its old lines stand verbatim in our file
  normalized  found after normalization (comments, wrapping, casts, marked
              accesses differ), possibly with fuzz (context lines dropped)
  comment     it changes only comments: nothing to carry (ours are our own)
  equivalent  it changes nothing that normalization sees: nothing to carry
  failed      with the nearest candidate in our file and what differs there

and the run ends with 'hunks: N applied, M failed'. With --check the changed
files are compiled (syntax only, the release build's flags) and the
compiler's errors printed with their lines. Nothing is written when
the input is not a well-formed patch; otherwise the hunks that place are
applied (as patch(1) does) and the exit status is 1 when any failed.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cnorm  # noqa: E402
import engine  # noqa: E402
import patchfile  # noqa: E402
import upstream  # noqa: E402

MAX_FUZZ = 3


class Result:
    def __init__(self):
        self.applied = 0
        self.failed = 0
        self.unported = 0
        self.compile_failed = False
        self.rows: list[str] = []

    def add(self, ok: bool | None, row: str):
        if ok is None:
            self.unported += 1
        elif ok:
            self.applied += 1
        else:
            self.failed += 1
        self.rows.append(row)

    def summary(self) -> str:
        s = f"hunks: {self.applied} applied, {self.failed} failed"
        if self.unported:
            s += f", {self.unported} in files ukern does not port"
        return s


MIN_ANCHOR = 16  # normalized tokens a fuzzy match must keep when no function vouches for it


def place_hunk(targets: dict[str, engine.Placer], order: list[str], h: patchfile.Hunk,
               transform=None):
    """Finds and applies h in one of the targets. Returns (status, file,
    0-based line, detail); status is exact / normalized / comment /
    equivalent / failed. transform, if given, rewrites each carried text.

    With all its context, a hunk may match several places: the one inside
    the function its header names wins, then the nearest to its line. With
    context dropped (fuzz), a match must lie in or right after that function,
    or, when the header names none, be the only one and keep MIN_ANCHOR
    tokens; otherwise the hunk fails rather than land in the wrong place."""
    old, new = engine.sides(h)
    if [t.text for t in old.lx.toks] == [t.text for t in new.lx.toks]:
        return "comment", None, -1, "changes only comments or white space: nothing to carry"
    fname = h.func_name()
    if _already_applied(targets, order, h, old, new, fname):
        return "failed", None, -1, "already applied: our file has the hunk's new side"
    fname_ours = bool(fname) and any(f.name == fname for p in order for f in targets[p].src.funcs())
    seen = set()
    for fuzz in range(0, MAX_FUZZ + 1):
        lead = min(fuzz, h.lead_context())
        trail = min(fuzz, h.trail_context())
        if (lead, trail) in seen:
            continue
        seen.add((lead, trail))
        hh = engine.trimmed(h, lead, trail) if fuzz else h
        o2, n2 = engine.sides(hh)
        if not o2.ntexts:
            continue
        cands = [(p, at) for p in order for at in engine.find_all(targets[p].src.ntexts, o2.ntexts)]
        if not cands:
            continue
        if fuzz:
            if fname_ours:
                cands = [c for c in cands if _by_function(targets[c[0]], c[1], fname)]
            elif fname or len(o2.ntexts) < MIN_ANCHOR:
                cands = []
            if len(cands) != 1:
                continue
        path, at = _choose(targets, cands, fname, h.old_start)
        pl = targets[path]
        line = pl.src.lx.toks[pl.src.norm[at].src].line
        if o2.ntexts == n2.ntexts:
            return ("equivalent", path, line,
                    "no change once normalized (marked access, cast): nothing to carry")
        edits = pl.edits_for(hh, at)
        if transform:
            for e in edits:
                e.text = transform(e.text)
        dup = _redefined(targets, pl, edits)
        if dup:
            return "failed", path, line, dup
        exact = fuzz == 0 and h.old_text() in pl.text
        pl.apply(edits)
        how = "exact" if exact else "normalized"
        if fuzz:
            how += f" (fuzz {fuzz})"
        return how, path, line, ""
    best = (None, -1, 0.0, "")
    for path in order:
        line, ratio, why = engine.nearest(targets[path].src, h)
        if ratio > best[2]:
            best = (path, line, ratio, why)
    path, line, ratio, why = best
    absent = f"`{fname}` (the hunk header's function) is not in ours; " if fname and not fname_ours else ""
    if path is None:
        return "failed", None, -1, absent + "no candidate in our files"
    return "failed", path, line, f"{absent}nearest: {path}:{line + 1} (similarity {ratio:.2f}): {why}"


def _func_index(src: engine.Source, at: int):
    """(functions of the file, index of the one holding or following the
    normalized token at)."""
    funcs = src.funcs()
    line = src.lx.toks[src.norm[at].src].line
    for i, f in enumerate(funcs):
        if line <= f.end_line:
            return funcs, i
    return funcs, len(funcs)


def _by_function(pl: engine.Placer, at: int, fname: str) -> bool:
    """The match at `at` lies in fname, or in the function right after it
    (git names the function above a hunk that starts between two)."""
    funcs, i = _func_index(pl.src, at)
    return (i < len(funcs) and funcs[i].name == fname) or (i > 0 and funcs[i - 1].name == fname)


def _choose(targets, cands, fname, hint_line):
    if len(cands) == 1:
        return cands[0]
    if fname:
        inside = [c for c in cands if _by_function(targets[c[0]], c[1], fname)]
        if inside:
            cands = inside
    def dist(c):
        src = targets[c[0]].src
        return abs(src.lx.toks[src.norm[c[1]].src].line - (hint_line - 1))
    return min(cands, key=dist)


def _redefined(targets, pl: engine.Placer, edits) -> str:
    """A reason when the edits add a function that ours already defines
    (outside what they replace), else ''."""
    for e in edits:
        if not e.text.strip():
            continue
        for f in cnorm.functions(cnorm.lex(e.text, False)):
            for p, other in targets.items():
                for g in other.src.funcs():
                    if g.name != f.name:
                        continue
                    gs = other.src.lx.toks[g.start_tok].start
                    if other is pl and e.start <= gs < e.end:
                        continue
                    return f"adds `{f.name}`, which ours already defines at {p}:{g.line + 1}"
    return ""


def _already_applied(targets, order, h, old, new, fname) -> bool:
    """The hunk's new side is in our file, and it is not just a part of the
    old side (as it is for a hunk that only removes lines)."""
    if old.ntexts == new.ntexts or engine.find_all(old.ntexts, new.ntexts):
        return False
    return any(targets[p].locate(h.reversed(), fname) is not None for p in order)


_METADATA_LINE = re.compile(r"^\s*(EXPORT_SYMBOL\w*|MODULE_[A-Z_]+|module_param\w*)\(.*\);\s*$")


def ukern_form(text: str) -> str:
    """Carried kernel text as it goes into our files: module metadata lines
    (exports, parameter declarations, descriptions) have no place here."""
    if "EXPORT_SYMBOL" not in text and "MODULE_" not in text and "module_param" not in text:
        return text
    return "\n".join(l for l in text.split("\n") if not _METADATA_LINE.match(l))


def run(top: str, patches: list[patchfile.Patch], reverse: bool, dry_run: bool,
        out=sys.stdout, verbose: bool = False, check: bool = False) -> Result:
    if reverse:
        patches = [p.reversed() for p in reversed(patches)]
    res = Result()
    placers: dict[str, engine.Placer] = {}
    originals: dict[str, str] = {}
    for p in patches:
        if p.subject:
            print(f"patch: {p.subject}", file=out)
        for fd in p.files:
            kpath = fd.path
            if fd.binary:
                for _ in fd.hunks or [None]:
                    res.add(False, f"{kpath}: binary diff: cannot carry")
                print(f"  {kpath}: binary diff: failed", file=out)
                continue
            ours = upstream.ours_for(top, kpath)
            if fd.old_path is None or fd.new_path is None or fd.old_path != fd.new_path:
                what = ("creates" if fd.old_path is None else
                        "deletes" if fd.new_path is None else "renames")
                print(f"  {kpath}: the patch {what} a file: failed "
                      f"({len(fd.hunks)} hunks; port such a file by hand)", file=out)
                for _ in fd.hunks:
                    res.add(False, kpath)
                continue
            if not ours:
                print(f"  {kpath}: not ported by ukern: {len(fd.hunks)} hunks left out",
                      file=out)
                for _ in fd.hunks:
                    res.add(None, kpath)
                continue
            for path in ours:
                if path not in placers:
                    with open(os.path.join(top, path), encoding="utf-8") as f:
                        originals[path] = f.read()
                    placers[path] = engine.Placer(originals[path])
            print(f"  {kpath} -> {', '.join(ours)}", file=out)
            for n, h in enumerate(fd.hunks, 1):
                status, path, line, detail = place_hunk(placers, ours, h, ukern_form)
                where = f" at {path}:{line + 1}" if path and line >= 0 and status != "failed" else ""
                tail = f": {detail}" if detail else ""
                print(f"    hunk {n} {h.header()}: {status}{where}{tail}", file=out)
                if status == "failed" and verbose:
                    for k, t in h.lines:
                        print(f"      {k}{t}", file=out)
                res.add(status != "failed", f"{kpath} hunk {n}: {status}")
    # C that C++ rejects, in what the port added.
    for path, pl in placers.items():
        if pl.text == originals[path]:
            continue
        spans = added_spans(originals[path], pl.text)
        text, fixed, problems = engine.cxx_fixups(pl.text, spans)
        for line, msg in fixed:
            print(f"  {path}:{line + 1}: C++ fix: {msg}", file=out)
        for line, msg in problems:
            print(f"  {path}:{line + 1}: C++ rejects this: {msg}", file=out)
        if text != pl.text:
            pl.src = engine.Source(text)
    changed = [p for p, pl in placers.items() if pl.text != originals[p]]
    if not dry_run:
        for path in changed:
            with open(os.path.join(top, path), "w", encoding="utf-8") as f:
                f.write(placers[path].text)
        if check and changed and not compile_check(top, changed, out):
            res.compile_failed = True
    print(res.summary(), file=out)
    return res


def compile_check(top: str, paths: list[str], out=sys.stdout) -> bool:
    """Compiles (syntax only) each changed file, or for a header the ported
    sources that include it, with the release build's flags; prints the
    compiler's errors. False when any fails or no build is configured."""
    db = os.path.join(top, "build", "release", "compile_commands.json")
    if not os.path.exists(db):
        print(f"check: {db} is missing: configure the release build first "
              "(tools/ukern test)", file=out)
        return False
    with open(db, encoding="utf-8") as f:
        entries = json.load(f)
    root = os.path.commonpath([e["file"] for e in entries])
    rel = {os.path.relpath(e["file"], root): e for e in entries}
    tus = []
    for p in paths:
        if p in rel:
            tus.append(p)
            continue
        name = os.path.basename(p)
        users = [r for r in sorted(rel) if r.split("/")[0] in upstream.AREAS
                 and re.search(r"#include\s*[<\"][^>\"]*\b" + re.escape(name) + r"[>\"]",
                               _slurp(os.path.join(top, r)))]
        tus += [u for u in users[:2] if u not in tus]
    ok = True
    for tu in tus:
        e = rel[tu]
        args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
        args = [a.replace(root, top) for a in args]
        keep = []
        skip = False
        for a in args:
            if skip:
                skip = False
                continue
            if a == "-o":
                skip = True
                continue
            keep.append(a)
        r = subprocess.run(keep + ["-fsyntax-only"], cwd=e["directory"], capture_output=True,
                           text=True)
        if r.returncode:
            ok = False
            errs = [l for l in r.stderr.splitlines() if "error" in l or l.startswith(" ")]
            print(f"check: {tu} does not compile:", file=out)
            for l in errs[:30]:
                print(f"  {l.replace(top + '/', '')}", file=out)
        else:
            print(f"check: {tu} compiles", file=out)
    return ok


def _slurp(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def added_spans(before: str, after: str) -> list[tuple[int, int]]:
    """Character spans of after holding lines that before lacks."""
    bl = before.splitlines(keepends=True)
    al = after.splitlines(keepends=True)
    offs = [0]
    for l in al:
        offs.append(offs[-1] + len(l))
    spans = []
    sm = difflib.SequenceMatcher(None, bl, al, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag in ("insert", "replace") and j2 > j1:
            spans.append((offs[j1], offs[j2]))
    return spans


def read_inputs(args) -> str:
    if args.from_tree:
        tree, rng = args.from_tree
        cmd = ["git", "-C", tree, "format-patch", "--stdout", "--no-signature"]
        cmd += [rng] if ".." in rng else ["-1", rng]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            raise patchfile.PatchError(f"git format-patch in {tree} failed: {r.stderr.strip()}")
        return r.stdout
    texts = []
    for name in args.patch or ["-"]:
        if name == "-":
            texts.append(sys.stdin.read())
        else:
            try:
                with open(name, encoding="utf-8", errors="surrogateescape") as f:
                    texts.append(f.read())
            except OSError as e:
                raise patchfile.PatchError(f"{name}: {e.strerror}")
    return "\n".join(texts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tools/ukern port",
                                 description="Carry kernel-form patches onto ukern's files.")
    ap.add_argument("patch", nargs="*", help="patch files (mbox, format-patch, diff); - is stdin")
    ap.add_argument("-R", "--reverse", action="store_true", help="take the patches back out")
    ap.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    ap.add_argument("--from", dest="from_tree", nargs=2, metavar=("KERNEL_TREE", "REV_RANGE"),
                    help="commits from a kernel git tree (a range A..B, or one commit)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print failed hunks")
    ap.add_argument("--check", action="store_true",
                    help="compile the changed files (syntax only, release flags) and print errors")
    ap.add_argument("--top", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    top = args.top or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        patches = patchfile.parse(read_inputs(args))
    except patchfile.PatchError as e:
        print(f"ukern port: {e}; nothing changed", file=sys.stderr)
        return 2
    res = run(top, patches, args.reverse, args.dry_run, verbose=args.verbose, check=args.check)
    return 1 if res.failed or res.compile_failed else 0


if __name__ == "__main__":
    sys.exit(main())
