#!/usr/bin/env python3
"""regenerate_models.py - regenerate every model listed in a manifest.

The manifest is a JSON list of entries:

  [{"model": "lenet.onnx", "tune": "data/tune_input.bin",
    "test": "data/test_input.bin", "out": "out/lenet",
    "args": ["--batch-size", "500", "--config", "lenet_confs.txt"]}, ...]

Relative paths are relative to the manifest's directory. Each entry runs
`torch2hpvm-export MODEL --tune TUNE --test TEST -o OUT ARGS...`, which
regenerates an existing OUT in place: hand edits to its text sources
(hpvm_c.cpp, CMakeLists.txt, ops.json) are merged into the new generation,
and an OUT that is up to date is left alone. Add "force": true to an entry
to overwrite edits instead (each edited file is kept as FILE.orig).

With --check, each entry runs with --check instead: nothing is written, and
the table says which outputs are up to date, would change or would
conflict.

Failures do not stop the run; a summary table follows (status "ok", "up to
date", "CONFLICT": a merge left conflict markers to resolve, or "FAILED"),
and the exit status is 1 if any entry failed or conflicted (with --check: if
any would conflict), 2 for a bad manifest.

Usage: scripts/regenerate_models.py MANIFEST [--tool PATH] [-j N] [-v]
                                             [--check]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

REQUIRED = ("model", "tune", "test", "out")


def find_tool(explicit):
    if explicit:
        return explicit
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    built = os.path.join(root, "build", "frontend", "torch2hpvm-export")
    if os.access(built, os.X_OK):
        return built
    return shutil.which("torch2hpvm-export") or "torch2hpvm-export"


def load_manifest(path):
    try:
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"regenerate_models.py: cannot read manifest "
                         f"{path}: {e}")
    if not isinstance(entries, list):
        raise SystemExit(f"regenerate_models.py: {path}: the manifest must "
                         "be a JSON list of entries")
    base = os.path.dirname(os.path.abspath(path))
    jobs = []
    for i, e in enumerate(entries):
        where = f"{path}: entry {i}"
        if not isinstance(e, dict):
            raise SystemExit(f"regenerate_models.py: {where} is not an "
                             "object")
        missing = [k for k in REQUIRED if k not in e]
        if missing:
            raise SystemExit(f"regenerate_models.py: {where} lacks "
                             f"{', '.join(missing)}")
        unknown = sorted(set(e) - set(REQUIRED) - {"args", "force"})
        if unknown:
            raise SystemExit(f"regenerate_models.py: {where} has unknown "
                             f"keys {', '.join(unknown)}")
        args = e.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str)
                                                 for a in args):
            raise SystemExit(f"regenerate_models.py: {where}: args must be "
                             "a list of strings")
        def rel(p):
            return os.path.normpath(os.path.join(base, p))
        jobs.append({"model": rel(e["model"]), "tune": rel(e["tune"]),
                     "test": rel(e["test"]), "out": rel(e["out"]),
                     "args": args, "force": e.get("force", False),
                     "name": e["model"], "shown_out": e["out"]})
    return jobs


# torch2hpvm-export's exit statuses (README.rst, "Editing generated files").
EXIT_CONFLICT = 3
EXIT_WOULD_CHANGE = 4


def status_text(code, output, check):
    """The summary table's status of one entry."""
    if check:
        return {0: "up to date", EXIT_WOULD_CHANGE: "would change",
                EXIT_CONFLICT: "would conflict"}.get(code, f"FAILED ({code})")
    if code == 0:
        return "up to date" if "is up to date" in output else "ok"
    if code == EXIT_CONFLICT:
        return "CONFLICT"
    return f"FAILED ({code})"


def run(tool, job, verbose, check):
    cmd = [tool, job["model"], "--tune", job["tune"], "--test", job["test"],
           "-o", job["out"]] + (["--force"] if job["force"] else []) \
        + (["--check"] if check else []) + job["args"]
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    seconds = time.monotonic() - start
    quiet = proc.returncode == 0 or (check and
                                     proc.returncode == EXIT_WOULD_CHANGE)
    if verbose or not quiet:
        sys.stdout.write(f"==> {job['model']}\n{proc.stdout}")
    return proc.returncode, seconds, proc.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest")
    parser.add_argument("--tool", help="torch2hpvm-export to run")
    parser.add_argument("-j", "--jobs", type=int, default=1,
                        help="entries to regenerate at once (default 1)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show every export's output")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; say which outputs would change "
                        "or conflict")
    args = parser.parse_args()
    try:
        jobs = load_manifest(args.manifest)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    tool = find_tool(args.tool)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(
            lambda j: run(tool, j, args.verbose, args.check), jobs))

    rows = [("model", "status", "seconds", "output")]
    failed = 0
    for job, (code, seconds, output) in zip(jobs, results):
        status = status_text(code, output, args.check)
        failed += code not in ((0, EXIT_WOULD_CHANGE) if args.check else (0,))
        rows.append((job["name"], status, f"{seconds:.1f}",
                     job["shown_out"]))
    widths = [max(len(r[c]) for r in rows) for c in range(4)]
    for i, r in enumerate(rows):
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    if args.check:
        print(f"{len(jobs)} checked" + (f", {failed} would conflict or "
                                        "failed" if failed else ""))
    else:
        print(f"{len(jobs) - failed} of {len(jobs)} regenerated"
              + (f", {failed} failed or conflicted" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
