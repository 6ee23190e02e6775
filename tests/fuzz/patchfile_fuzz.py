#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A seeded mutation fuzz of tools/kpatch/patchfile.py's parse(): its
documented failure is PatchError, so any other exception is a finding; a
parse that succeeds must give hunks whose line counts match their headers
and whose headers read back. Stdlib only.

  patchfile_fuzz.py [--seconds S] [--runs N] [--seed K] [--corpus DIR]...
                    [--artifacts DIR] [FILE...]

FILE...: replay these inputs only. A finding is written to the artifacts
directory (default build/fuzz-crashes) and the script exits 1. A line
"patchfile: N executions in T s (R/s), 0 findings" comes every 131072
executions and at the end (also on SIGTERM or SIGINT).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import signal
import sys
import time
import traceback

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tools", "kpatch"))
import patchfile  # noqa: E402

# Lines that steer the parser into each of its branches.
TOKENS = [
    "diff --git a/lib/x.c b/lib/x.c", "diff --git a/x", "--- a/lib/x.c", "+++ b/lib/x.c",
    "--- /dev/null", "+++ /dev/null", "@@ -1,3 +1,3 @@", "@@ -0,0 +1 @@", "@@ -1 +1 @@ f(",
    "@@ -4294967296,1 +1,99999999999999999999 @@", "@@ -1,-1 +1 @@", "@@", " context", "-old",
    "+new", "\\ No newline at end of file", "new file mode 100644", "deleted file mode 100644",
    "Binary files a/x and b/x differ", "GIT binary patch", "From 0123456789abcdef Mon Sep 17 00:00:00 2001",
    "From a@b.c Mon Sep 17", "From: x <x@y>", "Subject: [PATCH] x", " folded", "---", "-- ", "",
    '"a/lib/q.c"', "a/\tb", "\r", "\x00", "\u2028", "\x0c", "\x1c",
]


def check(text: str) -> None:
    """parse(), and the properties of a successful parse."""
    try:
        patches = patchfile.parse(text)
    except patchfile.PatchError:
        return
    for p in patches:
        for f in p.files:
            for h in f.hunks:
                old, new = h.side(False), h.side(True)
                if len(old) != h.old_len or len(new) != h.new_len:
                    raise AssertionError(
                        f"hunk {h.header()} holds {len(old)} old and {len(new)} new lines")
                m = re.match(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", h.header())
                if not m:
                    raise AssertionError(f"header does not read back: {h.header()!r}")
                r = h.reversed()
                if r.side(True) != old or r.side(False) != new:
                    raise AssertionError("reversed() does not swap the sides")


def mutate(rng: random.Random, text: str, pool: list[str]) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(10)
        i = rng.randrange(len(lines) + 1)
        if op == 0 and lines:
            del lines[min(i, len(lines) - 1)]
        elif op == 1 and lines:
            j = min(i, len(lines) - 1)
            lines.insert(j, lines[j])
        elif op == 2:
            lines.insert(i, rng.choice(TOKENS))
        elif op == 3 and len(lines) > 1:
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[a], lines[b] = lines[b], lines[a]
        elif op == 4 and lines:
            j = min(i, len(lines) - 1)
            # a number in the line grows, shrinks or goes
            lines[j] = re.sub(r"\d+", lambda m: str(max(0, int(m.group()) + rng.randint(-2, 2)))
                              if rng.random() < 0.7 else rng.choice(["", "0", "-1", "99999999"]),
                              lines[j], count=1)
        elif op == 5 and lines:
            j = min(i, len(lines) - 1)
            s = lines[j]
            k = rng.randrange(len(s) + 1)
            lines[j] = s[:k] + rng.choice(TOKENS + ["@", " ", "-", "+", "\t", ",", '"']) + s[k:]
        elif op == 6 and lines:
            j = min(i, len(lines) - 1)
            s = lines[j]
            if s:
                k = rng.randrange(len(s))
                lines[j] = s[:k] + s[k + 1:]
        elif op == 7:
            del lines[i:]
        elif op == 8 and pool:
            other = rng.choice(pool).split("\n")
            a = rng.randrange(len(other) + 1)
            lines[i:i] = other[a:a + rng.randint(1, 12)]
        else:
            lines.insert(i, "".join(chr(rng.randrange(1, 0x300)) for _ in range(rng.randint(0, 8))))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=0, help="stop after N executions (0: no bound)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", action="append", default=[])
    ap.add_argument("--artifacts", default=os.path.join(TOP, "build", "fuzz-crashes"))
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()

    def finding(text: str) -> int:
        os.makedirs(a.artifacts, exist_ok=True)
        name = "patchfile-crash-" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        path = os.path.join(a.artifacts, name)
        with open(path, "w", encoding="utf-8", errors="surrogatepass", newline="") as f:
            f.write(text)
        traceback.print_exc()
        print(f"patchfile: FINDING: input written to {path}", file=sys.stderr)
        return 1

    if a.files:
        for fn in a.files:
            with open(fn, encoding="utf-8", errors="surrogateescape", newline="") as f:
                text = f.read()
            try:
                check(text)
            except Exception:  # anything but PatchError, which check() takes
                return finding(text)
        print(f"patchfile: replayed {len(a.files)} inputs, 0 findings")
        return 0

    pool = []
    for d in a.corpus or [os.path.join(TOP, "tests", "fuzz", "corpus", "patchfile")]:
        for fn in sorted(os.listdir(d)):
            with open(os.path.join(d, fn), encoding="utf-8", errors="surrogateescape",
                      newline="") as f:
                pool.append(f.read())
    if not pool:
        print("patchfile: no corpus", file=sys.stderr)
        return 2
    rng = random.Random(a.seed)
    start = time.monotonic()
    n = 0
    for text in pool:
        try:
            check(text)
        except Exception:
            return finding(text)
        n += 1
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    while not stop:
        if a.runs and n >= a.runs:
            break
        if n % 64 == 0 and time.monotonic() - start >= a.seconds:
            break
        if n % (1 << 17) == 0:
            t = time.monotonic() - start
            print(f"patchfile: {n} executions in {t:.1f} s ({n / t if t else 0:.0f}/s), "
                  "0 findings", flush=True)
        text = mutate(rng, rng.choice(pool), pool)
        try:
            check(text)
        except Exception:
            return finding(text)
        n += 1
    t = time.monotonic() - start
    print(f"patchfile: {n} executions in {t:.1f} s ({n / t if t else 0:.0f}/s), 0 findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
