#!/usr/bin/env python3
"""update_readme_ops.py - rewrite README.rst's supported-operator table.

The table is generated from hpvm_rt/include/hpvm_rt/Ops.def by
`torch2hpvm-export --list-ops rst`; this script replaces the lines between
`.. BEGIN GENERATED OPERATOR TABLE` and `.. END GENERATED OPERATOR TABLE` in
README.rst with it. tests/frontend/OpsTableTest.cpp fails when they differ.

Usage: scripts/update_readme_ops.py [--check] [--tool PATH] [--readme PATH]
"""
import argparse
import os
import subprocess
import sys

BEGIN = ".. BEGIN GENERATED OPERATOR TABLE"
END = ".. END GENERATED OPERATOR TABLE"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool",
                        default=os.path.join(root, "build", "frontend",
                                             "torch2hpvm-export"),
                        help="torch2hpvm-export to ask (default: build/)")
    parser.add_argument("--readme", default=os.path.join(root, "README.rst"))
    parser.add_argument("--check", action="store_true",
                        help="only report whether the table is current")
    args = parser.parse_args()

    try:
        table = subprocess.run([args.tool, "--list-ops", "rst"], check=True,
                               capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"update_readme_ops.py: cannot run {args.tool}: {e} "
                 "(build torch2hpvm-export or give --tool)")
    with open(args.readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    try:
        begin = lines.index(BEGIN)
        end = lines.index(END, begin)
    except ValueError:
        sys.exit(f"update_readme_ops.py: {args.readme} lacks the lines "
                 f"'{BEGIN}' and '{END}' around the operator table")
    new = lines[:begin + 1] + [""] + table.rstrip("\n").split("\n") + [""] \
        + lines[end:]
    if new == lines:
        print(f"{args.readme}: operator table is up to date")
        return
    if args.check:
        sys.exit(f"{args.readme}: operator table is out of date "
                 "(run scripts/update_readme_ops.py)")
    tmp = args.readme + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(new))
    os.replace(tmp, args.readme)
    print(f"{args.readme}: operator table rewritten")


if __name__ == "__main__":
    main()
