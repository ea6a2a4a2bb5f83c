#!/usr/bin/python3
"""run_configs.py - HPVM's configurations and knobs on our builds (issue #4).

  run_configs.py list accept|sweep
      the networks of each test kind, one a line (CMake registers the tests)
  run_configs.py accept NET --exporter EXE --workdir DIR [--config-dir DIR]
      HPVM's own configuration file for NET (<config-dir>/NET.txt) applied
      to our export of the same architecture: the fused nodes in ops.json
      match the file's lines, `--all-configs` accepts every block, every
      block run alone (`--config I --output`) gives finite outputs whose
      accuracy equals the --all-configs table's, every all-fp32 block
      reproduces the exact output bit for bit, and `cpu` device tokens give
      the same outputs as HPVM's `gpu` ones.
  run_configs.py sweep NET --exporter EXE --workdir DIR [--via inspect|run]
      every knob valid for an op (Ops.def) applied to every op of every
      fused node, one at a time (through the inspect protocol, or one run
      per configuration): fp32 changes nothing, fp16/bf16 change the output
      a little, perforation and sampling equal PyTorch running the
      reference's algorithm on that convolution, nothing is NaN or Inf.
  run_configs.py inspect --exporter EXE --workdir DIR [--config-dir DIR]
      LeNet exported for the hpvm_tensor_inspect target, driven through
      HPVM's FIFO protocol (piped.py): every answer equals the normal
      binary's outputs and final_accuracy for the same configuration.
  run_configs.py table NET --exporter EXE --workdir DIR [--images N]
                 [--fashion-epochs E [--train-images M]]
      measurement, not a test: the --all-configs table of HPVM's file on
      our NET at N images (LeNet: optionally trained for E epochs on M
      Fashion-MNIST images, tested on Fashion-MNIST's test split).

Inputs are smooth random images (blurred Gaussian noise, renormalised):
perforation interpolates neighbouring output rows, which only approximates
anything on spatially correlated inputs such as real images; on white
noise it would replace a row by an unrelated one. Weights are seeded and
calibrated by nets/init.py, labels are PyTorch's top-1 (exact accuracy
100%). Run with /usr/bin/python3 (torch, onnx, numpy).
"""
import argparse
import json
import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_FRONTEND = os.path.dirname(HERE)
REPO = os.path.dirname(TEST_FRONTEND)
sys.path.insert(0, HERE)
sys.path.insert(0, TEST_FRONTEND)

import hpvmconf  # noqa: E402
from e2e import harness as H  # noqa: E402

DEFAULT_CONFIG_DIR = os.path.join(REPO, "..", "shared", "reference",
                                  "hpvm-configs")
OPS_DEF = os.path.join(REPO, "hpvm_rt", "include", "hpvm_rt", "Ops.def")

# Networks whose HPVM configuration file must apply to our export (issue #4,
# "Node numbering compatible with HPVM"), and those of the knob sweep.
ACCEPT_NETS = ["lenet_mnist", "alexnet_cifar10", "alexnet2_cifar10",
               "vgg16_cifar10", "vgg16_cifar100", "resnet18_cifar10",
               "mobilenet_cifar10"]
SWEEP_NETS = ["lenet_mnist", "resnet18_cifar10"]

# Knob checks, as fractions of max|output|. fp16 rounds operands and
# results to 11 significant bits (relative 2^-11) and bf16 to 8 (2^-8):
# through a network that stays well below 5%, and it is never exactly zero
# on random data. Perforation and sampling with fp32 numerics must equal
# PyTorch running the reference's algorithm on the same convolution up to
# float32 summation order (harness.TOLERANCE); their fp16 variants within
# PRECISION_MAX of it.
PRECISION_MAX = 5e-2
# int8 knobs (8-bit operands, 32-bit sums): the change they may make, with
# 8-bit weights (twice that with 7-bit weights, below VNNI).
INT8_MAX = 1e-1
ORACLE_TOL = H.TOLERANCE
# The relative difference between the runtime's activations and PyTorch's
# that may flip an int8 knob's input rounding (Oracle.slack): both compute
# exact fp32 layers, in another summation order (measured: up to 6e-6 of
# max|output| at the network's end on AVX2).
INT8_TIE = 5e-5


def seed_of(name):
    """A stable per-network seed (crc32), independent of the e2e tests'."""
    return zlib.crc32(("configs/" + name).encode()) & 0x7FFFFFFF


# --- Preparing a model ------------------------------------------------------

def smooth_images(count, shape, gen):
    """`count` images of `shape`: N(0,1) noise blurred by a 5x5 binomial
    filter per channel, renormalised to zero mean and unit deviation."""
    import torch
    import torch.nn.functional as F
    c = shape[0]
    x = torch.randn((count,) + tuple(shape), generator=gen)
    k1 = torch.tensor([1., 4., 6., 4., 1.]) / 16
    k = (k1[:, None] * k1[None, :]).expand(c, 1, 5, 5).contiguous()
    x = F.conv2d(F.pad(x, (2, 2, 2, 2), mode="reflect"), k, groups=c)
    x = (x - x.mean(dim=(1, 2, 3), keepdim=True)) / x.std(
        dim=(1, 2, 3), keepdim=True)
    return x


def pick_smooth_inputs(model, shape, count, seed):
    """`count` smooth images whose top-1 is clear (harness.MIN_MARGIN),
    with the model's float32 outputs."""
    import numpy as np
    import torch
    gen = torch.Generator().manual_seed(seed)
    xs, ys, drawn = [], [], 0
    with torch.no_grad():
        while len(xs) < count:
            if drawn > 20 * count + 20:
                raise H.TestFailure(
                    f"only {len(xs)} of {drawn} random inputs have a top-1 "
                    f"margin above {H.MIN_MARGIN}; the model is degenerate")
            batch = smooth_images(count - len(xs) + 1, shape, gen)
            drawn += batch.shape[0]
            out = model(batch).numpy()
            for x, y, m in zip(batch.numpy(), out, H.top2_margin(out)):
                if m >= H.MIN_MARGIN and len(xs) < count:
                    xs.append(x)
                    ys.append(y)
    return np.stack(xs), np.stack(ys)


class Prepared:
    """A network exported to ONNX with its datasets and reference outputs."""

    def __init__(self, name, work, onnx_path, model, x, test_in, tune_in,
                 ref, labels, tune_ref, tune_labels):
        self.name, self.work, self.onnx = name, work, onnx_path
        self.model, self.x = model, x
        self.test_in, self.tune_in = test_in, tune_in
        self.ref, self.labels = ref, labels
        self.tune_ref, self.tune_labels = tune_ref, tune_labels


def prepare(name, work, images, tune_images=2, model=None, data=None):
    """Builds NET (nets/, E2E's definitions, BN kept) with seeded calibrated
    weights, exports it as the e2e tests do, writes the test/tune sets.
    `model` and `data` ((x, ref, tx, tref)) override the random ones."""
    import numpy as np
    import nets
    import run_e2e
    spec = nets.model(name)
    seed = seed_of(name)
    if model is None:
        model = run_e2e.build_model(spec.build, spec.shape, seed,
                                    4 if spec.shape[1] >= 100 else 16)
    onnx_path = H.export_onnx(model, spec.shape, spec.opset,
                              os.path.join(work, name + ".onnx"))
    if data is None:
        x, ref = pick_smooth_inputs(model, spec.shape, images, seed + 1)
        tx, tref = pick_smooth_inputs(model, spec.shape, tune_images,
                                      seed + 2)
        labels = np.argmax(ref, axis=1).astype(np.int32)
        tlabels = np.argmax(tref, axis=1).astype(np.int32)
    else:
        x, labels, tx, tlabels = data
        ref = tref = None
    test_in, _ = H.write_dataset(work, "test", x, labels)
    tune_in, _ = H.write_dataset(work, "tune", tx, tlabels)
    return Prepared(name, work, onnx_path, model, x, test_in, tune_in, ref,
                    labels, tref, tlabels)


def export(exporter, prep, out_dir, extra=(), timeout=900):
    """torch2hpvm-export of `prep` into out_dir; returns the binary path."""
    cmd = H.export_cmd(exporter, prep.onnx, prep.tune_in, prep.test_in,
                       out_dir, extra)
    proc = H.run(cmd, timeout, what="torch2hpvm-export")
    H.check_ok(proc, cmd, "torch2hpvm-export")
    H.log(f"[{prep.name}] exported and built in {proc.seconds:.1f} s "
          f"({H.quote(cmd)})")
    binary = H.binary_path(out_dir, prep.name)
    if not os.path.isfile(binary):
        raise H.TestFailure(f"torch2hpvm-export reported success but built "
                            f"no {binary}")
    return binary


def tail_of(text, lines=20):
    """The last `lines` lines of a tool's output, newline-terminated."""
    if not text:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:]) + "\n"


def run_binary(binary, cwd, args, timeout=600):
    """Runs the generated binary; returns (CompletedProcess, argv)."""
    cmd = [binary, *args]
    return H.run(cmd, timeout, cwd=cwd, what="generated binary"), cmd


def load_output(path, rows):
    """The binary's --output .npy, checked to hold `rows` rows."""
    import numpy as np
    out = np.load(path)
    if out.ndim != 2 or out.shape[0] != rows:
        raise H.TestFailure(f"{path} has shape {list(out.shape)}, expected "
                            f"{rows} rows")
    return out


def top1_accuracy(out, labels):
    """Percent of rows whose first maximum is the label (HPVM's rule)."""
    import numpy as np
    return 100.0 * float(np.mean(np.argmax(out, axis=1) == labels))


def rel_change(out, exact):
    """max|out - exact| / max|exact| in float64; inf if non-finite."""
    import numpy as np
    if not np.all(np.isfinite(out)):
        return float("inf")
    d = np.abs(out.astype(np.float64) - exact.astype(np.float64))
    return float(d.max()) / max(float(np.max(np.abs(exact))), 1e-30)


def fused_nodes(ops_json_path, table):
    """Our fused nodes from ops.json (its "fused_nodes", HPVM's fusion
    groups): [(first op id, [config-file op names])]."""
    with open(ops_json_path) as f:
        meta = json.load(f)
    if "fused_nodes" not in meta:
        raise H.TestFailure(f"{ops_json_path} has no 'fused_nodes'")
    out = []
    for node in meta["fused_nodes"]:
        ops = []
        for op in node["ops"]:
            jtype = op.rsplit("_", 1)[0]
            if jtype not in table.conf_of_json:
                raise H.TestFailure(f"{ops_json_path}: op '{op}' has no "
                                    f"Ops.def row")
            ops.append(table.conf_of_json[jtype])
        out.append((int(node["id"]), ops))
    return out


def structure_problems(ours, block, conf_path):
    """Differences between our fused nodes and a block's lines (count, key
    = first op id, op list), each naming the line and the node."""
    theirs = list(zip(block.keys(), block.nodes))
    problems = []
    flat_ours = [op for _, ops in ours for op in ops]
    flat_theirs = [op for n in block.nodes for op in n.op_names()]
    if flat_ours != flat_theirs:
        at = next((i for i, (a, b) in enumerate(zip(flat_ours, flat_theirs))
                   if a != b), min(len(flat_ours), len(flat_theirs)))
        problems.append(
            f"op sequences differ: ours has {len(flat_ours)} ops, "
            f"{conf_path} {len(flat_theirs)}; first difference at op id "
            f"{at + 1}: ours "
            f"'{flat_ours[at] if at < len(flat_ours) else '(end)'}', file "
            f"'{flat_theirs[at] if at < len(flat_theirs) else '(end)'}'")
    if len(ours) != len(theirs):
        problems.append(f"{len(ours)} fused nodes in our export, "
                        f"{len(theirs)} lines in {conf_path}")
    for i, ((oid, oops), (key, line)) in enumerate(zip(ours, theirs)):
        if (oid, oops) != (key, line.op_names()):
            problems.append(
                f"{conf_path}:{line.line}: line '{line.name}' (key {key}: "
                f"{' '.join(line.op_names())}) vs our fused node {i + 1} "
                f"(first op id {oid}: {' '.join(oops)})")
            if len(problems) > 12:
                problems.append("(further differences not listed)")
                break
    return problems


# --- accept -----------------------------------------------------------------

def cmd_accept(args):
    import numpy as np
    table = hpvmconf.OpTable(OPS_DEF)
    conf = os.path.abspath(os.path.join(args.config_dir, args.net + ".txt"))
    if not os.path.isfile(conf):
        raise H.TestFailure(f"HPVM's configuration file {conf} is missing "
                            f"(--config-dir)")
    _, blocks = hpvmconf.parse(conf)
    work = H.fresh_dir(os.path.join(args.workdir, "accept", args.net))
    prep = prepare(args.net, work, args.images)
    out_dir = os.path.join(work, "out")
    binary = export(args.exporter, prep, out_dir,
                    ["--batch-size", str(args.batch)])

    ours = fused_nodes(os.path.join(out_dir, "ops.json"), table)
    problems = structure_problems(ours, blocks[0], conf)
    # Every block lists the same ops as the first (true of all of HPVM's
    # files); a block that does not is reported by its first odd line.
    first = [n.op_names() for n in blocks[0].nodes]
    for block in blocks[1:]:
        odd = [n for n, ops in zip(block.nodes, first) if n.op_names() != ops]
        if odd or len(block.nodes) != len(first):
            line = odd[0].line if odd else block.line
            problems.append(f"{conf}:{line}: block '{block.name}' lists "
                            f"other ops than the first block")
    if problems:
        # The runtime's own verdict on the file, for the report.
        run_dir = H.fresh_dir(os.path.join(work, "run"))
        proc, _ = run_binary(binary, run_dir, ["test", "-c", conf, "--quiet"])
        raise H.TestFailure(
            f"{args.net}: our op numbering does not match HPVM's "
            f"({len(ours)} fused nodes):\n  " + "\n  ".join(problems) +
            f"\n  the binary with -c {conf}: exit status {proc.returncode}"
            f"\n{tail_of(proc.stderr, 5)}  files kept in {work}")
    H.log(f"[{args.net}] {len(ours)} fused nodes = the {len(blocks[0].nodes)}"
          f" lines of {os.path.basename(conf)} (keys and op lists)")

    run_dir = H.fresh_dir(os.path.join(work, "run"))
    exact_npy = os.path.join(run_dir, "exact.npy")
    proc, cmd = run_binary(binary, run_dir,
                           ["test", "--output", exact_npy, "--quiet"])
    H.check_ok(proc, cmd, "exact run")
    exact = load_output(exact_npy, args.images)
    _, err, worst = H.compare(exact, prep.ref)
    if err > H.TOLERANCE:
        raise H.TestFailure(f"{args.net}: exact output differs from PyTorch "
                            f"by {err:.3g} of max|output| at {worst} "
                            f"(tolerance {H.TOLERANCE:g})")

    all_json = os.path.join(run_dir, "all_configs.json")
    proc, cmd = run_binary(binary, run_dir,
                           ["test", "-c", conf, "--all-configs", "--json",
                            all_json, "--limit", str(args.images)])
    H.check_ok(proc, cmd, "--all-configs run")
    with open(all_json) as f:
        table_rows = json.load(f)["configs"]
    failures = []
    if [r["name"] for r in table_rows] != [b.name for b in blocks]:
        failures.append(f"--all-configs reported configurations "
                        f"{[r['name'] for r in table_rows]}, the file has "
                        f"{[b.name for b in blocks]}")
    fp32_blocks = 0
    for i, block in enumerate(blocks):
        npy = os.path.join(run_dir, f"config_{i}.npy")
        proc, cmd = run_binary(binary, run_dir,
                               ["test", "-c", conf, "--config", str(i),
                                "--output", npy, "--quiet"])
        where = f"block {i} '{block.name}' ({conf}:{block.line - 1})"
        if proc.returncode != 0:
            failures.append(f"{where}: exit status {proc.returncode}: "
                            f"{H.quote(cmd)}\n{tail_of(proc.stderr, 5)}")
            continue
        out = load_output(npy, args.images)
        if not np.all(np.isfinite(out)):
            bad = tuple(np.argwhere(~np.isfinite(out))[0])
            failures.append(f"{where}: non-finite output {out[bad]} at {bad}")
            continue
        acc = top1_accuracy(out, prep.labels)
        if i < len(table_rows) and abs(table_rows[i]["accuracy"] - acc) > 1e-9:
            failures.append(f"{where}: --all-configs reported accuracy "
                            f"{table_rows[i]['accuracy']}, its own run "
                            f"{acc}")
        change = rel_change(out, exact)
        if block.is_fp32():
            fp32_blocks += 1
            if not np.array_equal(out, exact):
                failures.append(f"{where}: an all-fp32 block changed the "
                                f"output by {change:.3g} of max|output|; it "
                                f"must reproduce the exact run bit for bit")
        H.log(f"[{args.net}] {block.name:>7}: accuracy {acc:6.2f}% "
              f"(--all-configs {table_rows[i]['accuracy']:6.2f}%), output "
              f"change {change:.3g}" + (" (all fp32: identical)"
                                        if block.is_fp32() and change == 0
                                        else ""))
    if fp32_blocks == 0:
        failures.append(f"{conf} has no all-fp32 block to check exactness")
    failures += device_problems(binary, run_dir, conf, blocks, args.images)
    if failures:
        raise H.TestFailure(f"{args.net}: {len(failures)} of {len(blocks)} "
                            f"configurations failed:\n  " +
                            "\n  ".join(failures) +
                            f"\n  files kept in {work}")
    H.log(f"[{args.net}] PASS: {len(blocks)} configurations accepted, "
          f"{fp32_blocks} all-fp32 block(s) bit-exact")


def device_problems(binary, run_dir, conf, blocks, images):
    """HPVM's files say `gpu` everywhere; `gpu` lines run on the CPU with the
    knobs of `cpu` lines, so the same file with every device token turned
    into `cpu` must give bit-identical outputs (checked on the first and
    the last approximate block)."""
    import numpy as np
    cpu_conf = os.path.join(run_dir, "cpu_devices.txt")
    with open(conf) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        tok = line.split(" ")
        if len(tok) >= 5 and tok[1] == "gpu":
            lines[i] = " ".join([tok[0], "cpu"] + tok[2:])
    with open(cpu_conf, "w") as f:
        f.write("\n".join(lines))
    approx = [i for i, b in enumerate(blocks) if not b.is_fp32()]
    problems = []
    for i in sorted({approx[0], approx[-1]}) if approx else []:
        npy = os.path.join(run_dir, f"cpu_{i}.npy")
        proc, cmd = run_binary(binary, run_dir,
                               ["test", "-c", cpu_conf, "--config", str(i),
                                "--output", npy, "--quiet"])
        if proc.returncode != 0:
            problems.append(f"block {i} with cpu devices: exit status "
                            f"{proc.returncode}: {H.quote(cmd)}\n"
                            f"{tail_of(proc.stderr, 5)}")
            continue
        gpu = np.load(os.path.join(run_dir, f"config_{i}.npy"))
        if not np.array_equal(load_output(npy, images), gpu):
            problems.append(f"block {i} '{blocks[i].name}': cpu lines give "
                            f"other outputs than gpu lines")
    return problems


# --- sweep ------------------------------------------------------------------

def sweep_cases(ours, table):
    """One (description, fused node ordinal, op index, op, knob, block
    nodes) per (fused node, op, knob valid for the op): that op gets the
    knob, every other op fp32."""
    cases = []
    for ordinal, (first, ops) in enumerate(ours, start=1):
        for j, op in enumerate(ops):
            for knob in table.knobs_for(op):
                nodes = []
                for o2, (_, ops2) in enumerate(ours, start=1):
                    nodes.append((str(o2), [
                        (op2, knob if (o2, j2) == (ordinal, j) else 11)
                        for j2, op2 in enumerate(ops2)]))
                cases.append((f"node {ordinal} (op id {first + j}) '{op}' "
                              f"knob {knob} ({table.knob_name(knob)})",
                              ordinal, j, op, knob, nodes))
    return cases


def perforate(y, rate, offset, dim):
    """Reference section 6.2 on an exact convolution output `y` (N, K, H,
    W): along `dim` (2 rows, 3 columns) the positions h >= offset with
    (h - offset) % rate == 0 are not computed; the first is a copy of its
    successor, the last of its predecessor, the others the mean of both
    neighbours. A one-row output is computed exactly."""
    size = y.shape[dim]
    if size == 1:
        return y
    out = y.clone()

    def at(t, h):
        return t.select(dim, h)

    for h in range(offset, size, rate):
        if h == 0:
            at(out, 0).copy_(at(y, 1))
        elif h == size - 1:
            at(out, h).copy_(at(y, size - 2))
        else:
            at(out, h).copy_((at(y, h - 1) + at(y, h + 1)) / 2)
    return out


def sample_filter(w, rate, offset):
    """Reference section 6.3: the filter `w` (K, C, KH, KW) with the skipped
    elements zeroed and the kept ones scaled by rate / (rate - 1). Regular
    variant (KH*KW divisible by the rate): per input channel c the offset is
    (offset + c) % rate within the channel's KH*KW elements; irregular
    variant: one offset over the flattened C*KH*KW elements."""
    import torch
    k, c, kh, kw = w.shape
    n = kh * kw
    keep = torch.ones(c, n, dtype=torch.bool)
    if n % rate == 0:
        for ch in range(c):
            keep[ch, (offset + ch) % rate::rate] = False
    else:
        flat = keep.view(-1)
        flat[offset::rate] = False
    scale = rate / (rate - 1)
    return w * keep.view(1, c, kh, kw).to(w.dtype) * scale


class Oracle:
    """PyTorch's output of the network with a perforation or sampling knob
    (an Ops.def row) applied to one of its non-grouped convolutions, from
    the reference's description of the algorithms. All knobs of one
    convolution run in one batched forward pass (one slice of the batch per
    knob) and are cached."""

    def __init__(self, prep, int8_ranges=None, weight_max=127):
        import torch
        from torch import nn
        self.model, self.x = prep.model, torch.from_numpy(prep.x)
        self.order, self.cache, self.slacks = [], {}, {}
        # Convolution index -> (lo, hi) input range of the int8 knobs.
        self.int8_ranges = int8_ranges or {}
        # The largest int8 weight code: 127, or 63 where the program runs
        # below VNNI (README, "CPU support").
        self.weight_max = weight_max
        self.int8_max = INT8_MAX * 127 / weight_max

        def record(m, inputs, out):
            if m.groups == 1:
                self.order.append(m)

        handles = [m.register_forward_hook(record)
                   for m in self.model.modules() if isinstance(m, nn.Conv2d)]
        with torch.no_grad():
            self.model(self.x[:1])
        for h in handles:
            h.remove()

    def output(self, conv_index, knob, all_knobs):
        """Output with `knob` on convolution `conv_index` (0-based, in
        execution order); computes every knob of `all_knobs` for that
        convolution on the first call."""
        if (conv_index, knob["id"]) not in self.cache:
            self._compute(conv_index, all_knobs)
        return self.cache[(conv_index, knob["id"])]

    def slack(self, conv_index, knob):
        """How far an int8 knob's output may move (relative to max|output|)
        when input elements within INT8_TIE of a rounding boundary round
        the other way: the runtime quantizes its own exact activations,
        which differ from PyTorch's in the last bits (more so where its
        oneDNN kernels differ from PyTorch's: AVX2). 0 for other knobs."""
        return self.slacks.get((conv_index, knob["id"]), 0.0)

    def _compute(self, conv_index, knobs):
        import numpy as np
        import torch
        import torch.nn.functional as F
        n = self.x.shape[0]
        # One batch slice per (knob, tie rounding): int8 knobs also with
        # near-ties rounded up (+1) and down (-1).
        slots = [(knob, tie) for knob in knobs
                 for tie in ((0, 1, -1) if knob["precision"] == "INT8"
                             else (0,))]

        def approx(m, inputs, out):
            parts = []
            for i, (knob, tie) in enumerate(slots):
                xi, yi = inputs[0][i * n:(i + 1) * n], out[i * n:(i + 1) * n]
                w = m.weight
                if knob["precision"] == "INT8":
                    # The convolution on quantized operands: the input per
                    # tensor over the calibrated range, the filter per
                    # output channel (round half to even, as the runtime).
                    lo, hi = self.int8_ranges[conv_index]
                    u8 = lo >= 0
                    s = np.float32((hi if u8 else max(-lo, hi)) /
                                   (255.0 if u8 else 127.0))
                    inv = torch.tensor(np.float32(1) / s)
                    t = xi * inv
                    t = t + tie * INT8_TIE * t.abs()
                    xi = torch.clamp(torch.round(t), 0 if u8 else -128,
                                     255 if u8 else 127) * float(s)
                    ws = w.abs().amax(dim=(1, 2, 3),
                                      keepdim=True) / self.weight_max
                    w = torch.round(w / ws) * ws
                    yi = F.conv2d(xi, w, m.bias, m.stride, m.padding)
                if knob["variant"] == "Samp":
                    # (int8: the quantized filter sampled.)
                    w = sample_filter(w, knob["rate"], knob["offset"])
                    parts.append(F.conv2d(xi, w, m.bias, m.stride,
                                          m.padding))
                else:
                    dim = 2 if knob["variant"] == "PerfRow" else 3
                    parts.append(perforate(yi, knob["rate"], knob["offset"],
                                           dim))
            return torch.cat(parts)

        handle = self.order[conv_index].register_forward_hook(approx)
        try:
            with torch.no_grad():
                out = self.model(self.x.repeat(len(slots), 1, 1, 1)).numpy()
        finally:
            handle.remove()
        got = {}
        for i, (knob, tie) in enumerate(slots):
            got[(knob["id"], tie)] = out[i * n:(i + 1) * n]
        for knob in knobs:
            central = got[(knob["id"], 0)]
            self.cache[(conv_index, knob["id"])] = central
            if knob["precision"] == "INT8":
                self.slacks[(conv_index, knob["id"])] = max(
                    rel_change(got[(knob["id"], tie)], central)
                    for tie in (1, -1))


def check_case(table, oracle, conv_index, knob_id, out, exact):
    """(change from exact, error against the reference algorithm or None,
    '' or why `out` is wrong for the knob)."""
    row = table.knobs[knob_id]
    change = rel_change(out, exact)
    if change == float("inf"):
        return change, None, "output has NaN or Inf"
    if row["variant"] == "Exact":
        if row["precision"] == "FP32":
            return change, None, ("" if change == 0 else
                                  f"fp32 must be exact, changed "
                                  f"{change:.3g}")
        if change == 0:
            return change, None, f"{row['name']} left the output unchanged"
        limit = oracle.int8_max if row["precision"].startswith("INT8") \
            else PRECISION_MAX
        if change > limit:
            return change, None, (f"{row['name']} changed the output by "
                                  f"{change:.3g} > {limit:g}")
        return change, None, ""
    approximate = [r for r in table.knobs.values() if r["variant"] != "Exact"]
    err = rel_change(out, oracle.output(conv_index, row, approximate))
    tol = ORACLE_TOL if row["precision"] in ("FP32", "INT8") else \
        PRECISION_MAX
    # (flips in both directions at once: up to both slacks)
    tol += 2 * oracle.slack(conv_index, row)
    if err > tol:
        return change, err, (f"{row['name']} rate {row['rate']} offset "
                             f"{row['offset']} differs from the reference "
                             f"algorithm by {err:.3g} of max|output| "
                             f"(tolerance {tol:g}; the exact output "
                             f"differs by {change:.3g})")
    return change, err, ""


# ONEDNN_MAX_CPU_ISA's values and the runtime's ISA levels (approx/Isa.h),
# lowest first.
ISA_LEVELS = ["avx2", "avx512", "avx512_vnni", "avx512_bf16", "amx"]
ISA_CAPS = {"AVX2": "avx2", "AVX512_CORE": "avx512",
            "AVX512_CORE_VNNI": "avx512_vnni",
            "AVX512_CORE_BF16": "avx512_bf16", "AVX512_CORE_AMX": "amx",
            "ALL": "amx"}


def isa_level():
    """The runtime's ISA level on this machine under ONEDNN_MAX_CPU_ISA:
    the CPU's (from /proc/cpuinfo, as oneDNN reads CPUID) capped."""
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f
                      if line.startswith("flags")), [])
    have = set(flags)
    level = "avx2"
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= have:
        level = "avx512"
        if "avx512_vnni" in have:
            level = "avx512_vnni"
            if "avx512_bf16" in have:
                level = "avx512_bf16"
                if {"amx_tile", "amx_int8", "amx_bf16"} <= have:
                    level = "amx"
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
    if cap not in ISA_CAPS:
        raise H.TestFailure(f"ONEDNN_MAX_CPU_ISA={cap}: the tests know "
                            f"{', '.join(ISA_CAPS)}")
    return min(level, ISA_CAPS[cap], key=ISA_LEVELS.index)


def cmd_sweep(args):
    import numpy as np
    import piped
    table = hpvmconf.OpTable(OPS_DEF)
    work = H.fresh_dir(os.path.join(args.workdir, "sweep", args.net))
    prep = prepare(args.net, work, args.images)
    out_dir = os.path.join(work, "out")
    extra = ["--batch-size", str(args.images)]
    if args.via == "inspect":
        extra += ["--target", "hpvm_tensor_inspect"]
    binary = export(args.exporter, prep, out_dir, extra)
    ours = fused_nodes(os.path.join(out_dir, "ops.json"), table)
    cases = sweep_cases(ours, table)
    exact_nodes = [(str(o), [(op, 11) for op in ops])
                   for o, (_, ops) in enumerate(ours, start=1)]
    texts = [hpvmconf.format_block(table, "conf0", exact_nodes)] + [
        hpvmconf.format_block(table, f"conf{i + 1}", case[-1])
        for i, case in enumerate(cases)]
    H.log(f"[{args.net}] {len(cases)} (node, op, knob) cases on "
          f"{len(ours)} fused nodes, {args.images} images, via {args.via}")

    run_dir = H.fresh_dir(os.path.join(work, "run"))
    # The int8 knob (311) quantizes with a calibration of the tune images.
    calib = os.path.join(work, "int8_calibration.txt")
    proc, cmd = run_binary(binary, run_dir, ["calibrate", "-q", "-o", calib])
    H.check_ok(proc, cmd, "int8 calibration")
    outputs = []
    if args.via == "inspect":
        app = piped.PipedBinary(binary, os.path.join(out_dir, "ops.json"),
                                run_dir, args=["--calibration", calib])
        try:
            for text in texts:
                out, _ = app.measure("0.0\n" + text, "test")
                outputs.append(out)
            status = app.stop()
        except piped.ProtocolError as e:
            raise H.TestFailure(f"{args.net}: {e}")
        finally:
            app.close()
        if status != 0:
            raise H.TestFailure(f"inspect binary exited {status} on 'stop'")
    else:
        conf = os.path.join(work, "sweep_confs.txt")
        hpvmconf.write(conf, texts)
        for i in range(len(texts)):
            npy = os.path.join(run_dir, "out.npy")
            proc, cmd = run_binary(binary, run_dir,
                                   ["test", "-c", conf, "--config", str(i),
                                    "--calibration", calib, "--output", npy,
                                    "--quiet"])
            H.check_ok(proc, cmd, f"configuration {i} of {conf}")
            outputs.append(load_output(npy, args.images))

    exact = outputs[0]
    _, err, worst = H.compare(exact, prep.ref)
    if err > H.TOLERANCE:
        raise H.TestFailure(f"{args.net}: the all-fp32 block's output "
                            f"differs from PyTorch by {err:.3g} at {worst}")
    # Position of each fused node's conv among the network's convolutions.
    conv_index, count = {}, 0
    for ordinal, (_, ops) in enumerate(ours, start=1):
        for j, op in enumerate(ops):
            if op == "conv":
                conv_index[(ordinal, j)] = count
                count += 1
    # The int8 knobs' ranges, by convolution index, from the calibration.
    ordinal_conv = {o: i for (o, j), i in conv_index.items() if j == 0}
    int8_ranges = {}
    with open(calib) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "node" and int(w[1]) in ordinal_conv:
                int8_ranges[ordinal_conv[int(w[1])]] = (float(w[3]),
                                                        float(w[4]))
    # The ISA level the program runs at, for the int8 weights.
    isa = isa_level()
    weight_max = 63 if isa in ("avx2", "avx512") else 127
    H.log(f"[{args.net}] ISA level {isa}: int8 weights up to {weight_max}")
    oracle = Oracle(prep, int8_ranges, weight_max)
    failures, by_family, report = [], {}, []
    for (what, ordinal, j, op, knob, _), out in zip(cases, outputs[1:]):
        if out.shape != exact.shape:
            failures.append(f"{what}: output shape {list(out.shape)}")
            continue
        change, err, why = check_case(table, oracle,
                                      conv_index.get((ordinal, j)), knob,
                                      out, exact)
        if why:
            failures.append(f"{what}: {why}")
        by_family.setdefault((op, table.knob_name(knob)), []).append(change)
        report.append({"node": ordinal, "op": op, "knob": knob,
                       "change": change, "reference_error": err,
                       "problem": why})
    with open(os.path.join(work, "sweep.json"), "w") as f:
        json.dump(report, f, indent=1)
    H.log(f"[{args.net}] output change (max|delta| / max|exact|) by op and "
          f"knob:")
    for (op, family), changes in sorted(by_family.items()):
        c = np.array(changes)
        H.log(f"  {op:>10} {family:>10}: {len(c):4d} cases, min {c.min():.3g}"
              f", median {np.median(c):.3g}, max {c.max():.3g}")
    errors = [r["reference_error"] for r in report
              if r["reference_error"] is not None and
              table.knobs[r["knob"]]["precision"] == "FP32"]
    if errors:
        H.log(f"[{args.net}] perforation/sampling (fp32) vs the reference "
              f"algorithm: max error {max(errors):.3g} of max|output| "
              f"(tolerance {ORACLE_TOL:g})")
    if failures:
        raise H.TestFailure(f"{args.net}: {len(failures)} of {len(cases)} "
                            f"knob cases wrong:\n  " +
                            "\n  ".join(failures[:40]) +
                            (f"\n  ({len(failures) - 40} more)"
                             if len(failures) > 40 else "") +
                            f"\n  files kept in {work}")
    H.log(f"[{args.net}] PASS: {len(cases)} knob cases: fp32 exact, fp16/"
          f"bf16 within {PRECISION_MAX:g}, int8 within "
          f"{oracle.int8_max:.3g}, "
          f"perforation and sampling equal the reference algorithm (int8 "
          f"perforation: on the quantized operands)")


# --- inspect ----------------------------------------------------------------

def cmd_inspect(args):
    import numpy as np
    import piped
    name = "lenet_mnist"
    table = hpvmconf.OpTable(OPS_DEF)
    conf = os.path.abspath(os.path.join(args.config_dir, name + ".txt"))
    _, blocks = hpvmconf.parse(conf)
    work = H.fresh_dir(os.path.join(args.workdir, "inspect"))
    # 10 test and 6 tune images in batches of 4: several records per
    # answer and a final partial batch.
    prep = prepare(name, work, 10, tune_images=6)
    normal = export(args.exporter, prep, os.path.join(work, "normal"),
                    ["--batch-size", "4"])
    inspect_dir = os.path.join(work, "inspect")
    inspect = export(args.exporter, prep, inspect_dir,
                     ["--batch-size", "4", "--target",
                      "hpvm_tensor_inspect"])

    # What the tuner would send: the exact program, then HPVM's own
    # approximate blocks for LeNet (fp16, perforation, sampling), each as a
    # one-block file with all ops listed, as predtuner writes them.
    def one_block(block, name):
        nodes = [(n.name, [(op, kid if knob not in ("fp32", "fp16") else
                            (11 if knob == "fp32" else 12))
                           for op, knob, kid in n.ops])
                 for n in block.nodes]
        return "0.0\n" + hpvmconf.format_block(
            table, name, nodes, header=(1.0, 1.0, 1.0, 0.0))

    requests = [(one_block(blocks[0], "conf0"), "test"),
                (one_block(blocks[16], "conf0"), "tune"),
                (one_block(blocks[1], "conf0"), "test"),
                (one_block(blocks[0], "conf0"), "tune")]
    failures = []
    normal_dir = H.fresh_dir(os.path.join(work, "normal_run"))
    expected = []
    for i, (text, dataset) in enumerate(requests):
        conf_i = os.path.join(normal_dir, f"conf_{i}.txt")
        with open(conf_i, "w") as f:
            f.write(text)
        npy = os.path.join(normal_dir, f"out_{i}.npy")
        proc, cmd = run_binary(normal, normal_dir,
                               [dataset, "-c", conf_i, "--output", npy,
                                "--quiet"])
        H.check_ok(proc, cmd, "normal binary")
        with open(os.path.join(normal_dir, "final_accuracy")) as f:
            expected.append((np.load(npy), f.read()))

    run_dir = H.fresh_dir(os.path.join(work, "inspect_run"))
    app = piped.PipedBinary(inspect, os.path.join(inspect_dir, "ops.json"),
                            run_dir)
    try:
        for i, ((text, dataset), (want, want_acc)) in enumerate(
                zip(requests, expected)):
            got, acc = app.measure(text, dataset)
            what = f"request {i + 1} ('{dataset}')"
            if got.shape != want.shape:
                failures.append(f"{what}: {list(got.shape)} outputs, the "
                                f"normal binary {list(want.shape)}")
            elif not np.array_equal(got, want):
                failures.append(f"{what}: outputs differ from the normal "
                                f"binary's by {rel_change(got, want):.3g}")
            if acc != want_acc:
                failures.append(f"{what}: final_accuracy '{acc}', the normal "
                                f"binary wrote '{want_acc}'")
            # One record per batch of 4, the last one partial, each an
            # N x classes x 1 x 1 tensor (HPVM's result shape).
            n = got.shape[0]
            shapes = [[min(4, n - b), 10, 1, 1] for b in range(0, n, 4)]
            if app.last_shapes != shapes:
                failures.append(f"{what}: records of shapes "
                                f"{app.last_shapes}, expected {shapes}")
            # The tuner's own QoS: top-1 of the outputs against the labels
            # (for tune, the file ops.json names) equals final_accuracy.
            if dataset == "tune":
                labels = np.fromfile(app.tune_labels_path, "<i4")
            else:
                labels = prep.labels
            mine = f"{top1_accuracy(got, labels):.6f}"
            if mine != acc:
                failures.append(f"{what}: top-1 of the received outputs is "
                                f"{mine}, final_accuracy says {acc}")
            H.log(f"[inspect] {what}: {got.shape[0]} outputs, "
                  f"final_accuracy {acc}")
        status = app.stop()
        if status != 0:
            failures.append(f"'stop' ended the binary with status {status}")
    except piped.ProtocolError as e:
        failures.append(str(e))
    finally:
        app.close()

    # A request other than test/tune/stop ends the binary with an error
    # that names it.
    bad_dir = H.fresh_dir(os.path.join(work, "bad_request"))
    app = piped.PipedBinary(inspect, os.path.join(inspect_dir, "ops.json"),
                            bad_dir)
    try:
        app.send("bogus")
        status = app.proc.wait(60)
        with open(app.log_path, errors="replace") as f:
            err = f.read()
        if status == 0 or "bogus" not in err:
            failures.append(f"request 'bogus': exit status {status}, "
                            f"stderr '{err.strip()}' (expected an error "
                            f"naming the request)")
    finally:
        app.close()
    if failures:
        raise H.TestFailure("inspect protocol:\n  " + "\n  ".join(failures) +
                            f"\n  files kept in {work}")
    H.log(f"[inspect] PASS: {len(requests)} requests answered as the normal "
          f"binary does; 'stop' and a bad request handled")


# --- table (measurement) ----------------------------------------------------

FASHION = "/usr/share/datasets/fashion-mnist"


def read_idx_gz(path):
    import gzip
    import numpy as np
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
            for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_lenet(epochs, train_images, seed):
    """HPVM's LeNet architecture trained on the first `train_images` images
    of Fashion-MNIST's training split (inputs scaled to [-1, 1]); returns
    (model, test images, test labels)."""
    import numpy as np
    import torch
    import nets
    torch.manual_seed(seed)
    xs = read_idx_gz(os.path.join(FASHION, "train-images-idx3-ubyte.gz"))
    ys = read_idx_gz(os.path.join(FASHION, "train-labels-idx1-ubyte.gz"))
    tx = read_idx_gz(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz"))
    ty = read_idx_gz(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz"))

    def norm(a):
        return torch.from_numpy((a.astype(np.float32) / 255 - 0.5) / 0.5)[
            :, None]

    x = norm(xs[:train_images])
    y = torch.from_numpy(ys[:train_images].astype(np.int64))
    model = nets.model("lenet_mnist").build()
    # The network ends in softmax: train on log of its output.
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 128):
            idx = perm[i:i + 128]
            loss = torch.nn.functional.nll_loss(
                torch.log(model(x[idx]) + 1e-9), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        H.log(f"[table] epoch {epoch + 1}/{epochs}: loss {float(loss):.3f}")
    return model.eval(), norm(tx).numpy(), ty.astype(np.int32)


def cmd_table(args):
    conf = os.path.abspath(os.path.join(args.config_dir, args.net + ".txt"))
    work = H.fresh_dir(os.path.join(args.workdir, "table", args.net))
    model = data = None
    if args.fashion_epochs:
        if args.net != "lenet_mnist":
            raise H.TestFailure("--fashion-epochs needs lenet_mnist")
        model, tx, ty = fashion_lenet(args.fashion_epochs,
                                      args.train_images, seed_of("table"))
        # HPVM's split: the test split's first half tunes, the rest tests.
        data = (tx[5000:5000 + args.images], ty[5000:5000 + args.images],
                tx[:8], ty[:8])
    prep = prepare(args.net, work, args.images, model=model, data=data)
    binary = export(args.exporter, prep, os.path.join(work, "out"),
                    ["--batch-size", str(args.batch)])
    cmd = [binary, "test", "-c", conf, "--all-configs", "--json",
           os.path.join(work, "all_configs.json")]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    proc = H.run(cmd, 3600, cwd=work, what="generated binary")
    H.check_ok(proc, cmd, "--all-configs run")
    print(proc.stdout, end="")


def cmd_list(args):
    for net in ACCEPT_NETS if args.kind == "accept" else SWEEP_NETS:
        print(net)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list")
    ls.add_argument("kind", choices=["accept", "sweep"])
    ls.set_defaults(fn=cmd_list)

    def common(sp):
        sp.add_argument("--exporter", required=True)
        sp.add_argument("--workdir", required=True)
        sp.add_argument("--config-dir", default=DEFAULT_CONFIG_DIR)

    sp = sub.add_parser("accept")
    sp.add_argument("net", choices=ACCEPT_NETS)
    sp.add_argument("--images", type=int, default=4)
    sp.add_argument("--batch", type=int, default=4)
    common(sp)
    sp.set_defaults(fn=cmd_accept)
    sp = sub.add_parser("sweep")
    sp.add_argument("net", choices=SWEEP_NETS)
    sp.add_argument("--images", type=int, default=2)
    sp.add_argument("--via", choices=["inspect", "run"], default="inspect")
    common(sp)
    sp.set_defaults(fn=cmd_sweep)
    sp = sub.add_parser("inspect")
    common(sp)
    sp.set_defaults(fn=cmd_inspect)
    sp = sub.add_parser("table")
    sp.add_argument("net", choices=ACCEPT_NETS)
    sp.add_argument("--images", type=int, default=300)
    sp.add_argument("--batch", type=int, default=100)
    sp.add_argument("--threads", type=int, default=0)
    sp.add_argument("--fashion-epochs", type=int, default=0)
    sp.add_argument("--train-images", type=int, default=12000)
    common(sp)
    sp.set_defaults(fn=cmd_table)
    args = p.parse_args()

    def guarded():
        try:
            args.fn(args)
        except hpvmconf.ConfFormatError as e:
            raise H.TestFailure(str(e))

    H.main_guard(guarded)


if __name__ == "__main__":
    main()
