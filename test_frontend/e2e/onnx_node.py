"""onnx_node.py - ONNX's backend node cases, end to end, against a record.

Every case of ONNX's own conformance suite whose operators all have an
HPVM_ONNX row in Ops.def (read from the table, not listed here) is exported:
its first input becomes a one-set HPVM dataset (labels 0), its other inputs
(weights, in a network) become initializers holding the case's values,
torch2hpvm-export generates and builds it, and the binary's --output is
compared with the case's output_0.pb (harness.TOLERANCE). The outcome is one of
    pass                 exported, built, ran, matched
    rejected: <reason>   the exporter refused the model (exit 1); its message
    fail: <reason>       anything else (a crash, a build failure, a mismatch)
and must equal the line recorded in onnx_node/expected.txt, so that both a
regression and an improvement show. `update` rewrites the record.
"""
import os
import re

import numpy as np

from . import harness as H

HEADER = """\
# expected.txt - recorded outcome of every ONNX backend node case whose
# operators are all in Ops.def's HPVM_ONNX rows, with the inputs after the
# first frozen into initializers (see e2e/onnx_node.py).
# One line per case: "<case> pass" or "<case> rejected: <exporter's reason>"
# ("fail: ..." would be a known bug). Rewrite with
#   test_frontend/run_e2e.py onnx-node update --exporter EXE --workdir DIR
# and review the diff: every changed line is a behaviour change.
"""


def table_ops(ops_def):
    """ONNX op types with an HPVM_ONNX row in Ops.def."""
    ops = set()
    row = re.compile(r'^HPVM_ONNX\(\s*"(\w+)"')
    with open(ops_def) as f:
        for line in f:
            m = row.match(line)
            if m:
                ops.add(m.group(1))
    if not ops:
        raise H.TestFailure(f"{ops_def}: no HPVM_ONNX rows found")
    return ops


def select_cases(node_dir, ops):
    """Case names (sorted) whose every node is a default-domain op in ops."""
    import onnx
    chosen = []
    for case in sorted(os.listdir(node_dir)):
        path = os.path.join(node_dir, case, "model.onnx")
        if not os.path.isfile(path):
            continue
        graph = onnx.load(path, load_external_data=False).graph
        kinds = {(n.domain or "ai.onnx", n.op_type) for n in graph.node}
        if kinds and all(d in ("ai.onnx", "") and t in ops
                         for d, t in kinds):
            chosen.append(case)
    return chosen


def read_expected(path):
    """{case: outcome} from expected.txt; TestFailure on a malformed line."""
    out = {}
    if not os.path.isfile(path):
        return out
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            case, _, outcome = line.partition(" ")
            if not outcome or case in out:
                raise H.TestFailure(f"{path}:{n}: expected '<case> <outcome>'"
                                    f" once per case, got '{line}'")
            out[case] = outcome
    return out


def write_expected(path, outcomes):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(HEADER)
        for case in sorted(outcomes):
            f.write(f"{case} {outcomes[case]}\n")
    os.replace(tmp, path)


def _one_line(text, work):
    """The exporter's message as one stable line: no tool prefix, no
    machine-specific directory, lines joined with ' | '."""
    lines = []
    for line in text.splitlines():
        line = line.replace(work + os.sep, "").strip()
        line = re.sub(r"^torch2hpvm-export: error: ", "", line)
        if line:
            lines.append(re.sub(r"\s+", " ", line))
    return " | ".join(lines) or "(no message)"


def freeze_inputs(src, data, dst):
    """Copies model `src` to `dst` with every graph input after the first
    turned into an initializer holding the case's value for it: a case's
    weights (Conv's W, BatchNormalization's statistics, Add's second
    operand) are graph inputs in ONNX's suite, but constants in a network,
    which is what torch2hpvm compiles. Inputs without a readable tensor
    stay inputs (the exporter then says why it cannot take them)."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(src)
    graph = model.graph
    known = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in known]
    keep = inputs[:1]
    for k, inp in enumerate(inputs[1:], 1):
        t = onnx.TensorProto()
        try:
            with open(os.path.join(data, f"input_{k}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            numpy_helper.to_array(t)
        except Exception:  # noqa: BLE001 - not a plain tensor: keep it
            keep.append(inp)
            continue
        t.name = inp.name
        graph.initializer.append(t)
    frozen = [i for i in graph.input if i.name in known or i in keep]
    del graph.input[:]
    graph.input.extend(frozen)
    tmp = dst + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, dst)
    return dst


def run_case(case, node_dir, work_root, exporter, timeout):
    """Runs one case end to end; returns its outcome string."""
    import onnx
    from onnx import numpy_helper
    src = os.path.join(node_dir, case)
    work = H.fresh_dir(os.path.join(work_root, case))
    data = os.path.join(src, "test_data_set_0")
    model = freeze_inputs(os.path.join(src, "model.onnx"), data,
                          os.path.join(work, case + ".onnx"))

    def load(name):
        """The case's tensor as float32, or None where it is no tensor
        (sequences, optionals) or has no float32 reading (strings)."""
        t = onnx.TensorProto()
        try:
            with open(os.path.join(data, name), "rb") as f:
                t.ParseFromString(f.read())
            return numpy_helper.to_array(t).astype(np.float32)
        except Exception:  # noqa: BLE001 - any unreadable value counts
            return None

    # The dataset is the case's first input; where that is not a float
    # tensor, one float stands in, and the exporter's verdict on the model
    # is what gets recorded.
    x = load("input_0.pb")
    ref = load("output_0.pb")
    if x is None:
        x = np.zeros(1, np.float32)
    count = x.shape[0] if x.ndim >= 1 else 1
    labels = np.zeros(count, np.int32)
    test_in, _ = H.write_dataset(work, "test", x, labels)
    tune_in, _ = H.write_dataset(work, "tune", x, labels)

    out_dir = os.path.join(work, "out")
    cmd = H.export_cmd(exporter, model, tune_in, test_in, out_dir)
    try:
        proc = H.run(cmd, timeout, what="torch2hpvm-export")
    except H.TestFailure as e:
        return "fail: " + _one_line(str(e).splitlines()[0], work)
    if proc.returncode == 1:
        return "rejected: " + _one_line(proc.stderr, work)
    if proc.returncode != 0:
        return (f"fail: exporter {H.status_text(proc.returncode)}: "
                + _one_line(proc.stderr, work))
    run_dir = H.fresh_dir(os.path.join(work, "run"))
    try:
        ours, _, _ = H.run_binary(H.binary_path(out_dir, case), run_dir,
                                  os.path.join(run_dir, "output.npy"),
                                  timeout)
        if ref is None:
            raise H.TestFailure("the case's output_0.pb is no float tensor")
        _, rel, worst = H.compare(ours, ref)
    except H.TestFailure as e:
        return "fail: " + _one_line(str(e).splitlines()[0], work)
    if rel > H.TOLERANCE:
        return (f"fail: output differs by {rel:.3g} of max|expected| "
                f"(tolerance {H.TOLERANCE:g}) at {tuple(map(int, worst))}")
    H.discard(work)
    return "pass"
