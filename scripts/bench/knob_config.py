#!/usr/bin/python3
"""Writes an HPVM configuration file for an exported program (its ops.json)
with one block per knob id given: that knob on the first op of every fused
node that accepts it, the exact fp32 knob elsewhere. For whole-network knob
benchmarks ("every conv and dense layer int8").

    knob_config.py OUT/ops.json 311 301 -o all_knobs.txt
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

OPS_DEF = os.path.join(ROOT, "hpvm_rt", "include", "hpvm_rt", "Ops.def")


def op_conf_names(ops_def):
    """ops.json op type -> configuration op name, from Ops.def's HPVM_OP
    rows (JsonType -> ConfName)."""
    rows = re.findall(r'^HPVM_OP\(\w+,\s*"(\w+)",\s*"(\w+)"', ops_def, re.M)
    return {json_type: conf for conf, json_type in rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ops_json")
    ap.add_argument("knobs", nargs="+", type=int)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    ops = json.load(open(args.ops_json))
    ops_def = open(OPS_DEF).read()
    conf_name = op_conf_names(ops_def)
    rows = re.findall(r'^HPVM_KNOB\((\d+),\s*"(\w+)",\s*\w+,\s*(\w+)',
                      ops_def, re.M)
    names = {i: name for i, name, _ in rows}
    # The node's other ops: exact fp16 next to fp16 knobs (as the tuner).
    companion = {i: "12" if prec == "FP16" else "11" for i, _, prec in rows}
    out = ["0"]
    for n, knob in enumerate(args.knobs, 1):
        if str(knob) not in names:
            sys.exit(f"{args.ops_json}: no knob {knob}")
        out += ["+++++", f"conf{n} 1 1 0 0"]
        for node in ops["fused_nodes"]:
            words = [str(node["id"]), "cpu"]
            for i, op in enumerate(node["ops"]):
                kind = conf_name[op.rsplit("_", 1)[0]]
                use = i == 0 and str(knob) in ops["op_knobs"][op]
                other = companion[str(knob)]
                words += [kind, names[str(knob) if use else other],
                          str(knob) if use else other]
            out.append(" ".join(words))
        out.append("-----")
    tmp = args.output + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, args.output)


if __name__ == "__main__":
    main()
