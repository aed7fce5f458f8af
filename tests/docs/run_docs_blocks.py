#!/usr/bin/python3
"""Runs the shell blocks of README.md and docs/*.md against a build, so
that the docs stay true (issue 31).

Convention for fenced blocks:
  ```sh                 run with bash -e -o pipefail, each in a fresh scratch
                        directory holding `build` (a symlink to the build
                        tree) and copies of configs/ and ci/; must exit 0
                        within --timeout seconds
  ```sh no-run=REASON   not run here (a board, two machines, the setup
                        itself, ...): listed by file, line and reason
  ```text               synopses and sample output: not run
Any other shell-like fence (bash, shell, console, an unknown sh marker) is
an error, so that no block is skipped silently.

Usage: tests/docs/run_docs_blocks.py --root REPO --build BUILD_DIR
       [--scratch DIR] [--timeout 120] [--only FILE:LINE]
Exit 0 when every runnable block passed, 1 otherwise.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

FENCE = re.compile(r"^```(.*)$")
SHELL_LIKE = {"bash", "shell", "console", "zsh"}


def blocks(path):
    """(line, info, text) of every fenced block of a Markdown file."""
    out, info, start, body = [], None, 0, []
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        m = FENCE.match(line.rstrip("\n"))
        if m and info is None:
            info, start, body = m.group(1).strip(), n, []
        elif m and info is not None and not m.group(1).strip():
            out.append((start, info, "".join(body)))
            info = None
        elif info is not None:
            body.append(line)
    if info is not None:
        raise SystemExit("%s:%d: fenced block never closed" % (path, start))
    return out


def classify(info):
    """('run' | 'skip' | 'other' | 'error', reason)."""
    words = info.split()
    if not words or words[0] not in {"sh"} | SHELL_LIKE:
        return "other", ""
    if words[0] in SHELL_LIKE:
        return "error", "fence '%s': use ```sh (run) or ```sh no-run=REASON, or ```text" % words[0]
    if len(words) == 1:
        return "run", ""
    if len(words) == 2 and words[1].startswith("no-run=") and len(words[1]) > len("no-run="):
        return "skip", words[1][len("no-run="):]
    return "error", "unknown marker '%s' (expected no-run=REASON)" % " ".join(words[1:])


def scratch_for(root, build, base, name):
    d = os.path.join(base, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.symlink(os.path.abspath(build), os.path.join(d, "build"))
    for sub in ("configs", "ci"):
        shutil.copytree(os.path.join(root, sub), os.path.join(d, sub), symlinks=True)
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--scratch", default="/tmp/torq-docs-blocks")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--only", default="", help="run only the block at FILE:LINE (FILE relative to --root)")
    a = ap.parse_args()
    files = [os.path.join(a.root, "README.md")] + sorted(glob.glob(os.path.join(a.root, "docs", "*.md")))
    ran, skipped, failed, errors = 0, [], [], []
    for f in files:
        rel = os.path.relpath(f, a.root)
        for line, info, text in blocks(f):
            where = "%s:%d" % (rel, line)
            kind, reason = classify(info)
            if kind == "error":
                errors.append("%s: %s" % (where, reason))
                continue
            if kind == "other" or (a.only and where != a.only):
                continue
            if kind == "skip":
                skipped.append("%s (%s)" % (where, reason))
                continue
            d = scratch_for(a.root, a.build, a.scratch, where.replace("/", "_").replace(":", "_"))
            try:
                p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=d, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=a.timeout, start_new_session=True)
                code, out = p.returncode, p.stdout.decode("utf-8", "replace")
            except subprocess.TimeoutExpired as e:
                code, out = "timeout after %g s" % a.timeout, (e.output or b"").decode("utf-8", "replace")
            ran += 1
            if code != 0:
                failed.append("%s: exit %s\n--- block ---\n%s--- output (last 3000 chars) ---\n%s" %
                              (where, code, text, out[-3000:]))
            else:
                print("ok      %s" % where, flush=True)
                shutil.rmtree(d, ignore_errors=True)
    for s in skipped:
        print("skipped %s" % s)
    for e in errors:
        print("error   %s" % e)
    for f in failed:
        print("FAILED  %s" % f)
    print("docs blocks: %d run, %d passed, %d failed, %d skipped by name, %d malformed fences" %
          (ran, ran - len(failed), len(failed), len(skipped), len(errors)))
    if ran == 0 and not a.only:
        print("no runnable ```sh block found: the docs test would prove nothing")
        return 1
    return 1 if failed or errors else 0


if __name__ == "__main__":
    sys.exit(main())
