#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Which kernel file each ported file mirrors, and the pristine copies of them.

    upstream.py list [--base B]        our file, its kernel file, the base
    upstream.py extract [--base B] [KPATH...]
                                       cache the pristine base files; print
                                       the cache folder

A ported file names its kernel file(s) in its header comment, one line each:

     * Upstream: lib/sbitmap.c @ v6.12        (or `// Upstream: ...`)

Only the first HEAD_LINES lines of the files git knows under aio/, blk/,
devices/ and kernel_shim/ are read (untracked files that git does not ignore
count too, so a new port is seen before it is committed).

The pristine files come from Debian's linux-source-<major.minor> package,
/usr/src/linux-source-6.12.tar.xz for v6.12. The package carries the latest
stable release of that series with Debian's patches, not the bare tag: the
version actually used is recorded with the cache and printed by `extract`.
They are cached as build/base/<base>/<kernel path>. Every marked path of the
base is taken out in one tar run (the cost is decompressing the whole
tarball, up to a minute) and a stamp records what is there, so later calls
cost nothing; asking for a path that is not cached yet, or a tarball that
changed, runs tar again. A missing tarball is installed with apt-get when
this runs as root (or with password-less sudo); a base that Debian does not
package (the v3.4 era files) cannot be extracted.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

MARKER_RE = re.compile(r"^\s*(?:\*|//)\s*Upstream:\s+(\S+)\s+@\s+(v[0-9][0-9.]*)\s*$")
AREAS = ("aio", "blk", "devices", "kernel_shim")
HEAD_LINES = 40
SRC_DIR = "/usr/src"
CACHE = os.path.join("build", "base")
STAMP = ".stamp.json"
# The kernel source packages Debian 12 carries (bookworm and its security
# and backports suites).
DEBIAN_SERIES = ("6.1", "6.12")


class BaseError(RuntimeError):
    """The pristine base cannot be had on this machine."""


@dataclass(frozen=True)
class Ported:
    ours: str  # our file, relative to the top of the tree
    upstream: str  # the kernel file it mirrors, relative to the kernel tree
    base: str  # the kernel version, e.g. 'v6.12'


# --- markers -------------------------------------------------------------------

def _tracked(top: str) -> list[str]:
    try:
        out = subprocess.run(
            ["git", "-C", top, "ls-files", "-z", "--cached", "--others", "--exclude-standard",
             "--", *AREAS],
            check=True, capture_output=True).stdout
        return sorted({p for p in out.decode("utf-8", "surrogateescape").split("\0") if p})
    except (OSError, subprocess.CalledProcessError):
        # Not a git checkout (an unpacked tarball): every file under the areas.
        found = []
        for area in AREAS:
            for d, dirs, files in os.walk(os.path.join(top, area)):
                dirs[:] = sorted(x for x in dirs if not x.startswith("."))
                found += [os.path.relpath(os.path.join(d, f), top) for f in files]
        return sorted(found)


def markers_of(path: str) -> list[tuple[str, str]]:
    """(kernel path, base) of each marker in the first HEAD_LINES lines of path."""
    out = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f):
                if n >= HEAD_LINES:
                    break
                m = MARKER_RE.match(line)
                if m:
                    out.append((m.group(1), m.group(2)))
    except (IsADirectoryError, FileNotFoundError):
        pass
    return out


def ported_files(top: str) -> list[Ported]:
    """Every marker in the tree, by our path, in the order the files give them."""
    return [Ported(rel, k, b) for rel in _tracked(top) for k, b in
            markers_of(os.path.join(top, rel))]


def _norm_ours(top: str, ours: str) -> str:
    if os.path.isabs(ours):
        ours = os.path.relpath(ours, top)
    return os.path.normpath(ours)


def ours_for(top: str, kpath: str, base: str | None = None) -> list[str]:
    """Our files that mirror kernel file kpath (at base, or at any base)."""
    kpath = os.path.normpath(kpath)
    return sorted({p.ours for p in ported_files(top)
                   if p.upstream == kpath and (base is None or p.base == base)})


def upstream_for(top: str, ours: str) -> list[Ported]:
    """The markers of one of our files (a path relative to top, or absolute)."""
    rel = _norm_ours(top, ours)
    return [Ported(rel, k, b) for k, b in markers_of(os.path.join(top, rel))]


# --- the pristine base -----------------------------------------------------------

def series(base: str) -> str:
    """'6.12' for 'v6.12'."""
    m = re.fullmatch(r"v([0-9]+\.[0-9]+)", base)
    if not m:
        raise BaseError(f"{base}: a base is a kernel series such as v6.12")
    return m.group(1)


def tarball_for(base: str) -> str:
    ver = series(base)
    return os.path.join(SRC_DIR, f"linux-source-{ver}.tar.xz")


def _install(base: str, tarball: str) -> None:
    ver = series(base)
    pkg = f"linux-source-{ver}"
    if ver not in DEBIAN_SERIES:
        raise BaseError(f"no pristine source for {base} on this machine "
                        f"(Debian ships linux-source-{' and '.join(DEBIAN_SERIES)})")
    cmd = f"apt-get update && apt-get install -y --no-install-recommends {pkg}"
    if not shutil.which("apt-get"):
        raise BaseError(f"{tarball} is missing and this is not a Debian system: "
                        f"install {pkg} (or put its tarball there) by hand")
    sudo = []
    if os.geteuid() != 0:
        if shutil.which("sudo") and subprocess.run(
                ["sudo", "-n", "true"], capture_output=True).returncode == 0:
            sudo = ["sudo", "-n"]
        else:
            raise BaseError(f"{tarball} is missing: not root and no password-less sudo: "
                            f"run as root:\n    {cmd}")
    print(f"upstream: installing {pkg} (about 150 MB) for {base}", file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", pkg]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        subprocess.run(sudo + ["apt-get", "update", "-qq"], env=env, capture_output=True)
        r = subprocess.run(install, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise BaseError(f"apt-get could not install {pkg} (no network or no Debian "
                            f"mirror?): {r.stderr.strip()[-300:]}\n  install it by hand:\n"
                            f"    {cmd}")
    if not os.path.exists(tarball):
        raise BaseError(f"{pkg} is installed but {tarball} is not there: "
                        f"apt-get install --reinstall {pkg}")


def _identity(tarball: str) -> dict:
    st = os.stat(tarball)
    return {"tarball": tarball, "size": st.st_size, "mtime": int(st.st_mtime)}


def _read_stamp(folder: str) -> dict | None:
    try:
        with open(os.path.join(folder, STAMP), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _kernel_version(makefile: str) -> str:
    v = {}
    with contextlib.suppress(OSError):
        with open(makefile, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r"(VERSION|PATCHLEVEL|SUBLEVEL|EXTRAVERSION)\s*=\s*(\S*)", line)
                if m:
                    v[m.group(1)] = m.group(2)
                if len(v) == 4:
                    break
    if "VERSION" not in v:
        return "unknown"
    return f"{v['VERSION']}.{v.get('PATCHLEVEL', '0')}.{v.get('SUBLEVEL', '0')}" + \
        v.get("EXTRAVERSION", "")


def _package_version(pkg: str) -> str | None:
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg],
                           capture_output=True, text=True)
    except OSError:
        return None
    return (r.stdout.strip() or None) if r.returncode == 0 else None


def _safe(kpath: str) -> bool:
    return (not os.path.isabs(kpath) and ".." not in kpath.split("/")
            and kpath == os.path.normpath(kpath) and kpath not in (".", STAMP))


def _extract(tarball: str, folder: str, kpaths: list[str]) -> tuple[list[str], list[str], str]:
    """One tar run for kpaths into folder: (found, missing, kernel version)."""
    prefix = os.path.basename(tarball).removesuffix(".tar.xz") + "/"
    os.makedirs(folder, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".extract-", dir=folder)
    try:
        members = [prefix + "Makefile"] + [prefix + k for k in kpaths]
        listing = os.path.join(tmp, ".members")
        with open(listing, "w", encoding="utf-8") as f:
            f.write("".join(m + "\n" for m in members))
        out = os.path.join(tmp, "tree")
        os.mkdir(out)
        print(f"upstream: extracting {len(kpaths)} files from {tarball} "
              "(the whole tarball is decompressed: up to a minute)", file=sys.stderr)
        r = subprocess.run(["tar", "-xJf", tarball, "-C", out, "--no-wildcards",
                            "--verbatim-files-from", "-T", listing],
                           capture_output=True, text=True)
        # Exit status 2 with "Not found in archive" lines only: paths the
        # kernel does not have; anything else is a real failure.
        other = [ln for ln in r.stderr.splitlines()
                 if "Not found in archive" not in ln and "Exiting with failure" not in ln]
        if r.returncode != 0 and (r.returncode != 2 or other):
            raise BaseError(f"tar -xJf {tarball} failed: {r.stderr.strip()[-500:]}")
        root = os.path.join(out, prefix)
        version = _kernel_version(os.path.join(root, "Makefile"))
        found, missing = [], []
        for k in kpaths:
            src = os.path.join(root, k)
            if os.path.isfile(src):
                dst = os.path.join(folder, k)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                os.replace(src, dst)
                found.append(k)
            else:
                missing.append(k)
        return found, missing, version
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ensure_base(top: str, base: str, kpaths: list[str] | None = None, *,
                tarball: str | None = None) -> dict[str, str]:
    """{kernel path: absolute path of its pristine copy} at base.

    Without kpaths: every kernel path our markers name at base. Paths that are
    not ours to port may be asked for too; a path the kernel tree does not
    have is left out of the result (the caller decides what that means).
    Raises BaseError when the base cannot be had.
    """
    tarball = tarball or tarball_for(base)
    if tarball == tarball_for(base) and not os.path.exists(tarball):
        _install(base, tarball)
    elif not os.path.exists(tarball):
        raise BaseError(f"{tarball}: no such file")
    marked = {p.upstream for p in ported_files(top) if p.base == base}
    asked = marked if kpaths is None else {os.path.normpath(k) for k in kpaths}
    bad = sorted(k for k in asked | marked if not _safe(k))
    if bad:
        raise BaseError(f"not a kernel path: {', '.join(bad)}")
    folder = os.path.join(os.path.abspath(top), CACHE, base)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ident = _identity(tarball)
        stamp = _read_stamp(folder)
        if stamp is None or {k: stamp.get(k) for k in ident} != ident:
            stamp = None
        have = set(stamp["files"]) if stamp else set()
        gone = set(stamp["missing"]) if stamp else set()
        want = asked | marked
        if stamp is None or not want <= have | gone or \
                not all(os.path.isfile(os.path.join(folder, k)) for k in want & have):
            # One run for everything: the marked paths, what was asked, and
            # what the cache already held (all of it, if the tarball changed).
            todo = sorted(want | have)
            found, missing, version = _extract(tarball, folder, todo)
            stamp = dict(ident, base=base, kernel=version,
                         package=_package_version(f"linux-source-{series(base)}"),
                         files=sorted(found), missing=sorted(missing))
            tmp = os.path.join(folder, STAMP + ".tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(stamp, f, indent=1)
                f.write("\n")
            os.replace(tmp, os.path.join(folder, STAMP))
        files = set(stamp["files"])
    return {k: os.path.join(folder, k) for k in sorted(asked) if k in files}


def base_info(top: str, base: str) -> dict | None:
    """What the cache of base holds (the stamp), or None before any extraction."""
    return _read_stamp(os.path.join(os.path.abspath(top), CACHE, base))


# --- command line --------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="tools/ukern base",
        description="The kernel file each ported file mirrors, and their pristine base.")
    ap.add_argument("--top", default=None, help=argparse.SUPPRESS)
    sub = ap.add_subparsers(dest="cmd")
    ls = sub.add_parser("list", help="our file, its kernel file and base, one row each")
    ls.add_argument("--base", default=None, help="only this base (e.g. v6.12)")
    ex = sub.add_parser("extract", help="cache the pristine files, print the folder")
    ex.add_argument("--base", default="v6.12", help="the base (default v6.12)")
    ex.add_argument("kpaths", nargs="*", metavar="KPATH",
                    help="kernel paths to cache besides the marked ones")
    args = ap.parse_args(argv)
    top = args.top or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

    if args.cmd in (None, "list"):
        rows = [p for p in ported_files(top)
                if getattr(args, "base", None) in (None, p.base)]
        w0 = max((len(p.ours) for p in rows), default=0)
        w1 = max((len(p.upstream) for p in rows), default=0)
        for p in rows:
            print(f"{p.ours:<{w0}}  {p.upstream:<{w1}}  {p.base}")
        return 0

    try:
        marked = {p.upstream for p in ported_files(top) if p.base == args.base}
        extra = {os.path.normpath(k) for k in args.kpaths}
        got = ensure_base(top, args.base, sorted(marked | extra))
        for k in sorted(extra - set(got)):
            print(f"upstream: {k}: not in the {args.base} tree", file=sys.stderr)
    except BaseError as e:
        print(f"upstream: {e}", file=sys.stderr)
        return 1
    info = base_info(top, args.base) or {}
    pkg = info.get("package")
    print(f"upstream: {args.base}: {len(got)} files, kernel {info.get('kernel', '?')}"
          f" ({os.path.basename(info.get('tarball', '?'))}"
          f"{', package ' + pkg if pkg else ''})", file=sys.stderr)
    print(os.path.join(os.path.abspath(top), CACHE, args.base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
