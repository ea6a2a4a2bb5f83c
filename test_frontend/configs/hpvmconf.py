"""hpvmconf.py - read and write HPVM approximation-configuration files.

The grammar is HPVM's (reference section 4.1): a baseline-time first line,
then blocks

    +++++
    <name> <speedup> <energy> <accuracy> <accuracy loss>
    <node> <gpu|cpu> <op> <knob name> <knob id> [<op> <knob name> <id>]...
    -----

This is the tests' own small reader, independent of the runtime's parser:
it only needs the structure (lines, ops, knobs) to decide what to check, and
it is strict, so a malformed reference file is reported here with its line.
"""
import os
import re


class ConfFormatError(Exception):
    """A configuration file (or Ops.def) that does not follow its grammar."""


class OpTable:
    """The rows of Ops.def this test needs, read from the file (never a
    second hand-kept list): ops (config name <-> ops.json type, which knob
    family applies) and knobs (id -> config name, variant, precision)."""

    _KNOB = re.compile(r'^HPVM_KNOB\(\s*(\d+),\s*"(\w+)",\s*(\w+),\s*'
                       r'(\w+),\s*([\d.]+),\s*(\d+),\s*(\d+),\s*(\w+)\)')

    def __init__(self, ops_def):
        self.conf_of_json, self.applies_of_op, self.knobs = {}, {}, {}
        with open(ops_def) as f:
            text = f.read()
        for line in text.splitlines():
            m = self._KNOB.match(line)
            if m:
                kid = int(m.group(1))
                self.knobs[kid] = dict(
                    id=kid, name=m.group(2), variant=m.group(3),
                    precision=m.group(4), rate=int(m.group(6)),
                    offset=int(m.group(7)), applies=m.group(8))
                continue
            if line.startswith("HPVM_OP("):
                # Quoted columns may hold commas (RtCall format strings):
                # protect them before splitting.
                cols = [c.strip() for c in
                        re.sub(r'"[^"]*"', lambda q: q.group(0).replace(
                            ",", ";"), line[len("HPVM_OP("):]).split(",")]
                conf, jtype = cols[1].strip('"'), cols[2].strip('"')
                self.conf_of_json[jtype] = conf
                self.applies_of_op[conf] = cols[7]
        if not self.knobs or not self.conf_of_json:
            raise ConfFormatError(f"{ops_def}: no HPVM_OP/HPVM_KNOB rows "
                                  f"found")

    def knob_name(self, knob_id):
        """The configuration-file knob name of `knob_id`."""
        if knob_id not in self.knobs:
            raise ConfFormatError(f"knob id {knob_id} has no Ops.def row")
        return self.knobs[knob_id]["name"]

    def knobs_for(self, conf_op):
        """Knob ids valid for op `conf_op` (Ops.def Applies vs op Knobs:
        KnobAll knobs apply everywhere; KnobDense knobs to KnobDense and
        KnobConv ops; KnobConv knobs to KnobConv ops)."""
        op_family = self.applies_of_op[conf_op]
        ok = {"KnobAll": {"KnobAll", "KnobDense", "KnobConv"},
              "KnobDense": {"KnobDense", "KnobConv"},
              "KnobConv": {"KnobConv"}}
        return sorted(k for k, row in self.knobs.items()
                      if op_family in ok[row["applies"]])


class NodeLine:
    """One node line: name, device and its [(op, knob name, knob id)]."""

    def __init__(self, name, device, ops, line):
        self.name, self.device, self.ops, self.line = name, device, ops, line

    def op_names(self):
        return [op for op, _, _ in self.ops]


class Block:
    """One +++++ ... ----- configuration."""

    def __init__(self, name, header, nodes, line):
        self.name, self.header, self.nodes, self.line = (name, header, nodes,
                                                         line)

    def is_fp32(self):
        """True if every op of every line uses the `fp32` knob (HPVM ignores
        the id after fp32, so `fp32 1` and `fp32 11` are the same)."""
        return all(knob == "fp32" for n in self.nodes for _, knob, _ in n.ops)

    def keys(self):
        """Integer keys of the lines: 1 + ops on earlier lines (HPVM's
        idConfigMap, reference section 4.4)."""
        out, count = [], 0
        for n in self.nodes:
            out.append(count + 1)
            count += len(n.ops)
        return out


def parse(path):
    """Parses `path`; returns (baseline time, [Block]). Raises
    ConfFormatError naming path:line on anything outside the grammar."""
    with open(path) as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()

    def fail(lineno, msg):
        raise ConfFormatError(f"{path}:{lineno}: {msg}")

    if not lines:
        fail(1, "empty file")
    try:
        baseline = float(lines[0])
    except ValueError:
        fail(1, f"first line '{lines[0]}' is not a number")
    blocks, i = [], 1
    while i < len(lines):
        if lines[i] != "+++++":
            fail(i + 1, f"expected '+++++', found '{lines[i]}'")
        if i + 1 >= len(lines):
            fail(i + 2, "missing block header")
        head = lines[i + 1].split(" ")
        if len(head) != 5:
            fail(i + 2, f"header needs 5 fields, has {len(head)}")
        try:
            numbers = [float(x) for x in head[1:]]
        except ValueError:
            fail(i + 2, f"header fields 2-5 must be numbers: {lines[i + 1]}")
        block = Block(head[0], numbers, [], i + 2)
        i += 2
        while i < len(lines) and lines[i] != "-----":
            tok = lines[i].split(" ")
            if len(tok) < 5 or (len(tok) - 2) % 3:
                fail(i + 1, f"node line needs <node> <device> and op/knob/id "
                            f"triples: '{lines[i]}'")
            if tok[1] not in ("gpu", "cpu"):
                fail(i + 1, f"device '{tok[1]}' is not gpu or cpu")
            ops = []
            for k in range(2, len(tok), 3):
                try:
                    ops.append((tok[k], tok[k + 1], int(tok[k + 2])))
                except ValueError:
                    fail(i + 1, f"knob id '{tok[k + 2]}' is not an integer")
            block.nodes.append(NodeLine(tok[0], tok[1], ops, i + 1))
            i += 1
        if i >= len(lines):
            fail(i, f"block '{block.name}' has no closing '-----'")
        if not block.nodes:
            fail(block.line, f"block '{block.name}' has no node lines")
        blocks.append(block)
        i += 1
    if not blocks:
        fail(2, "no configuration block")
    return baseline, blocks


def format_block(table, name, nodes, header=(1.0, 1.0, 100.0, 0.0),
                 device="gpu"):
    """Text of one block. `nodes` is a list of (node name, [(op, knob id)]);
    knob names come from `table` (OpTable)."""
    out = ["+++++", f"{name} " + " ".join(f"{x:g}" for x in header)]
    for node, ops in nodes:
        items = " ".join(f"{op} {table.knob_name(k)} {k}" for op, k in ops)
        out.append(f"{node} {device} {items}")
    out.append("-----")
    return "\n".join(out)


def write(path, blocks, baseline=0.0):
    """Writes a file of already formatted blocks atomically (temp + rename);
    like predtuner, no newline after the last '-----'."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{baseline:g}\n" + "\n".join(blocks))
    os.replace(tmp, path)
