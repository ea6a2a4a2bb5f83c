#!/usr/bin/env python3
"""regenerate_models.py - regenerate every model listed in a manifest.

The manifest is a JSON list of entries:

  [{"model": "lenet.onnx", "tune": "data/tune_input.bin",
    "test": "data/test_input.bin", "out": "out/lenet",
    "args": ["--batch-size", "500", "--config", "lenet_confs.txt"]}, ...]

Relative paths are relative to the manifest's directory. Each entry runs
`torch2hpvm-export MODEL --tune TUNE --test TEST -o OUT --force ARGS...`
(add "force": false to an entry to refuse an existing OUT instead). Failures
do not stop the run; a summary table follows, and the exit status is 1 if any
entry failed (2 for a bad manifest).

Usage: scripts/regenerate_models.py MANIFEST [--tool PATH] [-j N] [-v]
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
                     "args": args, "force": e.get("force", True),
                     "name": e["model"], "shown_out": e["out"]})
    return jobs


def run(tool, job, verbose):
    cmd = [tool, job["model"], "--tune", job["tune"], "--test", job["test"],
           "-o", job["out"]] + (["--force"] if job["force"] else []) \
        + job["args"]
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    seconds = time.monotonic() - start
    if verbose or proc.returncode != 0:
        sys.stdout.write(f"==> {job['model']}\n{proc.stdout}")
    last = proc.stdout.strip().splitlines()
    reason = last[-1] if proc.returncode != 0 and last else ""
    return proc.returncode, seconds, reason


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest")
    parser.add_argument("--tool", help="torch2hpvm-export to run")
    parser.add_argument("-j", "--jobs", type=int, default=1,
                        help="entries to regenerate at once (default 1)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show every export's output")
    args = parser.parse_args()
    try:
        jobs = load_manifest(args.manifest)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    tool = find_tool(args.tool)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda j: run(tool, j, args.verbose), jobs))

    rows = [("model", "status", "seconds", "output")]
    failed = 0
    for job, (code, seconds, reason) in zip(jobs, results):
        status = "ok" if code == 0 else f"FAILED ({code})"
        failed += code != 0
        rows.append((job["name"], status, f"{seconds:.1f}",
                     job["shown_out"]))
    widths = [max(len(r[c]) for r in rows) for c in range(4)]
    for i, r in enumerate(rows):
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print(f"{len(jobs) - failed} of {len(jobs)} regenerated"
          + (f", {failed} failed" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
