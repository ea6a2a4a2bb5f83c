"""onnx_node.py - ONNX's backend node cases, end to end, against a record.

Every case of ONNX's own conformance suite whose operators all have an
HPVM_ONNX row in Ops.def (read from the table, not listed here) is exported:
its first input becomes a one-set HPVM dataset (labels 0), its other inputs
(weights, in a network) become initializers holding the case's values,
torch2hpvm-export generates it, one CMake project builds all the programs
(a configure each would cost more than the build), and the binary's --output is
compared with the case's output_0.pb (harness.TOLERANCE). The outcome is one of
    pass                 exported, built, ran, matched
    rejected: <reason>   the exporter refused the model (exit 1); its message
    fail: <reason>       anything else (a crash, a build failure, a mismatch)
and must equal the line recorded in onnx_node/expected.txt, so that both a
regression and an improvement show. `update` rewrites the record.
"""
import os
import re
import shutil

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


def _export_case(case, node_dir, work_root, exporter, timeout):
    """Exports one case without building it. Returns (outcome, None) where
    the exporter already decided it (a refusal, a crash), else (None,
    (work, out_dir, reference output or None))."""
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
    cmd = H.export_cmd(exporter, model, tune_in, test_in, out_dir,
                       ["--no-build"])
    try:
        proc = H.run(cmd, timeout, what="torch2hpvm-export")
    except H.TestFailure as e:
        return "fail: " + _one_line(str(e).splitlines()[0], work), None
    if proc.returncode == 1:
        return "rejected: " + _one_line(proc.stderr, work), None
    if proc.returncode != 0:
        return (f"fail: exporter {H.status_text(proc.returncode)}: "
                + _one_line(proc.stderr, work)), None
    return None, (work, out_dir, ref)


def _hpvm_rt_dir(exporter):
    """hpvm_rt's CMake package in the exporter's build tree (the directory
    the exporter itself hands to CMake)."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(exporter)))
    pkg = os.path.join(build, "hpvm_rt")
    if not os.path.isfile(os.path.join(pkg, "hpvm_rtConfig.cmake")):
        raise H.TestFailure(f"no hpvm_rtConfig.cmake in {pkg}: the node "
                            f"cases need the exporter of a build tree")
    return pkg


def _build_all(exported, top, exporter, timeout):
    """Builds every exported program in one CMake project: each export's
    own CMakeLists.txt is a subdirectory whose build directory is the one
    the exporter would have used (OUT/build), so the programs are the
    exporter's, at one configure for all instead of one each. Returns
    {case: build error} for the programs that did not build."""
    top = H.fresh_dir(top)
    with open(os.path.join(top, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.18)\n"
                "project(onnx_node_cases LANGUAGES CXX)\n")
        for case, (_, out_dir, _) in exported.items():
            f.write(f'add_subdirectory("{out_dir}" '
                    f'"{os.path.join(out_dir, "build")}")\n')
    build = os.path.join(top, "build")
    cxx = shutil.which("clang++")
    if not cxx:
        raise H.TestFailure("clang++ is not on PATH (scripts/install-deps.sh "
                            "installs it)")
    cmd = ["cmake", "-S", top, "-B", build, "-G", "Ninja",
           f"-DCMAKE_CXX_COMPILER={cxx}", "-DCMAKE_BUILD_TYPE=Release",
           f"-Dhpvm_rt_DIR={_hpvm_rt_dir(exporter)}"]
    proc = H.run(cmd, timeout, what="cmake (configure)")
    H.check_ok(proc, cmd, "cmake (configure)")
    # -k 0: every program that can be built is, whatever another's fate.
    cmd = ["cmake", "--build", build, "-j", str(os.cpu_count() or 1),
           "--", "-k", "0"]
    proc = H.run(cmd, timeout * max(1, len(exported)), what="cmake --build")
    # Ninja's report of a failed step: "FAILED: <its outputs>", then the
    # command and what it printed, up to the next "[k/n]" progress line.
    blocks, block = [], None
    for line in proc.stdout.splitlines():
        if line.startswith("FAILED: "):
            block = [line]
            blocks.append(block)
        elif re.match(r"\[\d+/\d+\] ", line):
            block = None
        elif block is not None:
            block.append(line)
    failed = {}
    for case, (work, out_dir, _) in exported.items():
        program = _program(out_dir)
        if os.path.isfile(program):
            continue
        name = os.path.basename(program)
        mine = [b for b in blocks if re.search(
            rf"\b{name}(_code\.dir/|\b)", b[0])]
        errors = [ln for b in mine for ln in b if "error:" in ln]
        failed[case] = "build failed: " + _one_line(
            errors[0] if errors else
            (mine[0][0] if mine else "no program was built"), work)
    return failed


def _program(out_dir):
    """The program an export without a build would build: the executable
    its CMakeLists.txt declares, in OUT/build."""
    with open(os.path.join(out_dir, "CMakeLists.txt")) as f:
        m = re.search(r"^add_executable\((\w+)\)", f.read(), re.M)
    if not m:
        raise H.TestFailure(f"{out_dir}/CMakeLists.txt declares no "
                            f"add_executable(NAME)")
    return os.path.join(out_dir, "build", m.group(1))


def _run_built(case, work, out_dir, ref, timeout):
    """Runs a built case's program and compares it with the reference."""
    run_dir = H.fresh_dir(os.path.join(work, "run"))
    try:
        ours, _, _ = H.run_binary(_program(out_dir), run_dir,
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


def run_cases(cases, node_dir, work_root, exporter, timeout, project):
    """Runs the cases end to end; returns {case: outcome} in their order.
    Exports first (one at a time), then builds every program the exporter
    accepted at once (in the CMake project directory `project`, one per
    concurrent run), then runs each."""
    outcomes, exported = {}, {}
    for case in cases:
        outcome, ready = _export_case(case, node_dir, work_root, exporter,
                                      timeout)
        if ready:
            exported[case] = ready
        outcomes[case] = outcome
    H.log(f"{len(cases)} cases exported: {len(exported)} programs to "
          f"build, {len(cases) - len(exported)} decided by the exporter")
    failed = _build_all(exported, project, exporter, timeout) \
        if exported else {}
    H.log(f"{len(exported) - len(failed)} programs built; running them")
    for case, (work, out_dir, ref) in exported.items():
        outcomes[case] = ("fail: " + failed[case] if case in failed else
                          _run_built(case, work, out_dir, ref, timeout))
    if not failed:
        H.discard(project)
    return outcomes
