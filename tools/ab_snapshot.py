#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Copies a git checkout's working tree into a folder: `tools/ukern ab WORKTREE`.

Usage: ab_snapshot.py SRC DST

The files are those of `git ls-files -co --exclude-standard` in SRC: tracked
files as they are on disk (uncommitted changes included, deleted ones left
out) and untracked files that are not ignored. A file is copied only when its
size, mode or modification time differ from the copy's, and the time is kept,
so that ninja and ccache in DST see only what changed. Files in DST that SRC
no longer has are deleted, except under DST/build/, which holds the builds
and is kept between runs.
"""
import os
import shutil
import stat
import subprocess
import sys

KEEP = "build"


def git_z(src, *args):
    out = subprocess.run(["git", "-C", src, *args, "-z"], check=True,
                         stdout=subprocess.PIPE).stdout
    return [os.fsdecode(raw) for raw in out.split(b"\0") if raw]


def listed(src):
    """The relative paths `git ls-files -co --exclude-standard` names in src
    that are files (or links) on disk: a tracked file deleted in the working
    tree is still in the index, and may be a folder now."""
    for entry in git_z(src, "ls-files", "-s"):
        if entry.startswith("160000 "):
            sys.exit(f"ab_snapshot.py: {entry.split(chr(9), 1)[1]} is a "
                     "submodule: not supported")
    paths = set()
    for p in git_z(src, "ls-files", "-co", "--exclude-standard"):
        full = os.path.join(src, p)
        if os.path.islink(full) or os.path.isfile(full):
            paths.add(p)
    return paths


def same(s_path, s, d_path, d):
    """Whether d_path (lstat result d, or None) already matches s_path."""
    if d is None:
        return False
    if stat.S_IFMT(s.st_mode) != stat.S_IFMT(d.st_mode):
        return False
    if stat.S_ISLNK(s.st_mode):
        return os.readlink(s_path) == os.readlink(d_path)
    return (s.st_size == d.st_size and s.st_mtime_ns == d.st_mtime_ns and
            stat.S_IMODE(s.st_mode) == stat.S_IMODE(d.st_mode))


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def copy_one(src, dst, rel):
    """Copies src/rel to dst/rel unless the copy already matches; returns
    whether it copied."""
    s_path, d_path = os.path.join(src, rel), os.path.join(dst, rel)
    s = os.lstat(s_path)
    try:
        d = os.lstat(d_path)
    except FileNotFoundError:
        d = None
    if same(s_path, s, d_path, d):
        return False
    parent = os.path.dirname(d_path)
    # A file where a folder now has to be (or the reverse) goes first.
    if parent and os.path.lexists(parent) and not os.path.isdir(parent):
        os.unlink(parent)
    os.makedirs(parent or ".", exist_ok=True)
    if d is not None:
        remove(d_path)
    if stat.S_ISLNK(s.st_mode):
        os.symlink(os.readlink(s_path), d_path)
    else:
        shutil.copy2(s_path, d_path)
    return True


def prune(dst, paths):
    """Deletes what dst holds beyond paths (and their folders), build/ aside;
    returns how many files went."""
    dirs = {KEEP}
    for p in paths:
        d = os.path.dirname(p)
        while d:
            dirs.add(d)
            d = os.path.dirname(d)
    gone = 0
    for root, subdirs, files in os.walk(dst, topdown=True):
        rel = os.path.relpath(root, dst)
        rel = "" if rel == "." else rel
        if rel == KEEP:
            subdirs[:] = []
            continue
        keep = []
        for sd in subdirs:
            r = os.path.join(rel, sd)
            full = os.path.join(root, sd)
            if os.path.islink(full):
                if r not in paths:
                    os.unlink(full)
                    gone += 1
            elif r in dirs:
                keep.append(sd)
            else:
                shutil.rmtree(full)
                gone += 1
        subdirs[:] = keep
        for f in files:
            r = os.path.join(rel, f)
            if r not in paths:
                os.unlink(os.path.join(root, f))
                gone += 1
    return gone


def snapshot(src, dst):
    paths = listed(src)
    if KEEP in paths or any(p.startswith(KEEP + "/") for p in paths):
        sys.exit(f"ab_snapshot.py: {src} has files under {KEEP}/ that git "
                 "does not ignore; that folder is kept for the builds")
    os.makedirs(dst, exist_ok=True)
    gone = prune(dst, paths)
    copied = sum(copy_one(src, dst, p) for p in sorted(paths))
    return len(paths), copied, gone


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: ab_snapshot.py SRC DST")
    n, copied, gone = snapshot(argv[1], argv[2])
    print(f"{argv[2]}: {n} files, {copied} copied, {gone} deleted",
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
