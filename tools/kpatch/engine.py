# SPDX-License-Identifier: GPL-2.0-only
"""Placing one hunk in a file whose text differs from the hunk's, but whose code
is the same after normalization (cnorm.py).

The hunk's old side is found in the target by its normalized tokens; the
difference between its old and new sides is taken on normalized tokens too,
and each changed run is carried over as text:

- a run of whole lines in the hunk becomes whole lines in the target, placed
  beside the target's own lines for the neighbouring tokens;
- a change inside a line replaces just the target's tokens for it.

Comments in carried text are dropped or kept as the caller asks (a kernel
patch's comments do not enter our files; our comments do go out in an
exported patch).
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

import cnorm
from patchfile import Hunk

_BRACKETS = {"(": ")", "[": "]", "{": "}"}


@dataclass
class Source:
    """A file's text with its tokens and normalized tokens."""
    text: str

    def __post_init__(self):
        self.lx = cnorm.lex(self.text, False)
        self.norm = cnorm.normalize(self.lx.toks)
        self.ntexts = [n.text for n in self.norm]
        self._funcs = None

    def funcs(self):
        if self._funcs is None:
            self._funcs = cnorm.functions(self.lx)
        return self._funcs

    def func_at(self, line: int):
        for f in self.funcs():
            if self.lx.toks[f.start_tok].line <= line <= f.end_line:
                return f
        return None


@dataclass
class Side:
    """One side of a hunk, lexed. added[i] says whether line i was added (or
    removed, for the old side) by the hunk rather than context."""
    text: str
    changed_lines: list[bool]

    def __post_init__(self):
        self.lx = cnorm.lex(self.text, cnorm.starts_in_comment(self.text))
        self.norm = cnorm.normalize(self.lx.toks)
        self.ntexts = [n.text for n in self.norm]


def sides(h: Hunk) -> tuple[Side, Side]:
    old = Side(h.old_text(), [k == "-" for k, _ in h.lines if k in " -"])
    new = Side(h.new_text(), [k == "+" for k, _ in h.lines if k in " +"])
    return old, new


def find_all(hay: list[str], needle: list[str]) -> list[int]:
    if not needle:
        return []
    out = []
    first = needle[0]
    n = len(needle)
    i = 0
    try:
        while True:
            i = hay.index(first, i)
            if hay[i:i + n] == needle:
                out.append(i)
            i += 1
    except ValueError:
        return out


@dataclass
class Edit:
    start: int
    end: int
    text: str


def _norm_lines(side: Side) -> list[int]:
    """The 0-based line of each normalized token of a side."""
    return [side.lx.toks[n.src].line for n in side.norm]


def change_ops(h: Hunk, old: Side, new: Side) -> list[tuple[int, int, int, int]]:
    """The hunk's change as (i1, i2, j1, j2): old normalized tokens i1..i2
    become new ones j1..j2.

    Each run of removed and added lines is one change. Inside a run, a
    token-level difference is used when every piece of it stays within one
    line on both sides (a renamed variable, a changed condition), so that the
    target keeps its own tokens around it (casts, marked accesses); otherwise
    the run is replaced as a whole (a rewritten statement)."""
    oln, nln = _norm_lines(old), _norm_lines(new)
    ops = []
    oline = nline = 0
    k = 0
    lines = h.lines
    while k < len(lines):
        if lines[k][0] == " ":
            oline += 1
            nline += 1
            k += 1
            continue
        o0, n0 = oline, nline
        while k < len(lines) and lines[k][0] != " ":
            if lines[k][0] == "-":
                oline += 1
            else:
                nline += 1
            k += 1
        i1 = _first_at_or_after(oln, o0)
        i2 = _first_at_or_after(oln, oline)
        j1 = _first_at_or_after(nln, n0)
        j2 = _first_at_or_after(nln, nline)
        if i1 == i2 and j1 == j2:
            continue  # blank or comment lines only
        sm = difflib.SequenceMatcher(None, old.ntexts[i1:i2], new.ntexts[j1:j2], autojunk=False)
        fine = [(a1 + i1, a2 + i1, b1 + j1, b2 + j1)
                for tag, a1, a2, b1, b2 in sm.get_opcodes() if tag != "equal"]
        if fine and all(_one_line(oln, a1, a2) and _one_line(nln, b1, b2)
                        for a1, a2, b1, b2 in fine) and sm.ratio() >= 0.5:
            ops += fine
        else:
            ops.append((i1, i2, j1, j2))
    return ops


def _first_at_or_after(norm_lines: list[int], line: int) -> int:
    for i, l in enumerate(norm_lines):
        if l >= line:
            return i
    return len(norm_lines)


def _one_line(norm_lines: list[int], a: int, b: int) -> bool:
    return a == b or norm_lines[a] == norm_lines[b - 1]


def _balanced(toks: list[str]) -> bool:
    stack = []
    for t in toks:
        if t in _BRACKETS:
            stack.append(_BRACKETS[t])
        elif t in (")", "]", "}"):
            if not stack or stack.pop() != t:
                return False
    return not stack


def _raw_range(src_norm, ntoks_len, lo: int, hi: int, raw_toks, widen: bool):
    """Raw token range [a, b] (inclusive) covering normalized tokens lo..hi-1,
    or for lo == hi an empty range after the token before. With widen, the
    range grows to the whole gap between the neighbouring normalized tokens
    (less the dropped statements at its ends) when that gap is balanced, so
    wrappers such as READ_ONCE( ) go with what they wrap."""
    prev_raw = src_norm[lo - 1].src if lo > 0 else -1
    next_raw = src_norm[hi].src if hi < ntoks_len else len(raw_toks)
    if lo == hi:
        return prev_raw + 1, prev_raw  # nothing: an insertion point after prev
    a, b = src_norm[lo].src, src_norm[hi - 1].src
    if widen:
        ga, gb = _trim_statements(raw_toks, prev_raw + 1, next_raw - 1)
        if ga <= a and gb >= b and _balanced([t.text for t in raw_toks[ga:gb + 1]]):
            return ga, gb
    return a, b


def _trim_statements(raw_toks, ga: int, gb: int) -> tuple[int, int]:
    """The gap [ga, gb] without the whole statements that normalization drops
    (seams, sanitizer annotations) at its two ends: a change next to them
    leaves them in place."""
    dropped = []
    p = ga
    while p <= gb:
        e = cnorm.dropped_statement_end(raw_toks, p, gb + 1)
        if e > 0:
            dropped.append((p, e - 1))
            p = e
        else:
            p += 1
    for s, e in dropped:
        if s == ga:
            ga = e + 1
    for s, e in reversed(dropped):
        if e == gb:
            gb = s - 1
    return ga, gb


def _line_bounds(text: str, start: int, end: int) -> tuple[int, int, bool]:
    """(line start, line end after the newline, whole) for the span: whole is
    true when only white space shares its first and last lines (a trailing
    comment counts as white space)."""
    ls = text.rfind("\n", 0, start) + 1
    le = text.find("\n", end)
    le = len(text) if le < 0 else le + 1
    before = text[ls:start]
    after = text[end:le]
    after_code = cnorm.strip_comments(after, False) if ("/*" in after or "//" in after) else after
    whole = not before.strip() and not after_code.strip()
    return ls, le, whole


class Placer:
    """Applies hunks to one target text."""

    def __init__(self, text: str, keep_comments: bool = False):
        self.src = Source(text)
        self.keep_comments = keep_comments

    @property
    def text(self) -> str:
        return self.src.text

    def locate(self, h: Hunk, want_func: str | None = None, hint_line: int | None = None):
        """The normalized index where the hunk's old side starts in the
        target, or None. Of several places, the one inside the function the
        hunk header names wins, then the one nearest hint_line."""
        old, new = sides(h)
        found = find_all(self.src.ntexts, old.ntexts)
        if not found:
            return None
        return self._choose(found, len(old.ntexts), want_func, hint_line)

    def _choose(self, found, length, want_func, hint_line):
        if len(found) == 1:
            return found[0]
        if want_func:
            inside = []
            for s in found:
                line = self.src.lx.toks[self.src.norm[s].src].line
                f = self.src.func_at(line)
                if f and f.name == want_func:
                    inside.append(s)
            if len(inside) == 1:
                return inside[0]
            if inside:
                found = inside
        if hint_line is not None:
            return min(found, key=lambda s: abs(self.src.lx.toks[self.src.norm[s].src].line
                                                 - (hint_line - 1)))
        return found[0]

    def edits_for(self, h: Hunk, at: int) -> list[Edit]:
        """The text edits that carry the hunk's change to the target, whose
        normalized tokens match the hunk's old side from index at."""
        old, new = sides(h)
        edits = []
        for i1, i2, j1, j2 in change_ops(h, old, new):
            edits.append(self._edit(old, new, at, i1, i2, j1, j2))
        return [e for e in edits if e is not None]

    def _edit(self, old: Side, new: Side, at: int, i1, i2, j1, j2) -> Edit | None:
        tgt = self.src
        T = tgt.text
        # Target side: the raw tokens that the change removes.
        ta, tb = _raw_range(tgt.norm, len(tgt.norm), at + i1, at + i2, tgt.lx.toks, True)
        # Hunk's new side: the raw tokens that the change brings.
        na, nb = _raw_range(new.norm, len(new.norm), j1, j2, new.lx.toks, True)
        ins = ""
        ins_whole = False
        ins_lines = ""
        if nb >= na:
            N = new.text
            s, e = new.lx.toks[na].start, new.lx.toks[nb].end
            ins = N[s:e]
            ls, le, ins_whole = _line_bounds(N, s, e)
            if ins_whole:
                ins_lines, ins_first, ins_last = self._carried_lines(new, ls, le)
            if not self.keep_comments:
                ins = cnorm.strip_comments(ins, False)
        if tb >= ta:
            # Replace or delete in the target.
            s, e = tgt.lx.toks[ta].start, tgt.lx.toks[tb].end
            ls, le, whole = _line_bounds(T, s, e)
            if whole and (nb < na or ins_whole):
                ls, le = self._drop_blank_neighbour(old, i1, i2, ls, le)
                return Edit(ls, le, _with_seams(self._kept_seams(ta, tb), ins_lines))
            if not ins:
                s, e = _swallow_space(T, s, e)
            return Edit(s, e, ins)
        if nb < na:
            return None
        # Insert into the target between two of its tokens.
        lo = at + i1
        prev_tok = tgt.lx.toks[tgt.norm[lo - 1].src] if lo > 0 else None
        next_tok = tgt.lx.toks[tgt.norm[lo].src] if lo < len(tgt.norm) else None
        if ins_whole:
            # Keep the hunk's side: lines written right under the token before
            # go under ours; lines written right above the token after go
            # above ours.
            k_prev = new.lx.toks[na - 1] if na > 0 else None
            k_next = new.lx.toks[nb + 1] if nb + 1 < len(new.lx.toks) else None
            hug_prev = k_prev is not None and k_prev.line == ins_first - 1
            hug_next = not hug_prev and k_next is not None and k_next.line == ins_last + 1
            if hug_next and next_tok is not None:
                nls, _, _ = _line_bounds(T, next_tok.start, next_tok.start)
                if not T[nls:next_tok.start].strip():
                    return Edit(nls, nls, ins_lines)
            if prev_tok is not None:
                _, ple, _ = _line_bounds(T, prev_tok.end, prev_tok.end)
                rest = T[prev_tok.end:ple]
                if not cnorm.strip_comments(rest, False).strip():
                    return Edit(ple, ple, ins_lines)
            if next_tok is not None:
                nls, _, _ = _line_bounds(T, next_tok.start, next_tok.start)
                if not T[nls:next_tok.start].strip():
                    return Edit(nls, nls, ins_lines)
        # Inside a line: keep the hunk's spacing around the new tokens.
        N = new.text
        s, e = new.lx.toks[na].start, new.lx.toks[nb].end
        k_next = new.lx.toks[nb + 1] if nb + 1 < len(new.lx.toks) else None
        line_start = N.rfind("\n", 0, s) + 1
        if next_tok is not None and k_next is not None and not N[line_start:s].strip() \
                and k_next.line == new.lx.toks[nb].line:
            # New words that open a line ('static' before a definition) go
            # right before the token they lead.
            gap = N[e:k_next.start]
            return Edit(next_tok.start, next_tok.start, ins + (gap if gap and not gap.strip() else " "))
        lead = _spacing(N[new.lx.toks[na - 1].end:s] if na > 0 else "")
        trail = _spacing(N[e:new.lx.toks[nb + 1].start] if nb + 1 < len(new.lx.toks) else "")
        pos = prev_tok.end if prev_tok is not None else 0
        if pos < len(T) and T[pos] in " \t\n":
            trail = ""
        if pos > 0 and T[pos - 1] in " \t\n":
            lead = ""
        return Edit(pos, pos, lead + ins + trail)

    def _kept_seams(self, ta: int, tb: int) -> str:
        """The whole-line seam and annotation statements of ours among the
        raw tokens ta..tb that a change replaces: they are not the kernel's
        to remove, so they stay (ahead of what replaces the rest)."""
        toks = self.src.lx.toks
        T = self.src.text
        kept = []
        p = ta
        while p <= tb:
            e = cnorm.dropped_statement_end(toks, p, tb + 1)
            if e > 0:
                ls, le, whole = _line_bounds(T, toks[p].start, toks[e - 1].end)
                if whole:
                    kept.append(T[ls:le])
                p = e
            else:
                p += 1
        return "".join(kept)

    def _carried_lines(self, new: Side, ls: int, le: int):
        """The whole lines the change brings, with the blank lines the hunk
        added right above and below them, comments dropped unless kept.
        Returns (text, first line, last line) in the hunk's new side."""
        N = new.text
        all_lines = N.split("\n")
        first = new.lx.line_of(ls)
        last = new.lx.line_of(le - 1)
        lines = N[ls:le]
        if not self.keep_comments:
            lines = cnorm.strip_comments(lines, False)
        while first > 0 and new.changed_lines[first - 1] and not all_lines[first - 1].strip():
            first -= 1
            lines = "\n" + lines
        while last + 1 < len(new.changed_lines) and new.changed_lines[last + 1] \
                and not all_lines[last + 1].strip():
            last += 1
            lines += "\n"
        return lines, first, last

    def _drop_blank_neighbour(self, old: Side, i1: int, i2: int, ls: int, le: int):
        """When the hunk removes a blank line right above the removed code,
        remove the target's blank line there too."""
        T = self.src.text
        if i1 >= len(old.norm):
            return ls, le
        first = old.lx.toks[old.norm[i1].src].line
        old_lines = old.text.split("\n")
        if first > 0 and old.changed_lines[first - 1] and not old_lines[first - 1].strip():
            pls = T.rfind("\n", 0, ls - 1) + 1 if ls > 0 else 0
            if ls > 0 and not T[pls:ls].strip():
                return pls, le
        return ls, le

    def apply(self, edits: list[Edit]):
        text = self.src.text
        for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
            text = text[:e.start] + e.text + text[e.end:]
        self.src = Source(text)


_DECL = re.compile(r"^\s*(?:const\s+|static\s+)*(?:struct|union|enum|unsigned|signed|int|long|"
                   r"short|char|bool|u8|u16|u32|u64|s8|s16|s32|s64|size_t|\w+_t)\b[^(]*;\s*$")


def _with_seams(seams: str, lines: str) -> str:
    """Kept seam lines placed after the declarations that open the
    replacement, as ours had them after the declarations of the block."""
    if not seams:
        return lines
    ls = lines.split("\n")
    k = 0
    while k < len(ls) and _DECL.match(ls[k]):
        k += 1
    if k and k < len(ls) and not ls[k].strip():
        k += 1
        seams += "\n"
    return "\n".join(ls[:k]) + ("\n" if k else "") + seams + "\n".join(ls[k:])


def _swallow_space(T: str, s: int, e: int) -> tuple[int, int]:
    """Widens a deletion inside a line by the blanks on one side, so that
    'a + 1 < b' less '+ 1' reads 'a < b', not 'a  < b'."""
    ls = T.rfind("\n", 0, s) + 1
    b = s
    while b > ls and T[b - 1] in " \t":
        b -= 1
    if b < s and b > ls and T[b - 1] not in " \t" and (e >= len(T) or T[e] in " \t)];,"):
        return b, e
    a = e
    while a < len(T) and T[a] in " \t":
        a += 1
    if a > e and a < len(T) and T[a] != "\n":
        return s, a
    return s, e


def _spacing(ws: str) -> str:
    if not ws:
        return ""
    return " " if "\n" in ws else ws


def nearest(src: Source, h: Hunk) -> tuple[int, float, str]:
    """The best partial match for a hunk that did not place: (0-based line,
    similarity, what differs)."""
    old, _ = sides(h)
    want = old.ntexts
    if not want:
        return -1, 0.0, "the hunk has no old side to look for"
    hay = src.ntexts
    cands = []
    fname = h.func_name()
    funcs = src.funcs()
    pool = [f for f in funcs if f.name == fname] if fname else []
    # Windows: the named function, else every place that shares the first
    # token of the hunk's changed part.
    if pool:
        for f in pool:
            lo = _norm_index_at_raw(src, f.start_tok)
            hi = _norm_index_at_raw(src, f.end_tok + 1)
            cands.append((lo, hi))
    else:
        step = max(1, len(want) // 2)
        for lo in range(0, max(1, len(hay) - len(want) + 1), step):
            cands.append((lo, min(len(hay), lo + len(want) * 2)))
    best = (-1, 0.0, "")
    for lo, hi in cands:
        sm = difflib.SequenceMatcher(None, want, hay[lo:hi], autojunk=False)
        blocks = sm.get_matching_blocks()
        r = sm.ratio() if hi - lo < 4 * len(want) else \
            2.0 * sum(b.size for b in blocks) / (len(want) * 2)
        if r > best[1]:
            why = _first_difference(sm, want, hay, lo)
            line = src.lx.toks[src.norm[min(lo + (blocks[0].b if blocks else 0),
                                            len(src.norm) - 1)].src].line
            best = (line, r, why)
    return best


def _norm_index_at_raw(src: Source, raw: int) -> int:
    for i, n in enumerate(src.norm):
        if n.src >= raw:
            return i
    return len(src.norm)


def _first_difference(sm, want, hay, lo) -> str:
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        hunk_part = " ".join(want[i1:i2][:8]) or "(nothing)"
        ours_part = " ".join(hay[lo + j1:lo + j2][:8]) or "(nothing)"
        if tag == "insert":
            return f"ours has `{ours_part}` that the hunk does not"
        if tag == "delete":
            return f"the hunk has `{hunk_part}` that ours does not"
        return f"ours has `{ours_part}` where the hunk has `{hunk_part}`"
    return ""


def trimmed(h: Hunk, lead: int, trail: int) -> Hunk:
    """The hunk with lead context lines dropped at its start and trail at its
    end (patch's fuzz)."""
    lines = h.lines[lead:len(h.lines) - trail if trail else None]
    ol = sum(1 for k, _ in lines if k in " -")
    nl = sum(1 for k, _ in lines if k in " +")
    return Hunk(h.old_start + lead, ol, h.new_start + lead, nl, h.section, lines)


_CXX_WORDS = {"new", "delete", "class", "this", "template", "typename", "private",
              "public", "protected", "namespace", "operator", "virtual", "friend",
              "mutable", "explicit", "export", "typeid", "using", "throw", "try",
              "catch", "bool", "true", "false", "nullptr", "auto", "decltype",
              "static_cast", "requires", "concept", "co_await", "char8_t"}
_CXX_OK_AS_C = {"bool", "true", "false"}


def cxx_fixups(text: str, added_spans: list[tuple[int, int]]):
    """C that C++ rejects, in the spans of text that a port added.

    Mechanical fixes are made in place: a pointer declared or assigned from a
    name that the same function declares as 'void *' gets a cast. What cannot
    be fixed is returned as (line, message) for the report.
    Returns (new text, fixed [(line, message)], problems [(line, message)])."""
    fixed = []
    problems = []
    lx = cnorm.lex(text, False)
    for s, e in added_spans:
        for t in lx.toks:
            if t.start < s or t.end > e or t.kind != "id":
                continue
            if t.text in _CXX_WORDS and t.text not in _CXX_OK_AS_C:
                problems.append((t.line, f"`{t.text}` is a C++ keyword: rename it"))
    # void * conversions: a name the enclosing function declares 'void *'
    # (a parameter or a local) initializing or assigned to a typed pointer.
    funcs = cnorm.functions(lx)
    pat = re.compile(r"(?P<lead>\b(?P<type>(?:struct|union)\s+\w+|\w+_t|u8|u16|u32|u64|char|int|long)"
                     r"\s*\*\s*(?P<name>\w+)\s*=\s*)(?P<rhs>[A-Za-z_]\w*)\s*;")
    inserts = []
    for s, e in sorted(added_spans):
        f = next((f for f in funcs if lx.toks[f.start_tok].start <= s < lx.toks[f.end_tok].end), None)
        if f is None:
            continue
        body = text[lx.toks[f.start_tok].start:lx.toks[f.end_tok].end]
        void_names = set(re.findall(r"\bvoid\s*\*\s*([A-Za-z_]\w*)\s*[,;)=]", body))
        for m in pat.finditer(text, s, e):
            if m.group("rhs") in void_names:
                inserts.append((m.start("rhs"), f"({m.group('type')} *)"))
                fixed.append((text.count("\n", 0, m.start()),
                              f"cast `{m.group('rhs')}` (void *) to {m.group('type')} *"))
    out = text
    for pos, cast in sorted(inserts, reverse=True):
        out = out[:pos] + cast + out[pos:]
    return out, fixed, problems
