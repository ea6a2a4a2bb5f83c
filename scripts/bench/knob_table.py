#!/usr/bin/python3
"""knob_table.py - summarises knob_e2e.sh output as a Markdown table.

Usage: scripts/bench/knob_e2e.sh [...] | scripts/bench/knob_table.py

One row per layer, one column per knob family (algorithm, axis, rate,
precision); each cell is the speedup over the exact knob 11, as
"worst-best" over the family's offsets (one number when they agree to two
decimals). Reads the "ID: T ms(S x)" fields knob_e2e prints.
"""
import re
import sys

FAMILIES = [
    ("fp16", [12]),
    ("row 50%", [123, 124]), ("col 50%", [121, 122]),
    ("row 33%", [128, 129, 130]), ("col 33%", [125, 126, 127]),
    ("row 25%", [135, 136, 137, 138]), ("col 25%", [131, 132, 133, 134]),
    ("row 50% h", [153, 154]), ("col 50% h", [151, 152]),
    ("row 33% h", [158, 159, 160]), ("col 33% h", [155, 156, 157]),
    ("row 25% h", [165, 166, 167, 168]), ("col 25% h", [161, 162, 163, 164]),
    ("samp 50%", [231, 232]), ("samp 33%", [233, 234, 235]),
    ("samp 25%", [236, 237, 238, 239]),
    ("samp 50% h", [261, 262]), ("samp 33% h", [263, 264, 265]),
    ("samp 25% h", [266, 267, 268, 269]),
]
FIELD = re.compile(r"(\d+):\s*([\d.]+)ms\(([\d.]+)x\)")


def main():
    rows = []
    for line in sys.stdin:
        fields = FIELD.findall(line)
        if not fields:
            continue
        name = line[:line.index(fields[0][0] + ":")].strip()
        speed = {int(k): float(s) for k, _, s in fields}
        exact = next(float(t) for k, t, _ in fields if k == "11")
        rows.append((name, exact, speed))
    if not rows:
        sys.exit("knob_table.py: no knob_e2e lines on standard input")
    fams = [(n, ids) for n, ids in FAMILIES
            if any(i in s for _, _, s in rows for i in ids)]
    print("| layer | exact ms | " + " | ".join(n for n, _ in fams) + " |")
    print("|---|---|" + "---|" * len(fams))
    for name, exact, speed in rows:
        cells = []
        for _, ids in fams:
            vals = [speed[i] for i in ids if i in speed]
            if not vals:
                cells.append("")
            elif f"{min(vals):.2f}" == f"{max(vals):.2f}":
                cells.append(f"{min(vals):.2f}")
            else:
                cells.append(f"{min(vals):.2f}-{max(vals):.2f}")
        print(f"| {name} | {exact:.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
