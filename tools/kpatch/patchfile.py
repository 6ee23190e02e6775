# SPDX-License-Identifier: GPL-2.0-only
"""Reading and writing kernel-form patches: git format-patch output, mbox files
holding several of them, and plain unified diffs.

A parse either returns every patch whole or raises PatchError with the line
that made no sense; nothing is half-read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# Top-level folders of a kernel tree: a path in a plain diff loses leading
# components until it starts with one of these.
KERNEL_TOP = {
    "arch", "block", "certs", "crypto", "Documentation", "drivers", "fs",
    "include", "init", "io_uring", "ipc", "kernel", "lib", "LICENSES", "mm",
    "net", "rust", "samples", "scripts", "security", "sound", "tools", "usr",
    "virt",
}


class PatchError(Exception):
    pass


@dataclass
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str
    lines: list[tuple[str, str]]  # (' ' | '-' | '+', text without the mark)

    def side(self, new: bool) -> list[str]:
        keep = " +" if new else " -"
        return [t for k, t in self.lines if k in keep]

    def old_text(self) -> str:
        return "".join(t + "\n" for t in self.side(False))

    def new_text(self) -> str:
        return "".join(t + "\n" for t in self.side(True))

    def reversed(self) -> "Hunk":
        flip = {" ": " ", "-": "+", "+": "-"}
        return Hunk(self.new_start, self.new_len, self.old_start, self.old_len,
                    self.section, [(flip[k], t) for k, t in self.lines])

    def header(self) -> str:
        sec = f" {self.section}" if self.section else ""
        return (f"@@ -{_range(self.old_start, self.old_len)} "
                f"+{_range(self.new_start, self.new_len)} @@{sec}")

    def func_name(self) -> str | None:
        """The function git named in the hunk header, if any."""
        ex = re.match(r"\s*(?:EXPORT_SYMBOL\w*|module_\w+|late_initcall|subsys_initcall)\((\w+)",
                      self.section)
        if ex:
            return ex.group(1)  # the hunk follows that function
        m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", self.section)
        if m:
            mm = re.match(r"(COMPAT_)?SYSCALL_DEFINE\d\((\w+)", self.section.strip())
            if mm:
                return ("compat_sys_" if mm.group(1) else "sys_") + mm.group(2)
            return m.group(1)
        return None

    def lead_context(self) -> int:
        n = 0
        for k, _ in self.lines:
            if k != " ":
                break
            n += 1
        return n

    def trail_context(self) -> int:
        n = 0
        for k, _ in reversed(self.lines):
            if k != " ":
                break
            n += 1
        return n


def _range(start: int, length: int) -> str:
    return str(start) if length == 1 else f"{start},{length}"


@dataclass
class FileDiff:
    old_path: str | None  # kernel path, None for a new file
    new_path: str | None  # None for a deleted file
    hunks: list[Hunk] = field(default_factory=list)
    binary: bool = False

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or "?"

    def reversed(self) -> "FileDiff":
        return FileDiff(self.new_path, self.old_path,
                        [h.reversed() for h in self.hunks], self.binary)


@dataclass
class Patch:
    subject: str = ""
    author: str = ""
    date: str = ""
    message: str = ""
    commit: str = ""
    files: list[FileDiff] = field(default_factory=list)

    def reversed(self) -> "Patch":
        return Patch(self.subject, self.author, self.date, self.message, self.commit,
                     [f.reversed() for f in reversed(self.files)])


_MBOX_FROM = re.compile(r"^From [0-9a-f]{7,40} |^From \S+@\S+ |^From \S+ +[A-Z][a-z]{2} [A-Z][a-z]{2} ")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")


def kernel_path(raw: str) -> str | None:
    """A diff header's path as a kernel path ('a/lib/x.c' -> 'lib/x.c')."""
    raw = raw.split("\t")[0].strip()
    if raw == "/dev/null":
        return None
    if raw.startswith('"') and raw.endswith('"'):
        raw = raw[1:-1]
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    for i in range(len(parts)):
        if parts[i] in KERNEL_TOP and i + 1 < len(parts):
            return "/".join(parts[i:])
    # Not under a known folder: drop a git prefix and keep the rest.
    if len(parts) > 1 and parts[0] in ("a", "b"):
        parts = parts[1:]
    return "/".join(parts)


def parse(text: str) -> list[Patch]:
    """Every patch in text. Raises PatchError on anything that is not a
    well-formed patch (no diff at all, a truncated hunk, a bad header)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    starts = [i for i, l in enumerate(lines) if _MBOX_FROM.match(l)]
    if not starts or starts[0] != 0:
        # A plain diff, or a single mail without the mbox line.
        starts = [0] + starts
    patches = []
    for n, s in enumerate(starts):
        e = starts[n + 1] if n + 1 < len(starts) else len(lines)
        p = _parse_one(lines[s:e], s)
        if p.files:
            patches.append(p)
    if not patches:
        raise PatchError("not a patch: no file diff ('--- a/...', '+++ b/...', '@@ ... @@') found")
    return patches


def _parse_one(lines: list[str], base: int) -> Patch:
    p = Patch()
    i = 0
    if lines and _MBOX_FROM.match(lines[0]):
        p.commit = lines[0].split()[1]
        i = 1
    # Mail headers, when the text starts with them.
    if i < len(lines) and re.match(r"^[A-Za-z-]+: ", lines[i]):
        hdr: dict[str, str] = {}
        key = None
        while i < len(lines) and lines[i] != "":
            l = lines[i]
            if l[:1] in (" ", "\t") and key:
                hdr[key] += " " + l.strip()
            else:
                m = re.match(r"^([A-Za-z-]+): ?(.*)$", l)
                if not m:
                    break
                key = m.group(1).lower()
                hdr[key] = m.group(2)
            i += 1
        p.subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", hdr.get("subject", ""))
        p.author = hdr.get("from", "")
        p.date = hdr.get("date", "")
    body = []
    while i < len(lines) and not _starts_diff(lines, i):
        body.append(lines[i])
        i += 1
    msg = "\n".join(body)
    p.message = msg.split("\n---\n")[0].strip("\n") if "\n---\n" in "\n" + msg + "\n" else msg.strip("\n")
    cur: FileDiff | None = None
    while i < len(lines):
        l = lines[i]
        if l.startswith("diff --git "):
            m = re.match(r"^diff --git (\S+) (\S+)$", l)
            if not m:
                raise PatchError(f"line {base + i + 1}: cannot read '{l}'")
            cur = FileDiff(kernel_path(m.group(1)), kernel_path(m.group(2)))
            p.files.append(cur)
            i += 1
            continue
        if l.startswith("new file mode") and cur is not None:
            cur.old_path = None
        elif l.startswith("deleted file mode") and cur is not None:
            cur.new_path = None
        elif l.startswith("Binary files ") or l.startswith("GIT binary patch"):
            if cur is None:
                raise PatchError(f"line {base + i + 1}: binary diff outside a file")
            cur.binary = True
        elif l.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = kernel_path(l[4:]), kernel_path(lines[i + 1][4:])
            if cur is None or cur.hunks:
                cur = FileDiff(old, new)
                p.files.append(cur)
            else:
                cur.old_path, cur.new_path = old, new
            i += 2
            continue
        elif l.startswith("@@"):
            if cur is None:
                raise PatchError(f"line {base + i + 1}: hunk before any file header")
            i = _parse_hunk(lines, i, base, cur)
            continue
        i += 1
    return p


def _starts_diff(lines: list[str], i: int) -> bool:
    l = lines[i]
    if l.startswith("diff --git "):
        return True
    return l.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ") \
        and i + 2 < len(lines) and lines[i + 2].startswith("@@")


def _parse_hunk(lines: list[str], i: int, base: int, cur: FileDiff) -> int:
    m = _HUNK.match(lines[i])
    if not m:
        raise PatchError(f"line {base + i + 1}: bad hunk header '{lines[i]}'")
    os_, ol = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
    ns, nl = int(m.group(3)), int(m.group(4) if m.group(4) is not None else 1)
    h = Hunk(os_, ol, ns, nl, m.group(5).strip(), [])
    start = i
    i += 1
    o = n = 0
    while o < ol or n < nl:
        if i >= len(lines):
            raise PatchError(f"line {base + start + 1}: truncated hunk in {cur.path}: "
                             f"{h.header()} ends after {o} of {ol} old and {n} of {nl} new lines")
        l = lines[i]
        k, t = (l[:1], l[1:]) if l else (" ", "")
        if k == "\\":
            i += 1
            continue
        if k not in " -+":
            raise PatchError(f"line {base + i + 1}: truncated hunk in {cur.path}: "
                             f"{h.header()} ends after {o} of {ol} old and {n} of {nl} new lines")
        if k in " -":
            o += 1
        if k in " +":
            n += 1
        if o > ol or n > nl:
            raise PatchError(f"line {base + i + 1}: hunk in {cur.path} is longer than "
                             f"its header {h.header()} says")
        h.lines.append((k, t))
        i += 1
    while i < len(lines) and lines[i].startswith("\\"):
        i += 1
    cur.hunks.append(h)
    return i


def unified(kpath: str, old: str, new: str, context: int = 3) -> str:
    """A git-style diff of one kernel file, '' when the texts are equal."""
    import difflib
    if old == new:
        return ""
    ol = old.splitlines(keepends=True)
    nl = new.splitlines(keepends=True)
    out = [f"diff --git a/{kpath} b/{kpath}\n"]
    body = list(difflib.unified_diff(ol, nl, f"a/{kpath}", f"b/{kpath}", n=context))
    for line in body:
        if line.startswith("@@"):
            line = _with_section(line, ol)
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _with_section(header: str, old_lines: list[str]) -> str:
    """Adds git's function context to a hunk header: the nearest line above
    the hunk that starts with a letter, '_' or '$'."""
    m = _HUNK.match(header.rstrip("\n"))
    if not m:
        return header
    start = int(m.group(1))
    for j in range(start - 2, -1, -1):
        l = old_lines[j] if j < len(old_lines) else ""
        if l[:1].isalpha() or l[:1] in ("_", "$"):
            return header.rstrip("\n") + " " + l.rstrip("\n")[:80].rstrip() + "\n"
    return header
