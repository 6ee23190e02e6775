# SPDX-License-Identifier: GPL-2.0-only
"""C and C++ source as token streams, and the normalization that makes a ported
file comparable with its kernel base.

Every tool that relates our files to the kernel's (fidelity, port, export) reads
source through this module, so that "the same statement" means one thing
everywhere.

A token keeps its place in the text it came from (start and end offsets, line),
so a match found on normalized tokens can be turned back into an edit of the
raw text.

Normalization removes what differs between a kernel file and ours without
changing what the code does, on both sides alike:

- comments and white space, and so line wrapping (the tokenizer drops them);
- marked accesses: READ_ONCE(x) reads as x, WRITE_ONCE(x, v) as x = v
  (ours adds them where ThreadSanitizer needs a marked access), and
  WRITE_ONCE(x, x OP e) as x OP= e where the two mean the same (x ++ and
  x -- for an e of 1): a marked read-modify-write of a word that the kernel
  updates with a compound assignment;
- casts: static_cast / reinterpret_cast / const_cast<T>(e), the C form
  (T *)e and casts to scalar types such as (int)e read as e (C++ needs them
  where C converts void * silently, and its warnings where C mixes signs);
- data_race(e) reads as e (ours marks such an access with READ_ONCE or
  WRITE_ONCE, which read as plain accesses too);
- EXPORT_SYMBOL*(), MODULE_*() and module_param*() lines vanish (nothing
  is exported from a module here, and parameters are defined our way);
- 'unsigned' alone reads as 'unsigned int', 'long int' as 'long' and
  'short int' as 'short';
- enum casts: (enum tag)e reads as e (C++ converts an integer to an enum
  only through a cast, C silently);
- sanitizer annotations: statements that call uk_tsan_*() vanish, and the
  body of an if, else, for or while that holds only such annotations and one
  simple statement reads as that statement (the braces exist for the
  annotations: kernel style puts none around one statement);
- seams: a one-statement 'if (unlikely(NAME)) ...;' vanishes when NAME ends
  in _hook (a test hook) or _vNNN (an era switch such as the v6.10 form of
  sbitmap_deferred_clear()), so that a runtime variant does not hide the
  upstream statements around it;
- C++ keywords as names: where the kernel names a member or variable with a
  word C++ reserves (private, new, class, this, ...), ours spells it with a
  trailing underscore; private_ reads as private;
- nullptr reads as NULL; #include <uk/linux/x.h> as #include <linux/x.h>.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# Longest first, so that ">>=" wins over ">>" and ">".
_PUNCT = sorted("""
    >>= <<= ... -> ++ -- << >> <= >= == != && || += -= *= /= %= &= ^= |= ## ::
    { } [ ] ( ) ; , . ? : ~ ! + - * / % ^ & | = < > #
""".split(), key=len, reverse=True)
_PUNCT_RE = "|".join(re.escape(p) for p in _PUNCT)

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+|\\\n|\n)
  | (?P<lcomment>//[^\n]*)
  | (?P<bcomment>/\*.*?(?:\*/|\Z))
  | (?P<str>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*"?)
  | (?P<chr>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*'?)
  | (?P<num>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.'])*)
  | (?P<id>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<punct>""" + _PUNCT_RE + r""")
  | (?P<other>.)
    """, re.S | re.X)


@dataclass
class Tok:
    text: str
    kind: str  # id, num, str, chr, punct, other
    start: int  # offset of the first character in the text
    end: int  # offset after the last character
    line: int  # 0-based line of the first character


@dataclass
class Comment:
    start: int
    end: int
    line: int
    end_line: int


@dataclass
class Lexed:
    text: str
    toks: list[Tok]
    comments: list[Comment] = field(default_factory=list)
    line_starts: list[int] = field(default_factory=list)

    def line_of(self, offset: int) -> int:
        """0-based line holding offset."""
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo


def starts_in_comment(text: str) -> bool:
    """True when text (a piece cut out of a file, such as a hunk) begins inside
    a block comment: a comment end comes before any comment start."""
    close = text.find("*/")
    opening = text.find("/*")
    if close < 0:
        # No comment mark at all: inside a comment when every line reads as
        # a comment's continuation (' * text').
        lines = [l for l in text.split("\n") if l.strip()]
        return opening < 0 and bool(lines) and \
            all(re.match(r"\s*\*(\s|$)", l) for l in lines)
    return opening < 0 or close < opening


def lex(text: str, in_comment: bool | None = None) -> Lexed:
    """Splits text into tokens, dropping white space and comments. in_comment
    says the text starts inside a block comment; None guesses it."""
    if in_comment is None:
        in_comment = starts_in_comment(text)
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    out = Lexed(text, [], [], line_starts)
    pos = 0
    line = 0
    if in_comment:
        close = text.find("*/")
        pos = len(text) if close < 0 else close + 2
        out.comments.append(Comment(0, pos, 0, text.count("\n", 0, pos)))
        line = text.count("\n", 0, pos)
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        kind = m.lastgroup
        s, e = m.span()
        if kind == "ws":
            pass
        elif kind in ("lcomment", "bcomment"):
            out.comments.append(Comment(s, e, line, line + text.count("\n", s, e)))
        else:
            out.toks.append(Tok(m.group(), kind, s, e, line))
        line += text.count("\n", s, e)
        pos = e
    return out


def strip_comments(text: str, in_comment: bool | None = None) -> str:
    """text without its comments: a line that held only a comment goes
    entirely, a trailing comment leaves its code line (right-trimmed)."""
    lx = lex(text, in_comment)
    if not lx.comments:
        return text
    pieces = []
    pos = 0
    for c in lx.comments:
        pieces.append(text[pos:c.start])
        pieces.append("\n" * text.count("\n", c.start, c.end))
        pos = c.end
    pieces.append(text[pos:])
    before = text.split("\n")
    after = "".join(pieces).split("\n")
    kept = []
    for old, new in zip(before, after):
        if new.strip():
            kept.append(new.rstrip() if new != old else new)
        elif not old.strip():
            kept.append(new)
    return "\n".join(kept)


# --- normalization ---------------------------------------------------------

@dataclass
class NTok:
    text: str
    src: int  # index of the raw token it stands for


_CASTS = {"static_cast", "reinterpret_cast", "const_cast"}
# Casts to these scalar types are dropped too: C++ warnings (sign compare,
# narrowing) make ours write them where the kernel's C converts silently.
_SCALAR_WORDS = {
    "unsigned", "signed", "const", "char", "short", "int", "long", "bool",
    "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "size_t", "ssize_t",
    "loff_t", "gfp_t", "blk_status_t", "__poll_t", "__u16", "__u32", "__u64",
    "__s32", "__s64", "uintptr_t", "sector_t", "blk_opf_t",
}
# Words C++ reserves that C code may use as names (spelled NAME_ in ours).
_CXX_KEYWORDS = {
    "new", "delete", "private", "public", "protected", "class", "this",
    "template", "typename", "namespace", "virtual", "operator", "friend",
    "explicit", "mutable", "export", "using", "try", "catch", "throw",
    "typeid", "requires", "concept",
}
_TYPE_WORDS = {
    "struct", "union", "enum", "const", "volatile", "unsigned", "signed",
    "char", "short", "int", "long", "void", "__user", "__rcu", "__force",
    "__iomem", "__percpu",
}


def _match_paren(toks: list[Tok], i: int) -> int:
    """Index of the bracket closing the one at i, or -1."""
    opening = toks[i].text
    closing = {"(": ")", "[": "]", "{": "}", "<": ">"}[opening]
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j].text
        if t == opening:
            depth += 1
        elif t == closing:
            depth -= 1
            if depth == 0:
                return j
        elif opening == "<" and t in (";", "{", "}"):
            return -1
    return -1


def _top_comma(toks: list[Tok], lo: int, hi: int) -> int:
    """First comma at bracket depth 0 in toks[lo:hi], or -1."""
    depth = 0
    for j in range(lo, hi):
        t = toks[j].text
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        elif t == "," and depth == 0:
            return j
    return -1


def _is_pointer_cast(toks: list[Tok], i: int) -> int:
    """If toks[i] opens a C cast, '(type *)' or '(scalar type)', return the
    index of its ')' else -1. The cast must be followed by an operand."""
    j = i + 1
    words = 0
    while j < len(toks) and (toks[j].kind == "id"):
        words += 1
        j += 1
    stars = 0
    while j < len(toks) and toks[j].text == "*":
        stars += 1
        j += 1
    while j < len(toks) and toks[j].text == "const":
        j += 1
    if not words or j >= len(toks) or toks[j].text != ")":
        return -1
    if not stars and not all(t.text in _SCALAR_WORDS for t in toks[i + 1:j]):
        return -1
    if j + 1 >= len(toks):
        return -1
    nxt = toks[j + 1]
    if nxt.kind in ("id", "num", "str") or nxt.text in ("(", "&", "*", "!", "~", "-"):
        # Exclude a call like 'f(a *)' which cannot occur; and an expression
        # '(a * b)' needs a second operand after '*', which we ruled out.
        prev = toks[i - 1] if i > 0 else None
        if prev is not None and prev.kind == "id" and prev.text not in (
                "return", "case", "else", "do"):
            return -1  # 'f (T *)' is a call or a declaration, not a cast
        return j
    return -1


def _is_enum_cast(toks: list[Tok], i: int) -> int:
    """If toks[i] opens a C cast to an enum type, '(enum tag)', followed by an
    operand, return the index of its ')' else -1."""
    j = i + 3
    if j + 1 >= len(toks) or toks[i + 1].text != "enum" or toks[i + 2].kind != "id" \
            or toks[j].text != ")":
        return -1
    prev = toks[i - 1] if i > 0 else None
    if prev is not None and prev.kind == "id" and prev.text not in ("return", "case", "else"):
        return -1  # sizeof (enum x), or a call or declaration
    nxt = toks[j + 1]
    if nxt.kind in ("id", "num") or nxt.text in ("(", "!", "~"):
        return j
    return -1


_INT_WORDS = {"char", "short", "int", "long"}
# Module metadata that has no meaning here: the parameter is defined (or
# not) by other means, and a description or licence line carries no code.
_MODULE_MACRO = re.compile(r"^(MODULE_[A-Z_]+|module_param\w*|EXPORT_SYMBOL\w*)$")

_SEAM_NAME = re.compile(r"(_hook|_v[0-9]+)$")


def _seam_end(toks: list[Tok], i: int, hi: int) -> int:
    """If toks[i] starts a seam statement, 'if (unlikely(NAME)) CALL;' or
    'if (unlikely(NAME)) return CALL;' where NAME ends in _hook (a test hook)
    or _vNNN (an era switch), return the index after its ';', else -1."""
    want = ["if", "(", "unlikely", "(", None, ")", ")"]
    if i + len(want) >= hi:
        return -1
    for k, w in enumerate(want):
        t = toks[i + k]
        if w is None:
            if t.kind != "id" or not _SEAM_NAME.search(t.text):
                return -1
        elif t.text != w:
            return -1
    j = i + len(want)
    depth = 0
    while j < hi:
        t = toks[j].text
        if t in "([":
            depth += 1
        elif t in ")]":
            depth -= 1
        elif t in ("{", "}"):
            return -1
        elif t == ";" and depth == 0:
            return j + 1
        j += 1
    return -1


def dropped_statement_end(toks: list[Tok], i: int, hi: int) -> int:
    """If toks[i] starts a whole statement that normalization drops (a seam,
    a uk_tsan_*() call, module metadata), the index after it, else -1."""
    if toks[i].text == "if":
        return _seam_end(toks, i, hi)
    if _MODULE_MACRO.match(toks[i].text) and i + 1 < hi and toks[i + 1].text == "(":
        close = _match_paren(toks, i + 1)
        if 0 < close < hi - 1 and toks[close + 1].text == ";":
            return close + 2
    if toks[i].text.startswith("uk_tsan_") and i + 1 < hi and toks[i + 1].text == "(":
        close = _match_paren(toks, i + 1)
        if 0 < close < hi - 1 and toks[close + 1].text == ";":
            return close + 2
    return -1


def _annotated_body(toks: list[Tok], i: int, hi: int) -> tuple[int, int, int]:
    """If toks[i] is the '{' of an if/else/for/while body that holds
    sanitizer annotations (dropped statements) and one simple statement,
    return (start, end, close): the statement's token range and the index
    of the closing brace; else (-1, -1, -1)."""
    none = (-1, -1, -1)
    if i == 0:
        return none
    prev = toks[i - 1].text
    if prev == ")":
        depth, k = 0, i - 1
        while k >= 0:
            t = toks[k].text
            if t == ")":
                depth += 1
            elif t == "(":
                depth -= 1
                if depth == 0:
                    break
            k -= 1
        if k <= 0 or toks[k - 1].text not in ("if", "for", "while"):
            return none
    elif prev != "else":
        return none
    close = _match_paren(toks, i)
    if close < 0 or close >= hi:
        return none
    dropped, stmt = 0, None
    j = i + 1
    while j < close:
        end = dropped_statement_end(toks, j, close)
        if end > 0:
            dropped += 1
            j = end
            continue
        if stmt is not None or toks[j].text in ("if", "for", "while", "do", "switch",
                                                  "else", "{", "case", "default"):
            return none
        depth, k = 0, j
        while k < close:
            t = toks[k].text
            if t in ("{", "}"):
                return none
            if t in "([":
                depth += 1
            elif t in ")]":
                depth -= 1
            elif t == ";" and depth == 0:
                break
            k += 1
        if k >= close:
            return none
        stmt = (j, k + 1)
        j = k + 1
    if not dropped or stmt is None:
        return none
    return stmt[0], stmt[1], close


# Binary operators by C precedence level (lower binds tighter), for
# _compound_store(); '?', ':' and the assignments rank below all of them.
_BINARY_LEVEL = {
    "*": 3, "/": 3, "%": 3, "+": 4, "-": 4, "<<": 5, ">>": 5,
    "<": 6, "<=": 6, ">": 6, ">=": 6, "==": 7, "!=": 7,
    "&": 8, "^": 9, "|": 10, "&&": 11, "||": 12,
}
_COMPOUND = ("*", "/", "%", "+", "-", "<<", ">>", "&", "^", "|")


def _compound_store(lhs: list[NTok], val: list[NTok], eq: NTok) -> list[NTok]:
    """The normalized tail of WRITE_ONCE(lhs, val) after lhs: '= val', or,
    when val is 'lhs OP rest' and 'lhs OP= rest' means the same, 'OP= rest'
    ('++' and '--' for a rest of 1). The kernel updates such a word with a
    compound assignment under its lock while other CPUs read it locklessly;
    ours marks the store, and WRITE_ONCE() has no compound form."""
    n = len(lhs)
    if n == 0 or len(val) < n + 2 or \
            [t.text for t in val[:n]] != [t.text for t in lhs]:
        return [eq] + val
    op = val[n]
    rest = val[n + 1:]
    if op.text not in _COMPOUND:
        return [eq] + val
    level = _BINARY_LEVEL[op.text]
    depth = 0
    for k, t in enumerate(rest):
        if t.text in ("(", "[", "{"):
            depth += 1
        elif t.text in (")", "]", "}"):
            depth -= 1
        elif depth == 0:
            if t.text in ("?", ":", ",") or t.text.endswith("=") and \
                    t.text not in ("==", "!=", "<=", ">="):
                return [eq] + val
            # A binary operator that binds as loosely as OP would regroup;
            # a unary one (first token, or after another operator) is fine.
            unary = k == 0 or rest[k - 1].text in _BINARY_LEVEL or \
                rest[k - 1].text in ("(", "!", "~")
            if t.text in _BINARY_LEVEL and not unary and _BINARY_LEVEL[t.text] >= level:
                return [eq] + val
    if len(rest) == 1 and rest[0].text == "1" and op.text in ("+", "-"):
        return [NTok(op.text * 2, op.src)]
    return [NTok(op.text + "=", op.src)] + rest


def normalize(toks: list[Tok], drop_casts: bool = True) -> list[NTok]:
    """The normalized stream of a raw token list (see the module docstring)."""
    out: list[NTok] = []
    _norm_range(toks, 0, len(toks), out, drop_casts)
    return out


def _norm_range(toks: list[Tok], lo: int, hi: int, out: list[NTok], drop_casts: bool):
    i = lo
    while i < hi:
        t = toks[i]
        txt = t.text
        if t.kind == "id":
            if txt == "data_race" and i + 1 < hi and toks[i + 1].text == "(":
                close = _match_paren(toks, i + 1)
                if 0 < close < hi:
                    _norm_range(toks, i + 2, close, out, drop_casts)
                    i = close + 1
                    continue
            if txt == "unsigned" and (i + 1 >= hi or toks[i + 1].text not in _INT_WORDS):
                out.append(NTok("unsigned", i))
                out.append(NTok("int", i))
                i += 1
                continue
            if txt == "int" and out and out[-1].text in ("long", "short") and \
                    toks[out[-1].src].text in ("long", "short"):
                i += 1  # 'long int' reads as 'long'
                continue
            if _MODULE_MACRO.match(txt) and i + 1 < hi and toks[i + 1].text == "(":
                close = _match_paren(toks, i + 1)
                if 0 < close < hi - 1 and toks[close + 1].text == ";":
                    i = close + 2
                    continue
            if txt.startswith("EXPORT_SYMBOL") and i + 1 < hi and toks[i + 1].text == "(":
                close = _match_paren(toks, i + 1)
                if 0 < close < hi - 1 and toks[close + 1].text == ";":
                    i = close + 2
                    continue
            if txt in ("READ_ONCE", "WRITE_ONCE") and i + 1 < hi and toks[i + 1].text == "(":
                close = _match_paren(toks, i + 1)
                if 0 < close < hi:
                    if txt == "READ_ONCE":
                        _norm_range(toks, i + 2, close, out, drop_casts)
                    else:
                        comma = _top_comma(toks, i + 2, close)
                        if comma < 0:
                            _norm_range(toks, i + 2, close, out, drop_casts)
                        else:
                            lhs: list[NTok] = []
                            val: list[NTok] = []
                            _norm_range(toks, i + 2, comma, lhs, drop_casts)
                            _norm_range(toks, comma + 1, close, val, drop_casts)
                            out.extend(lhs)
                            out.extend(_compound_store(lhs, val, NTok("=", comma)))
                    i = close + 1
                    continue
            if txt == "if" and _seam_end(toks, i, hi) > 0:
                i = _seam_end(toks, i, hi)
                continue
            if txt.startswith("uk_tsan_") and i + 1 < hi and toks[i + 1].text == "(":
                close = _match_paren(toks, i + 1)
                if 0 < close < hi:
                    i = close + 1
                    if i < hi and toks[i].text == ";":
                        i += 1
                    continue
            if drop_casts and txt in _CASTS and i + 1 < hi and toks[i + 1].text == "<":
                gt = _match_paren(toks, i + 1)
                if 0 < gt < hi - 1 and toks[gt + 1].text == "(":
                    close = _match_paren(toks, gt + 1)
                    if 0 < close < hi:
                        _norm_range(toks, gt + 2, close, out, drop_casts)
                        i = close + 1
                        continue
            if txt == "nullptr":
                out.append(NTok("NULL", i))
                i += 1
                continue
            if txt[-1] == "_" and txt[:-1] in _CXX_KEYWORDS:
                out.append(NTok(txt[:-1], i))
                i += 1
                continue
        elif txt == "#" and i + 1 < hi and toks[i + 1].text == "include":
            # '#include <uk/linux/x.h>' reads as '#include <linux/x.h>'.
            out.append(NTok("#", i))
            out.append(NTok("include", i + 1))
            j = i + 2
            if j + 2 < hi and toks[j].text == "<" and toks[j + 1].text == "uk" \
                    and toks[j + 2].text == "/":
                out.append(NTok("<", j))
                j += 3
            i = j
            continue
        elif txt == "{":
            start, end, close = _annotated_body(toks, i, hi)
            if close > 0:
                _norm_range(toks, start, end, out, drop_casts)
                i = close + 1
                continue
        elif txt == "(" and drop_casts:
            close = _is_pointer_cast(toks, i) if i + 1 < hi else -1
            if close < 0 and i + 4 < hi:
                close = _is_enum_cast(toks, i)
            if 0 < close < hi:
                i = close + 1
                continue
        out.append(NTok(txt, i))
        i += 1


def norm_texts(ntoks: list[NTok]) -> list[str]:
    return [n.text for n in ntoks]


def normalized_text(text: str, in_comment: bool | None = False) -> list[str]:
    """Convenience: the normalized token texts of a piece of source."""
    return norm_texts(normalize(lex(text, in_comment).toks))


# --- functions ---------------------------------------------------------------

_NOT_FUNCS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else",
              "__attribute__", "__typeof__", "typeof", "defined"}


@dataclass
class Func:
    name: str
    start_tok: int  # first raw token of the definition (its return type)
    body_open: int  # raw index of '{'
    end_tok: int  # raw index of the closing '}'
    line: int  # 0-based line of the name
    end_line: int


def functions(lx: Lexed) -> list[Func]:
    """Function definitions at file scope (also inside extern "C" and
    namespace blocks): a name, a parenthesized parameter list and a body.
    SYSCALL_DEFINEn(name, ...) defines sys_name; COMPAT_SYSCALL_DEFINEn
    defines compat_sys_name."""
    toks = lx.toks
    funcs: list[Func] = []
    i = 0
    n = len(toks)
    stmt_start = 0
    while i < n:
        t = toks[i]
        if t.text == "#":
            # Skip a preprocessor line (with continuations).
            ln = t.line
            j = i + 1
            while j < n and toks[j].line == ln:
                j += 1
            # A continued directive spans lines: follow backslashes.
            while j < n and lx.text[lx.line_starts[ln]:].split("\n", 1)[0].rstrip().endswith("\\"):
                ln += 1
                while j < n and toks[j].line == ln:
                    j += 1
                if ln + 1 >= len(lx.line_starts):
                    break
            i = j
            stmt_start = i
            continue
        if t.text in (";", "}"):
            i += 1
            stmt_start = i
            continue
        if t.text == "{":
            # A brace at file scope that is not a function body: an
            # initializer, a struct, an extern "C" or namespace block.
            prev = toks[i - 1] if i > 0 else None
            if prev is not None and (prev.kind == "str" or
                                     (i >= 2 and toks[i - 2].text == "namespace")
                                     or prev.text == "namespace"):
                i += 1
                stmt_start = i
                continue
            close = _match_paren(toks, i)
            i = (close + 1) if close > 0 else n
            stmt_start = i
            continue
        if t.kind == "id" and i + 1 < n and toks[i + 1].text == "(" and t.text not in _NOT_FUNCS:
            close = _match_paren(toks, i + 1)
            if close < 0:
                i += 1
                continue
            j = close + 1
            # Attributes and qualifiers between ')' and '{'.
            while j < n and toks[j].kind == "id" and toks[j].text not in _NOT_FUNCS:
                j += 1
                if j < n and toks[j].text == "(":
                    c2 = _match_paren(toks, j)
                    j = c2 + 1 if c2 > 0 else j + 1
            if j < n and toks[j].text == "{":
                name = t.text
                m = re.match(r"(COMPAT_)?SYSCALL_DEFINE\d$", name)
                if m and toks[i + 2].kind == "id":
                    name = ("compat_sys_" if m.group(1) else "sys_") + toks[i + 2].text
                body_close = _match_paren(toks, j)
                if body_close < 0:
                    break
                funcs.append(Func(name, stmt_start, j, body_close, t.line, toks[body_close].line))
                i = body_close + 1
                stmt_start = i
                continue
            i = close + 1
            continue
        i += 1
    return funcs
