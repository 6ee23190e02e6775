#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""How far each ported file is from its kernel base, function by function.

    fidelity.py [--file KPATH]... [--verbose] [--json] [--check] [--table MD]

Every file of ours that carries an `Upstream: <kernel path> @ v6.12` line is
measured against the pristine kernel file (tools/kpatch/upstream.py finds the
markers and caches the base). Files of ours that mirror the same kernel file
are taken together (drivers/block/null_blk/main.c is three files here). For
each function the kernel file defines, the definition of the same name in
ours is compared with it as normalized tokens (tools/kpatch/cnorm.py: no
comments or layout, READ_ONCE/WRITE_ONCE, pointer casts, sanitizer
annotations folded away) and reads as

    identical   the same token sequence
    differs     difflib's similarity ratio of the two sequences
    absent      no function of that name in our files

Functions of ours that the kernel file does not define (era variants such as
*_v61, glue to the shim) are listed apart as extra. Static inline functions
of a kernel header count when a header of ours carries its marker. Files
based on another kernel (the v3.4 radix tree) are era files: listed, not
measured.

docs/upstream.md declares each deliberate deviation in tables whose header
is `| file | function | state | reason |`: one row per function (or several
functions, comma-separated, sharing one reason) that is absent or differs;
`*` in the function cell stands for every other function of the file in that
state (the unported rest of a file of which we carry a slice).
--check fails, naming them, on every function whose state is not declared
and on every row that no longer holds (the function is identical now, is
present when declared absent, or the kernel file does not define it).

A `| file | present | identical |` table in the same page holds a kernel file
to targets: the shares of its functions that must be present and identical
(`90%`, `70%`). Each held file's report says whether it meets them, and
--check fails on a held file below a target and on a row for a file that no
file of ours mirrors.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cnorm  # noqa: E402

BASE = "v6.12"
TABLE = "docs/upstream.md"


@dataclass
class Def:
    name: str
    path: str  # the file, as shown (relative to the top)
    line: int  # 1-based line of the name
    raw: list  # raw tokens of the whole definition
    norm: list  # cnorm.NTok of raw


@dataclass
class FuncResult:
    name: str
    state: str  # identical, differs, absent
    ratio: float = 0.0
    up: Def | None = None
    ours: Def | None = None
    declared: str | None = None  # the declared state, if any
    reason: str | None = None


@dataclass
class FileResult:
    kpath: str
    ours: list[str]
    funcs: list[FuncResult] = field(default_factory=list)
    extra: list[Def] = field(default_factory=list)

    @property
    def total(self):
        return len(self.funcs)

    @property
    def present(self):
        return sum(f.state != "absent" for f in self.funcs)

    @property
    def identical(self):
        return sum(f.state == "identical" for f in self.funcs)

    target: "Target | None" = None

    def shortfalls(self) -> list[str]:
        """What the file lacks against its target, in words; [] when met."""
        t, out = self.target, []
        if t is None:
            return out
        for what, have, want in (("present", self.present, t.present),
                                 ("identical", self.identical, t.identical)):
            if have * 100 < want * self.total:
                need = -(-want * self.total // 100)
                out.append(f"{have} {what} ({pct(have, self.total)}), "
                           f"below the {want}% target ({need} needed)")
        return out


def definitions(path: str, shown: str | None = None) -> dict[str, list[Def]]:
    """Function definitions of a file, by name (a name defined twice, under
    #ifdef alternatives, keeps both)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    lx = cnorm.lex(text, in_comment=False)
    out: dict[str, list[Def]] = {}
    for fn in cnorm.functions(lx):
        raw = lx.toks[fn.start_tok:fn.end_tok + 1]
        out.setdefault(fn.name, []).append(
            Def(fn.name, shown or path, fn.line + 1, raw, cnorm.normalize(raw)))
    return out


def _texts(d: Def) -> list[str]:
    return [n.text for n in d.norm]


def compare(up: list[Def], ours: list[Def]) -> tuple[float, Def, Def]:
    """The closest pair among the definitions of one name: (ratio, up, ours)."""
    best = None
    for u in up:
        ut = _texts(u)
        for o in ours:
            ot = _texts(o)
            r = 1.0 if ut == ot else difflib.SequenceMatcher(
                None, ut, ot, autojunk=False).ratio()
            if best is None or r > best[0]:
                best = (r, u, o)
    return best


def measure(kpath: str, pristine: str, ours: list[str], top: str = ".") -> FileResult:
    """Compare the kernel file at pristine with our files (paths relative to
    top) that mirror it."""
    res = FileResult(kpath, list(ours))
    up = definitions(pristine, kpath)
    mine: dict[str, list[Def]] = {}
    for o in ours:
        for name, defs in definitions(os.path.join(top, o), o).items():
            mine.setdefault(name, []).extend(defs)
    for name, udefs in sorted(up.items(), key=lambda kv: kv[1][0].line):
        if name not in mine:
            res.funcs.append(FuncResult(name, "absent", 0.0, udefs[0]))
            continue
        r, u, o = compare(udefs, mine[name])
        res.funcs.append(FuncResult(name, "identical" if r == 1.0 else "differs", r, u, o))
    for name, defs in mine.items():
        if name not in up:
            res.extra.extend(defs)
    res.extra.sort(key=lambda d: (ours.index(d.path), d.line))
    return res


def first_difference(fr: FuncResult, context: int = 3) -> str:
    """Where a differing function first departs from the kernel's, as
    normalized tokens: 'kernel: ... / ours: ...' with our line."""
    ut, ot = _texts(fr.up), _texts(fr.ours)
    sm = difflib.SequenceMatcher(None, ut, ot, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        lo_u, lo_o = max(0, i1 - context), max(0, j1 - context)
        if j1 < len(fr.ours.norm):
            line = fr.ours.raw[fr.ours.norm[j1].src].line
        else:
            line = fr.ours.raw[-1].line
        up_line = fr.up.raw[fr.up.norm[min(i1, len(fr.up.norm) - 1)].src].line + 1

        def show(toks, lo, a, b):
            mid = " ".join(toks[a:b])
            if len(mid) > 160:
                mid = mid[:157] + "..."
            pre = " ".join(toks[lo:a])
            post = " ".join(toks[b:b + context])
            return f"{pre} [{mid}] {post}".strip()
        return (f"{fr.ours.path}:{line + 1}: {op}\n"
                f"        kernel (line {up_line}): {show(ut, lo_u, i1, i2)}\n"
                f"        ours:   {show(ot, lo_o, j1, j2)}")
    return ""


# --- the declared deviations ---------------------------------------------------

@dataclass
class Row:
    kpath: str
    names: list[str]
    state: str
    reason: str
    line: int  # 1-based line in the table file


_CELL = re.compile(r"^\s*`?([^`]*?)`?\s*$")


def _cells(line: str) -> list[str]:
    """The cells of a table row; '\\|' is a '|' inside a cell, as in GFM."""
    s = line.strip()
    if not (s.startswith("|") and s.endswith("|")) or len(s) < 2:
        return []
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", s[1:-1])]


def _table_rows(text: str, header: list[str]):
    """(line number, line, cells) of the body rows of every table in text
    whose header row is `header` (compared without case)."""
    in_table = False
    for n, line in enumerate(text.splitlines(), 1):
        cells = _cells(line)
        if not cells:
            in_table = False
            continue
        if [c.lower() for c in cells] == header:
            in_table = True
            continue
        if not in_table or all(set(c) <= set("-: ") for c in cells):
            continue
        yield n, line, cells


def parse_table(text: str) -> tuple[list[Row], list[str]]:
    """The rows of every `| file | function | state | reason |` table in text,
    and the problems found in them."""
    rows, problems = [], []
    for n, line, cells in _table_rows(text, ["file", "function", "state", "reason"]):
        if len(cells) != 4:
            problems.append(f"{TABLE}:{n}: a row needs 4 cells: {line.strip()}")
            continue
        kpath = _CELL.match(cells[0]).group(1)
        names = [_CELL.match(x).group(1).removesuffix("()") for x in cells[1].split(",")]
        names = [x for x in names if x]
        state = cells[2].strip("` ").lower()
        if state not in ("absent", "differs"):
            problems.append(f"{TABLE}:{n}: state must be absent or differs, not '{cells[2]}'")
            continue
        if not names or not cells[3]:
            problems.append(f"{TABLE}:{n}: a row needs functions and a reason")
            continue
        rows.append(Row(kpath, names, state, cells[3], n))
    return rows, problems


@dataclass
class Target:
    kpath: str
    present: int  # percent of the file's functions
    identical: int
    line: int


_PERCENT = re.compile(r"^`?(\d{1,3})\s*%`?$")


def parse_targets(text: str) -> tuple[dict[str, Target], list[str]]:
    """The rows of every `| file | present | identical |` table in text, by
    kernel file, and the problems found in them."""
    targets, problems = {}, []
    for n, line, cells in _table_rows(text, ["file", "present", "identical"]):
        kpath = _CELL.match(cells[0]).group(1) if cells else ""
        pcts = [_PERCENT.match(c) for c in cells[1:]]
        if len(cells) != 3 or not kpath or not all(pcts) or any(
                int(m.group(1)) > 100 for m in pcts):
            problems.append(f"{TABLE}:{n}: a target row is `| kernel file | N% | N% |`: "
                            f"{line.strip()}")
            continue
        if kpath in targets:
            problems.append(f"{TABLE}:{n}: a second target for {kpath}")
            continue
        targets[kpath] = Target(kpath, int(pcts[0].group(1)), int(pcts[1].group(1)), n)
    return targets, problems


def apply_targets(results: list[FileResult], targets: dict[str, Target],
                  measured_all: bool = True) -> list[str]:
    """Attaches each file's target; returns the problems --check reports: held
    files below a target, and (measuring every file) targets for files that no
    file of ours mirrors."""
    problems = []
    by_file = {r.kpath: r for r in results}
    for t in targets.values():
        fr = by_file.get(t.kpath)
        if fr is None:
            if measured_all:
                problems.append(f"{TABLE}:{t.line}: stale target: no file of ours "
                                f"mirrors {t.kpath}")
            continue
        fr.target = t
        for short in fr.shortfalls():
            problems.append(f"below target: {t.kpath}: {short}")
    return problems


def apply_table(results: list[FileResult], rows: list[Row], measured_all: bool = True
                ) -> list[str]:
    """Marks each function with its declared state and reason; returns the
    problems --check reports: undeclared states and stale rows. With
    measured_all false (--file), rows for files not measured are not judged.

    A row whose function cell is `*` covers every function of its file in its
    state that no other row names: the rest of a file of which only a slice
    is ported, or a file whose functions all stand on machinery of our own."""
    problems = []
    by_file = {r.kpath: r for r in results}
    declared: dict[tuple[str, str], Row] = {}
    rest: dict[tuple[str, str], Row] = {}
    for row in rows:
        if "*" in row.names:
            key = (row.kpath, row.state)
            if len(row.names) > 1:
                problems.append(f"{TABLE}:{row.line}: `*` stands alone in its cell")
            elif key in rest:
                problems.append(f"{TABLE}:{row.line}: {row.kpath}: a second `*` row for "
                                f"{row.state} (also line {rest[key].line})")
            rest[key] = row
            continue
        for name in row.names:
            key = (row.kpath, name)
            if key in declared:
                problems.append(f"{TABLE}:{row.line}: {row.kpath}: {name} declared twice "
                                f"(also line {declared[key].line})")
            declared[key] = row
    for row in rows:
        fr = by_file.get(row.kpath)
        if fr is None:
            if measured_all:
                problems.append(f"{TABLE}:{row.line}: stale: {row.kpath} is not a measured file")
            continue
        if "*" in row.names:
            if not any(f.state == row.state and (fr.kpath, f.name) not in declared
                       for f in fr.funcs):
                problems.append(f"{TABLE}:{row.line}: stale: {row.kpath}: no other function "
                                f"{'is absent' if row.state == 'absent' else 'differs'}")
            continue
        known = {f.name: f for f in fr.funcs}
        for name in row.names:
            f = known.get(name)
            if f is None:
                problems.append(f"{TABLE}:{row.line}: stale: {row.kpath} defines no {name}()")
            elif f.state == "identical":
                problems.append(f"{TABLE}:{row.line}: stale: {row.kpath}: {name} is identical now")
            elif f.state == "differs" and row.state == "absent":
                problems.append(f"{TABLE}:{row.line}: stale: {row.kpath}: {name} is declared "
                                f"absent but is present and differs ({f.ratio:.3f})")
            elif f.state == "absent" and row.state == "differs":
                problems.append(f"{TABLE}:{row.line}: stale: {row.kpath}: {name} is declared "
                                f"as differing but is absent")
    for fr in results:
        for f in fr.funcs:
            row = declared.get((fr.kpath, f.name))
            if row is None and f.state != "identical":
                row = rest.get((fr.kpath, f.state))
            if row is not None:
                f.declared, f.reason = row.state, row.reason
            if f.state == "identical" or (row is not None and row.state == f.state):
                continue
            if row is None:
                what = "absent" if f.state == "absent" else f"differs ({f.ratio:.3f})"
                problems.append(f"undeclared: {fr.kpath}: {f.name} {what}")
    return problems


# --- output --------------------------------------------------------------------

def pct(part: int, whole: int) -> str:
    if whole == 0:
        return "-"
    p = round(100 * part / whole)
    if p == 100 and part < whole:
        p = 99
    if p == 0 and part > 0:
        p = 1
    return f"{p}%"


def summary_line(label: str, total: int, present: int, identical: int) -> str:
    return (f"{label}: {total} functions, {present} present ({pct(present, total)}), "
            f"{identical} identical ({pct(identical, total)})")


def print_text(results: list[FileResult], era: list, verbose: bool, out=None):
    out = out or sys.stdout
    for fr in results:
        print(f"{fr.kpath}  <-  {', '.join(fr.ours)}", file=out)
        width = max([len(f.name) for f in fr.funcs] + [8])
        for f in fr.funcs:
            if f.state == "identical":
                state, where = "identical", f"{f.ours.path}:{f.ours.line}"
            elif f.state == "differs":
                state, where = f"differs {f.ratio:.3f}", f"{f.ours.path}:{f.ours.line}"
            else:
                state, where = "absent", ""
            mark = ""
            if f.state != "identical":
                mark = "declared" if f.declared == f.state else "UNDECLARED"
            print(f"  {state:<15} {f.name:<{width}}  {where:<34} {mark}".rstrip(), file=out)
            if verbose and f.state == "differs":
                print("      " + first_difference(f), file=out)
            if verbose and f.reason and f.state != "identical":
                print(f"      reason: {f.reason}", file=out)
        if fr.extra:
            names = ", ".join(d.name for d in fr.extra)
            print(f"  extra ({len(fr.extra)}): {names}", file=out)
        print(summary_line(fr.kpath, fr.total, fr.present, fr.identical), file=out)
        if fr.target:
            t = fr.target
            short = fr.shortfalls()
            verdict = "BELOW: " + "; ".join(short) if short else "met"
            print(f"  target {t.present}% present, {t.identical}% identical: {verdict}",
                  file=out)
        print(file=out)
    for p in era:
        print(f"{p.ours}: {p.upstream} @ {p.base}: an era file, not measured", file=out)
    if results:
        t = sum(fr.total for fr in results)
        pr = sum(fr.present for fr in results)
        ide = sum(fr.identical for fr in results)
        n = len(results)
        print(summary_line(f"total ({n} file{'' if n == 1 else 's'})", t, pr, ide), file=out)
        held = [fr for fr in results if fr.target]
        if held:
            below = [fr.kpath for fr in held if fr.shortfalls()]
            verdict = ("all met" if not below
                       else f"{len(below)} below: {', '.join(below)}")
            print(f"targets: {len(held)} file{'' if len(held) == 1 else 's'} held, {verdict}",
                  file=out)


def as_json(results: list[FileResult], era: list, problems: list[str]) -> dict:
    def d(x: Def | None):
        return None if x is None else {"path": x.path, "line": x.line}
    files = []
    for fr in results:
        files.append({
            "file": fr.kpath, "ours": fr.ours,
            "functions": fr.total, "present": fr.present, "identical": fr.identical,
            "entries": [{"name": f.name, "state": f.state, "ratio": round(f.ratio, 4),
                         "upstream": d(f.up), "ours": d(f.ours),
                         "declared": f.declared, "reason": f.reason} for f in fr.funcs],
            "extra": [{"name": x.name, **d(x)} for x in fr.extra],
            "target": None if fr.target is None else {
                "present": fr.target.present, "identical": fr.target.identical,
                "met": not fr.shortfalls()},
        })
    return {
        "base": BASE, "files": files,
        "era": [{"ours": p.ours, "upstream": p.upstream, "base": p.base} for p in era],
        "functions": sum(fr.total for fr in results),
        "present": sum(fr.present for fr in results),
        "identical": sum(fr.identical for fr in results),
        "problems": problems,
    }


# --- main ----------------------------------------------------------------------

def gather(top: str, only: list[str]):
    """(results, era files) for the tree at top."""
    import upstream
    ported = upstream.ported_files(top)
    groups: dict[str, list[str]] = {}
    era = []
    for p in ported:
        if p.base != BASE:
            era.append(p)
            continue
        groups.setdefault(p.upstream, []).append(p.ours)
    if only:
        missing = [k for k in only if k not in groups and all(p.upstream != k for p in era)]
        if missing:
            raise SystemExit(f"fidelity: no file of ours mirrors {', '.join(missing)} @ {BASE}")
        groups = {k: v for k, v in groups.items() if k in only}
        era = [p for p in era if p.upstream in only]
    if not groups:
        return [], era
    try:
        pristine = upstream.ensure_base(top, BASE, sorted(groups))
    except upstream.BaseError as e:
        raise SystemExit(f"fidelity: {e}")
    lost = sorted(set(groups) - set(pristine))
    if lost:
        raise SystemExit(f"fidelity: not in the {BASE} tree: {', '.join(lost)} "
                         f"(marked in {', '.join(o for k in lost for o in groups[k])})")
    results = [measure(k, pristine[k], sorted(groups[k]), top) for k in sorted(groups)]
    return results, era


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="fidelity",
        description="How far each ported file is from its Linux 6.12 base, function by function.")
    ap.add_argument("--file", action="append", default=[], metavar="KPATH",
                    help="only this kernel file (repeatable), e.g. lib/sbitmap.c")
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="show where each differing function first departs, and the reasons")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("--check", action="store_true",
                    help=f"fail on undeclared deviations and stale rows of {TABLE}")
    ap.add_argument("--table", metavar="MD", help=f"the declarations (default: {TABLE})")
    ap.add_argument("--top", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    top = args.top or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    results, era = gather(top, args.file)
    table = args.table or os.path.join(top, TABLE)
    rows, problems, targets = [], [], {}
    if os.path.exists(table):
        with open(table, encoding="utf-8") as f:
            text = f.read()
        rows, problems = parse_table(text)
        targets, target_problems = parse_targets(text)
        problems += target_problems
    elif args.check:
        problems.append(f"{TABLE}: missing")
    problems += apply_table(results, rows, measured_all=not args.file)
    problems += apply_targets(results, targets, measured_all=not args.file)

    if args.json:
        json.dump(as_json(results, era, problems if args.check else []), sys.stdout, indent=1)
        print()
    elif not args.check or args.verbose:
        print_text(results, era, args.verbose)
    if not args.check:
        return 0
    for p in problems:
        print(f"fidelity: {p}", file=sys.stderr)
    if problems:
        print(f"fidelity: {len(problems)} problem(s): declare each deviation in {TABLE} "
              "with its reason, drop the rows that no longer hold, and keep held files "
              "at their targets", file=sys.stderr)
        return 1
    if not args.json:
        n = sum(f.state != "identical" for fr in results for f in fr.funcs)
        held = sum(fr.target is not None for fr in results)
        print(f"fidelity: {len(results)} files, {n} deviations, all declared in {TABLE}; "
              f"{held} files held to their targets, all met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
