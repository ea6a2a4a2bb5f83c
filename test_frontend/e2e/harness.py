"""harness.py - the steps every end-to-end test shares.

PyTorch side: seeded inputs, HPVM-style ONNX export, HPVM bin datasets.
Tool side: run torch2hpvm-export and the generated binary, with timeouts and
the tool's own message on failure. Check side: compare the binary's --output
with the reference, element by element and by top-1 class.

Tolerance (TOLERANCE): every element must satisfy
    |ours - ref| <= TOLERANCE * max|ref|
i.e. the error relative to the output's largest magnitude, with TOLERANCE
1e-4. Both sides compute in float32 but sum in different orders (oneDNN's
blocked kernels in ours, PyTorch's own), so they differ by accumulated
rounding, which grows with depth. Measured on the twelve model tests:
ours vs PyTorch 1.8e-6 (VGG-16) to 2.9e-5 (MobileNet, 27 batch norms);
PyTorch's own float32 vs float64 3.6e-6 to 2.3e-5, and ours vs float64 the
same. 1e-4 leaves 3x to 50x of head-room over that noise, yet catches real
mistakes: a 0.001 change to one conv bias of LeNet moves the outputs by
5e-4 (with top-1 unchanged), a wrong padding, weight layout or epsilon by
1e-3 to 1. Scaled by the maximum, not per element, because elements near
zero (small probabilities, logits crossing zero) have no meaningful
relative error. nets/init.py keeps the random networks well conditioned,
so that this noise stays small.

Winograd: our exact 3x3 convolutions run as oneDNN's Winograd kernels
where those are faster (F(2x2, 3x3) or F(4x4, 3x3): the same convolution,
rounded differently), which puts ours up to 3x further from float64
PyTorch than PyTorch's own float32 (VGG-16-CIFAR 2.5e-5 against 1.3e-5).
On a deep net whose own float32 error is already half of TOLERANCE
(Inception v3 at 96 px: 5.1e-5) that reaches 1.3e-4 against PyTorch's
float32. Such an output passes (within_tolerance) when its error against
float64 PyTorch is at most NOISE_FACTOR times PyTorch float32's own: no
further from the true result than that, and a real bug (5e-4 or more)
still fails, the noise being 2.3e-5 at most elsewhere.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

TOLERANCE = 1e-4
# How far from float64 PyTorch, in multiples of PyTorch float32's own
# error, an output beyond TOLERANCE may be (see above).
NOISE_FACTOR = 4
# Inputs whose top-2 class scores are closer than this (relative to the top
# score) are not used: there top-1 would hinge on rounding, not correctness.
MIN_MARGIN = 1e-3


def within_tolerance(rel_err, exact_err, noise):
    """True when an output `rel_err` from PyTorch float32 (scaled by
    max|ref|) passes: within TOLERANCE, or `exact_err` from float64
    PyTorch at most NOISE_FACTOR times PyTorch float32's own `noise`."""
    return rel_err <= TOLERANCE or exact_err <= NOISE_FACTOR * noise


class TestFailure(Exception):
    """A check failed; the message says what and how."""


def log(msg):
    print(msg, flush=True)


def fresh_dir(path):
    """Empties (or creates) `path`, a directory this test owns."""
    if os.path.lexists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    return path


def discard(path):
    """Deletes a passing test's file or directory unless HPVM_E2E_KEEP=1."""
    if os.environ.get("HPVM_E2E_KEEP") == "1" or not os.path.lexists(path):
        return
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def write_bin(path, array, dtype):
    """Writes `array` as raw little-endian `dtype`, atomically."""
    data = np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<"))
    tmp = path + ".tmp"
    data.tofile(tmp)
    os.replace(tmp, path)


def write_dataset(directory, prefix, inputs, labels):
    """Writes HPVM's `<prefix>_input.bin` / `<prefix>_labels.bin` pair."""
    inp = os.path.join(directory, f"{prefix}_input.bin")
    lab = os.path.join(directory, f"{prefix}_labels.bin")
    write_bin(inp, inputs, np.float32)
    write_bin(lab, labels, np.int32)
    return inp, lab


# How a test exports its PyTorch model (ModelSpec.export): "hpvm" as HPVM's
# torch2hpvm does (training mode preserved: an eval model keeps batch norm as
# BatchNormalization; no constant folding); "pytorch" as a PyTorch user does
# (torch.onnx.export's defaults: TrainingMode.EVAL, which folds batch norm
# into the preceding conv, gradients enabled, and constant folding).
EXPORTS = {
    "hpvm": dict(constant_folding=False, eval_mode=False),
    "pytorch": dict(constant_folding=True, eval_mode=True),
}


def export_onnx(model, shape, opset, path, constant_folding=False,
                eval_mode=False, dynamic_axes=None):
    """Exports `model` with batch 1, input 'input' and output 'output'. By
    default as HPVM's torch2hpvm does: training mode preserved (eval: batch
    norm kept as BatchNormalization), no constant folding unless asked.
    `eval_mode`: as a PyTorch user calls torch.onnx.export: its default
    TrainingMode.EVAL (batch norm folded into the conv before it), and
    gradients enabled (under torch.no_grad(), nn.MultiheadAttention in eval
    mode takes its fused fast path, aten::_native_multi_head_attention,
    which torch.onnx cannot export: ViT would fail). `dynamic_axes`: as
    torch.onnx.export takes it (symbolic dims)."""
    import torch
    dummy = torch.zeros((1,) + tuple(shape))
    tmp = path + ".tmp"
    training = (torch.onnx.TrainingMode.EVAL if eval_mode
                else torch.onnx.TrainingMode.PRESERVE)
    with torch.set_grad_enabled(eval_mode):
        torch.onnx.export(model, dummy, tmp, opset_version=opset,
                          input_names=["input"], output_names=["output"],
                          training=training,
                          do_constant_folding=constant_folding,
                          dynamic_axes=dynamic_axes)
    os.replace(tmp, path)
    return path


def top2_margin(out):
    """Per row: (top1 - top2) / max(|top1|, tiny)."""
    part = np.sort(out, axis=1)
    return (part[:, -1] - part[:, -2]) / np.maximum(np.abs(part[:, -1]), 1e-30)


def run(cmd, timeout, cwd=None, what=None):
    """Runs argv `cmd`; returns CompletedProcess (text). Raises TestFailure
    on a timeout, with the command and what it printed. The command runs in
    its own process group, killed whole on a timeout (or an interrupt), so
    that nothing it started (a compiler under the exporter) outlives it."""
    what = what or os.path.basename(cmd[0])
    t0 = time.monotonic()
    try:
        child = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True,
                                 errors="replace", start_new_session=True)
    except OSError as e:
        raise TestFailure(f"cannot run {what}: {quote(cmd)}: {e}")
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        out, err = child.communicate()
        raise TestFailure(f"{what} timed out after {timeout} s: "
                          f"{quote(cmd)}\n{tail(out)}{tail(err)}")
    except BaseException:
        _kill_group(child)
        child.wait()
        raise
    proc = subprocess.CompletedProcess(cmd, child.returncode, out, err)
    proc.seconds = time.monotonic() - t0
    return proc


def _kill_group(child):
    """SIGKILL to the process group `run` started `child` in."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def status_text(code):
    """'exit status 2' or 'killed by SIGSEGV' for a returncode."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def check_ok(proc, cmd, what):
    """Raises TestFailure with the tool's output unless it exited with 0."""
    if proc.returncode != 0:
        raise TestFailure(
            f"{what} failed ({status_text(proc.returncode)}): {quote(cmd)}\n"
            f"{tail(proc.stdout)}{tail(proc.stderr)}")


def quote(cmd):
    """`cmd` as a copy-pasteable shell line."""
    import shlex
    return " ".join(shlex.quote(str(c)) for c in cmd)


def tail(text, lines=40):
    """The last `lines` lines of a tool's output, for messages."""
    if not text:
        return ""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join(text.rstrip().splitlines()[-lines:]) + "\n"


def export_cmd(exporter, onnx_path, tune, test, out_dir, extra=()):
    return [exporter, onnx_path, "--tune", tune, "--test", test,
            "-o", out_dir, "--force", *extra]


def binary_path(out_dir, stem):
    """The program an export into OUT_DIR built: manifest.json names it
    (its name is the model's stem made an identifier: lower case); without
    a manifest, build/STEM."""
    try:
        with open(os.path.join(out_dir, "manifest.json")) as f:
            binary = json.load(f).get("binary")
    except (OSError, ValueError):
        binary = None
    return os.path.join(out_dir, binary or os.path.join("build", stem))


def run_binary(binary, cwd, output, timeout, extra=()):
    """Runs `binary test --output OUTPUT`; returns (outputs, final_accuracy,
    CompletedProcess)."""
    cmd = [binary, "test", "--output", output, "--quiet", *extra]
    if not os.path.isfile(binary):
        raise TestFailure(f"the exporter reported success but built no "
                          f"binary at {binary}")
    proc = run(cmd, timeout, cwd=cwd, what="generated binary")
    check_ok(proc, cmd, "generated binary")
    if not os.path.isfile(output):
        raise TestFailure(f"{quote(cmd)} exited 0 but wrote no {output}")
    ours = np.load(output)
    acc_file = os.path.join(cwd, "final_accuracy")
    acc = None
    if os.path.isfile(acc_file):
        with open(acc_file) as f:
            acc = float(f.read().strip())
    return ours, acc, proc


def tolerance_problem(ours, ref, worst, rel_err, exact_err, noise):
    """Why output `ours` (error `rel_err` from float32 `ref` at `worst`,
    `exact_err` from float64, against PyTorch float32's own `noise`) fails
    within_tolerance, or None."""
    if within_tolerance(rel_err, exact_err, noise):
        return None
    return (f"output differs from PyTorch: worst element {worst} is "
            f"{ours[worst]:.9g}, expected {ref[worst]:.9g} (error "
            f"{rel_err:.3g} of max|output|, tolerance {TOLERANCE:g}; "
            f"{exact_err:.3g} from float64 PyTorch, more than "
            f"{NOISE_FACTOR}x PyTorch float32's {noise:.3g})")


def compare(ours, ref, tolerance=TOLERANCE):
    """Returns (max abs error, error scaled by max|ref|, index of the worst
    element); raises TestFailure on a shape mismatch."""
    if ours.size != ref.size:
        raise TestFailure(f"output has shape {list(ours.shape)} "
                          f"({ours.size} values), expected {list(ref.shape)} "
                          f"({ref.size} values)")
    ours = ours.reshape(ref.shape).astype(np.float64)
    ref = ref.astype(np.float64)
    if not np.all(np.isfinite(ours)):
        bad = np.argwhere(~np.isfinite(ours))[0]
        raise TestFailure(f"output has a non-finite value at {tuple(bad)}: "
                          f"{ours[tuple(bad)]}")
    diff = np.abs(ours - ref)
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    return float(diff[worst]), float(diff[worst]) / scale, worst


def main_guard(fn):
    """Runs fn(); maps TestFailure to exit status 1 with its message."""
    try:
        fn()
    except TestFailure as e:
        print(f"FAIL: {e}", file=sys.stderr, flush=True)
        sys.exit(1)


def conf_to_json_types(ops_def):
    """{configuration op name: ops.json op type} from Ops.def's HPVM_OP rows
    ("conv" -> "convolution")."""
    import re
    row = re.compile(r'^HPVM_OP\(\s*\w+,\s*"(\w+)",\s*"(\w+)"')
    names = {}
    with open(ops_def) as f:
        for line in f:
            m = row.match(line)
            if m:
                names[m.group(1)] = m.group(2)
    if not names:
        raise TestFailure(f"{ops_def}: no HPVM_OP rows found")
    return names


def hpvm_config_ops(path, names):
    """The op types (ops.json spelling) of the first configuration block of
    HPVM's configuration file `path`, in op order. Node lines are
    `<id> <device> (<op> <knob name> <knob id>)+`."""
    ops, in_block = [], False
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line.startswith("+++++"):
                in_block, header = True, True
                continue
            if line.startswith("-----"):
                break
            if not in_block or not line:
                continue
            if header:
                header = False
                continue
            toks = line.split()[2:]
            if len(toks) % 3:
                raise TestFailure(f"{path}:{n}: expected '<id> <device> "
                                  f"(<op> <knob> <id>)+', got '{line}'")
            for op in toks[::3]:
                if op not in names:
                    raise TestFailure(f"{path}:{n}: unknown op '{op}'")
                ops.append(names[op])
    return ops


def generated_ops(ops_json):
    """The op types of a generated program, in op order, from ops.json's
    op_cost keys ("<type>_<index>")."""
    import json
    with open(ops_json) as f:
        keys = json.load(f)["op_cost"].keys()
    ordered = sorted(keys, key=lambda k: int(k.rsplit("_", 1)[1]))
    return [k.rsplit("_", 1)[0] for k in ordered]


def same_op_sequence(ours, hpvm):
    """None if the sequences agree, else a message naming the first
    difference. A pooling op matches either pooling kind: HPVM's ResNet-50
    file says pool_max where its program has a mean pool (reference 7.3),
    and the output comparison checks which pooling really runs."""
    def norm(op):
        return "pooling" if op in ("maxpool", "avgpool") else op
    a, b = [norm(o) for o in ours], [norm(o) for o in hpvm]
    if a == b:
        return None
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y),
             min(len(a), len(b)))
    return (f"op sequence differs from HPVM's configuration file: "
            f"{len(ours)} ops vs {len(hpvm)}; first difference at op "
            f"{i + 1}: ours {ours[max(i - 2, 0):i + 3]}, HPVM's "
            f"{hpvm[max(i - 2, 0):i + 3]}")
