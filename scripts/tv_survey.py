#!/usr/bin/python3
"""tv_survey.py - which torchvision 0.14 classification families go through
torch2hpvm-export, and exactly why the others do not (issue 11, Part 2).

For each family, its smallest model is exported as a PyTorch user does:
random weights (weights=None, then test_frontend/nets/init.py's calibrated
draw so that comparisons are meaningful), eval mode, torch.onnx.export at
opset 13 with do_constant_folding=True and torch's default TrainingMode.EVAL
(batch norm folded into the conv). Then `torch2hpvm-export MODEL.onnx
--tune ... --test ... -o DIR` generates and builds the program, its `test
--output` runs a few random images, and the outputs are compared with
PyTorch's (test_frontend/e2e/harness.py: max error 1e-4 of max|output|, same
top-1). The PyTorch side runs in a child process, so that every step has a
time limit.

Status per family and size (the first step that fails):
  export-failed    torch.onnx.export (or building the model) raised
  refused          the exporter rejected the model (exit 1); its lines
                   `node 'NAME' (Op, #i): reason` are kept verbatim
  build-failed     the generated program did not build (exporter exit 2)
  exporter-crashed the exporter died of a signal or timed out
  run-failed       the generated binary failed, timed out or wrote nothing
  mismatch         outputs differ from PyTorch's (error or top-1)
  ok               exports, builds, runs and matches

Besides the status, every model's ONNX graph is analysed: its op counts, the
op types the exporter's table (`torch2hpvm-export --list-ops json`) does not
accept, recognised patterns (decomposed LayerNorm and GELU, hardswish, SiLU,
squeeze-and-excitation scaling, channel shuffle and split, int64 shape
arithmetic), and "needs": every node of a missing op type or refused by the
exporter, grouped by signature (attributes; per input its rank, broadcast
pattern against the output, dtype and small constant values), with counts
and one exact example. --md renders the per-op to-do list from that.

Examples:
  scripts/tv_survey.py                               # all families, reduced
  scripts/tv_survey.py --families resnet,squeezenet --size 224
  scripts/tv_survey.py --size reduced --then-full  # + 224 where reduced is ok
  scripts/tv_survey.py --size reduced,full \
      --json test_frontend/tv_survey.json --md test_frontend/tv_survey.md
  scripts/tv_survey.py --from-json test_frontend/tv_survey.json --md OUT.md

The JSON has no timestamps or absolute paths, and a fixed order (family
table order, then size); only the timings vary between runs.
"""
import argparse
import collections
import json
import os
import re
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_FRONTEND = os.path.join(ROOT, "test_frontend")
sys.path.insert(0, TEST_FRONTEND)

import run_e2e  # noqa: E402  (seed_of, build_model, pick_inputs)
from e2e import harness as H  # noqa: E402

OPSET = 13
FULL = 224


class Family:
    """One torchvision family: its smallest model and the reduced input
    size it allows (`reduced` == 224 when it allows none)."""

    def __init__(self, key, name, model, reduced, kwargs=None, why=""):
        self.key, self.name, self.model = key, name, model
        self.reduced, self.kwargs, self.why = reduced, kwargs or {}, why

    def build_kwargs(self, size):
        kw = dict(self.kwargs)
        if self.model.startswith("vit_"):
            kw["image_size"] = size     # ViT's position embedding is sized
        return kw

    def build(self, size):
        import torchvision
        return getattr(torchvision.models, self.model)(
            weights=None, **self.build_kwargs(size))


NO_AUX = {"aux_logits": False, "init_weights": False}
ADAPTIVE = ("its AdaptiveAvgPool2d to {0}x{0} exports only when the feature "
            "map is a multiple of {0} (torch.onnx: 'output size that are not "
            "factor of input size'), i.e. at 224")
FAMILIES = [
    Family("alexnet", "AlexNet", "alexnet", FULL, why=ADAPTIVE.format(6)),
    Family("vgg", "VGG", "vgg11", FULL, why=ADAPTIVE.format(7)),
    Family("resnet", "ResNet", "resnet18", 64),
    Family("resnext", "ResNeXt", "resnext50_32x4d", 64),
    Family("wide_resnet", "Wide ResNet", "wide_resnet50_2", 64),
    Family("squeezenet", "SqueezeNet", "squeezenet1_1", 64),
    Family("densenet", "DenseNet", "densenet121", 64),
    Family("googlenet", "GoogLeNet", "googlenet", 64, NO_AUX),
    Family("inception_v3", "Inception v3", "inception_v3", 96, NO_AUX,
           why="needs at least 75x75"),
    Family("shufflenet_v2", "ShuffleNet v2", "shufflenet_v2_x0_5", 64),
    Family("mobilenet_v2", "MobileNet v2", "mobilenet_v2", 64),
    Family("mobilenet_v3", "MobileNet v3", "mobilenet_v3_small", 64),
    Family("mnasnet", "MNASNet", "mnasnet0_5", 64),
    Family("efficientnet", "EfficientNet v1", "efficientnet_b0", 64),
    Family("efficientnet_v2", "EfficientNet v2", "efficientnet_v2_s", 64),
    Family("regnet", "RegNet", "regnet_y_400mf", 64),
    Family("regnet_x", "RegNet (X, no SE)", "regnet_x_400mf", 64,
           why="RegNet without squeeze-and-excitation"),
    Family("convnext", "ConvNeXt", "convnext_tiny", 64),
    Family("vit", "ViT", "vit_b_16", 64,
           why="image_size=<size> (16x16 patches)"),
    Family("swin", "Swin", "swin_t", 64),
]
STATUSES = ("export-failed", "refused", "build-failed", "exporter-crashed",
            "run-failed", "mismatch", "ok")


def family(key):
    for f in FAMILIES:
        if f.key == key:
            return f
    raise SystemExit(f"unknown family '{key}' (known: "
                     f"{', '.join(f.key for f in FAMILIES)})")


def select_families(spec):
    """`--families a,b=model`: keys, each optionally with another model of
    the family."""
    if not spec:
        return list(FAMILIES)
    out = []
    for item in spec.split(","):
        key, _, model = item.strip().partition("=")
        f = family(key)
        if model:
            f = Family(f.key, f.name, model, f.reduced, f.kwargs, f.why)
        out.append(f)
    return out


# ---------------------------------------------------------------------------
# PyTorch side (child process: `--pytorch-step`)

def pytorch_step(args):
    """Builds, randomizes and exports one model; writes the datasets, the
    reference outputs and pytorch.json (seconds, or the error) to --workdir.
    Exit status 0 even when the export fails: pytorch.json says why."""
    import numpy as np
    f = select_families(args.families)[0]
    size, work = args.one_size, args.workdir
    shape = (3, size, size)
    info = {"error": None}
    seed = run_e2e.seed_of(f"tv_survey:{f.model}@{size}")
    t0 = time.monotonic()
    stage = "building the model"
    try:
        model = run_e2e.build_model(lambda: f.build(size), shape, seed,
                                    4 if size >= 160 else 8)
        info["build_seconds"] = time.monotonic() - t0
        stage = "torch.onnx.export"
        t1 = time.monotonic()
        H.export_onnx(model, shape, OPSET, os.path.join(work, stem(f, size)
                                                        + ".onnx"),
                      **H.EXPORTS["pytorch"])
        info["export_seconds"] = time.monotonic() - t1
        stage = "choosing test inputs"
        x, ref = run_e2e.pick_inputs(model, shape, args.images, seed)
        tx, tref = run_e2e.pick_inputs(model, shape, 2, seed + 100)
    except Exception as e:  # noqa: BLE001 - the survey records any failure
        info["error"] = f"{stage}: {type(e).__name__}: {first_line(e)}"
        write_json(os.path.join(work, "pytorch.json"), info)
        return
    H.write_dataset(work, "test", x, np.argmax(ref, axis=1).astype(np.int32))
    H.write_dataset(work, "tune", tx, np.argmax(tref, axis=1).astype(np.int32))
    np.save(os.path.join(work, "expected.npy"), ref)
    write_json(os.path.join(work, "pytorch.json"), info)


def first_line(e):
    text = str(e).strip().splitlines()
    return text[0][:400] if text else ""


def stem(f, size):
    return f"{f.model}_{size}"


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=False)
        fh.write("\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# ONNX analysis

ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Where", "Mod",
               "And", "Or", "Max", "Min", "Sum", "Greater", "Less"}
# Constant inputs whose values are part of the operator's meaning (shown in
# signatures when at most 8 long): op -> input indices.
STRUCTURAL_INPUTS = {"Slice": {3, 4}, "Pad": {1, 2}, "Unsqueeze": {1},
                     "Squeeze": {1}, "Clip": {1, 2}, "ReduceMean": {1},
                     "Split": {1}, "Resize": {1, 2, 3}}
DTYPES = {1: "", 6: "i32:", 7: "i64:", 9: "bool:", 10: "f16:", 11: "f64:"}
VARIADIC = {"Concat", "Sum", "Max", "Min", "Mean"}
# Table ops whose accepted form is all torchvision uses of them.
TRIVIAL = {"Conv", "Relu", "BatchNormalization", "Identity", "Constant",
           "Dropout", "Gemm", "Flatten", "GlobalAveragePool", "Tanh"}
# Pattern labels of nodes that compute no activation.
FOLDS = "folds to a constant"
RUNTIME_INT = "int64/bool value computed at run time"
# The exporter's refusal of a node: one per line under "N unsupported
# nodes:", or after "error: MODEL: " when it is the only one.
REFUSAL = re.compile(r"node '(.*?)' \((\w+), #(\d+)\): (.*)$")


def clip(text, limit):
    return text if len(text) <= limit else text[:limit] + " ..."


def number_free(reason):
    """A refusal reason with its sizes as N (attribute values kept:
    'ceil_mode=1 changes the output height (N instead of N)')."""
    return re.sub(r"(?<![=\w])\d+", "N", reason)


def fmt_num(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def fmt_value(v):
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(fmt_value(x) for x in v) + "]"
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    return fmt_num(v)


NP_ELEM = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7,
           "bool": 9, "float16": 10, "float64": 11}
FOLD_LIMIT = 1 << 20        # largest value (elements) the survey folds


def fold_node(node, ins):
    """The value of `node` (one output) from constant inputs `ins` (None
    for an absent optional input), with numpy; None for ops it does not
    know. Covers what shape arithmetic in exported models uses."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    op = node.op_type
    at = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    def axes_of(k):
        if "axes" in at:
            return list(at["axes"])
        return ins[k].tolist() if len(ins) > k and ins[k] is not None \
            else None
    binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
              "Equal": np.equal, "Less": np.less, "Greater": np.greater,
              "And": np.logical_and, "Or": np.logical_or,
              "Max": np.maximum, "Min": np.minimum}
    unary = {"Neg": np.negative, "Not": np.logical_not, "Sqrt": np.sqrt,
             "Abs": np.abs, "Floor": np.floor, "Ceil": np.ceil,
             "Identity": lambda a: a}
    if op == "Constant":
        return numpy_helper.to_array(at["value"]) if "value" in at else None
    if op in binary:
        out = binary[op](ins[0], ins[1])
        return out.astype(ins[0].dtype) if op in ("Add", "Sub", "Mul",
                                                  "Max", "Min") else out
    if op in unary:
        return np.asarray(unary[op](ins[0]))
    if op == "Div":
        a, b = ins
        if np.issubdtype(a.dtype, np.integer):
            return (np.trunc(a / b)).astype(a.dtype)
        return (a / b).astype(a.dtype)
    if op == "Mod":
        return (np.fmod if at.get("fmod", 0) else np.mod)(ins[0], ins[1])
    if op == "Pow":
        return np.power(ins[0].astype(np.float64), ins[1]).astype(
            ins[0].dtype)
    if op == "Cast":
        return ins[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[at["to"]])
    if op == "Gather":
        return np.take(ins[0], ins[1], axis=at.get("axis", 0))
    if op == "Unsqueeze":
        axes = axes_of(1)
        rank = ins[0].ndim + len(axes)
        out = ins[0]
        for ax in sorted(a % rank for a in axes):
            out = np.expand_dims(out, ax)
        return out
    if op == "Squeeze":
        axes = axes_of(1)
        return np.squeeze(ins[0], axis=None if axes is None else tuple(axes))
    if op == "Concat":
        return np.concatenate(ins, axis=at["axis"])
    if op == "Slice":
        data, starts, ends = ins[0], ins[1], ins[2]
        axes = ins[3] if len(ins) > 3 and ins[3] is not None \
            else np.arange(len(starts))
        steps = ins[4] if len(ins) > 4 and ins[4] is not None \
            else np.ones(len(starts), dtype=np.int64)
        index = [slice(None)] * data.ndim
        for st, en, ax, sp in zip(starts, ends, axes, steps):
            index[int(ax)] = slice(int(st), int(en), int(sp))
        return data[tuple(index)]
    if op == "Range":
        return np.arange(ins[0], ins[1], ins[2]).astype(ins[0].dtype)
    if op == "Where":
        return np.where(ins[0], ins[1], ins[2])
    if op == "Expand":
        shape = np.broadcast_shapes(ins[0].shape, tuple(ins[1].tolist()))
        return np.broadcast_to(ins[0], shape).copy()
    if op == "ConstantOfShape":
        fill = numpy_helper.to_array(at["value"]) if "value" in at \
            else np.zeros(1, np.float32)
        return np.full(tuple(ins[0].tolist()), fill.reshape(-1)[0],
                       dtype=fill.dtype)
    if op == "Reshape":
        shape = [d if d != 0 else ins[0].shape[i]
                 for i, d in enumerate(ins[1].tolist())]
        return ins[0].reshape(shape)
    if op == "Transpose":
        return np.transpose(ins[0], at.get("perm"))
    if op == "ScatterND":
        data, idx, upd = ins
        out = data.copy()
        flat = idx.reshape(-1, idx.shape[-1])
        upd = upd.reshape((flat.shape[0],) + data.shape[idx.shape[-1]:])
        for i, ix in enumerate(flat):
            out[tuple(ix)] = upd[i]
        return out
    return None


class Graph:
    """The model's nodes with shapes, constants and producer/consumer links.
    Shapes come from ONNX shape inference, alternated with folding every
    node whose inputs are all constant (mostly int64 shape arithmetic that
    PyTorch's constant folding left, e.g. Swin's): folded values let the
    inference see through Reshape, Slice, Expand... `folded` holds the
    indices of the nodes that fold to a constant."""

    def __init__(self, path):
        import onnx
        from onnx import numpy_helper
        model = onnx.load(path)
        g = model.graph
        self.nodes = list(g.node)
        self.consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        self.folded = set()
        self.types = {}     # value -> (elem type, dims or None)
        self.rounds = 0
        while self.rounds < 200:    # a round per Shape -> Reshape level
            self.rounds += 1
            self._infer(model)
            if not self._fold():
                break
        for name, arr in self.consts.items():
            self.types[name] = (NP_ELEM.get(str(arr.dtype), 0),
                                list(arr.shape))
        self.producer = {o: n for n in self.nodes for o in n.output}
        self.consumers = collections.defaultdict(list)
        for n in self.nodes:
            for i in n.input:
                self.consumers[i].append(n)

    def _infer(self, model):
        """ONNX shape inference on the model with the folded nodes replaced
        by their values (weights stand in as inputs, for speed)."""
        from onnx import helper, numpy_helper, shape_inference
        g = model.graph
        small, inputs = [], list(g.input)
        known = {i.name for i in g.input}
        for name, arr in self.consts.items():
            if arr.size <= 4096:
                small.append(numpy_helper.from_array(arr, name))
            elif name not in known:
                inputs.append(helper.make_tensor_value_info(
                    name, NP_ELEM.get(str(arr.dtype), 1), list(arr.shape)))
        nodes = [n for k, n in enumerate(self.nodes) if k not in self.folded]
        light = helper.make_model(
            helper.make_graph(nodes, g.name, inputs, list(g.output), small),
            opset_imports=model.opset_import)
        light.ir_version = model.ir_version
        try:
            light = shape_inference.infer_shapes(light, data_prop=True)
        except Exception:  # noqa: BLE001 - shapes are best effort
            pass
        lg = light.graph
        for vi in list(lg.input) + list(lg.value_info) + list(lg.output):
            t = vi.type.tensor_type
            dims = None
            if t.HasField("shape"):
                dims = [d.dim_value if d.HasField("dim_value") else "?"
                        for d in t.shape.dim]
            self.types[vi.name] = (t.elem_type, dims)

    def _fold(self):
        """Folds what it can; True when anything new folded."""
        progress = False
        for k, n in enumerate(self.nodes):
            if k in self.folded:
                continue
            value = None
            if n.op_type == "Shape":
                arr = self.consts.get(n.input[0])
                dims = list(arr.shape) if arr is not None \
                    else self.dims(n.input[0])
                if dims is not None and "?" not in dims:
                    import numpy as np
                    value = np.array(dims, dtype=np.int64)
            elif all(not i or i in self.consts for i in n.input):
                try:
                    value = fold_node(n, [self.consts.get(i) if i else None
                                          for i in n.input])
                except Exception:  # noqa: BLE001 - not foldable here
                    value = None
            if value is None or value.size > FOLD_LIMIT:
                continue
            self.consts[n.output[0]] = value
            self.folded.add(k)
            progress = True
        return progress

    def dims(self, value):
        return self.types.get(value, (0, None))[1]

    def elem(self, value):
        return self.types.get(value, (0, None))[0]

    def scalar(self, value):
        """The value of a one-element constant, else None."""
        arr = self.consts.get(value)
        if arr is not None and arr.size == 1:
            return float(arr.reshape(-1)[0])
        return None

    def only_consumer(self, value, op):
        users = [n for n in self.consumers.get(value, ())
                 if n.op_type == op]
        return users[0] if len(users) == 1 else None

    def other_input(self, node, value):
        rest = [i for i in node.input if i != value]
        return rest[0] if len(rest) == 1 else None


def attrs_of(node):
    import onnx
    out = []
    for a in sorted(node.attribute, key=lambda a: a.name):
        if a.type in (onnx.AttributeProto.TENSOR, onnx.AttributeProto.GRAPH,
                      onnx.AttributeProto.TENSORS,
                      onnx.AttributeProto.GRAPHS):
            continue
        out.append(f"{a.name}={fmt_value(onnx.helper.get_attribute_value(a))}")
    return out


def input_tag(g, node, k, value, out_dims):
    """One input in a signature: dtype prefix, then a scalar constant's
    value, a structural constant's values, or the shape as a pattern: '*'
    per axis, '1' where it broadcasts against the output (elementwise ops),
    prefixed by 'c' for constants; '?' when unknown."""
    if not value:
        return "-"
    prefix = DTYPES.get(g.elem(value), "?:")
    arr = g.consts.get(value)
    if arr is not None:
        if node.op_type == "Slice" and k in (1, 2):
            return prefix + "c"     # starts, ends: differ from node to node
        if arr.size == 1:
            return prefix + fmt_num(arr.reshape(-1)[0].item())
        if k in STRUCTURAL_INPUTS.get(node.op_type, ()) and arr.size <= 8:
            return prefix + fmt_value(arr.reshape(-1).tolist())
    dims = g.dims(value)
    if dims is None:
        return prefix + ("c" if arr is not None else "") + "?"
    if node.op_type in ELEMENTWISE and out_dims is not None:
        pad = [None] * (len(out_dims) - len(dims)) + list(out_dims)
        marks = ["1" if d == 1 and pad[len(pad) - len(dims) + j] != 1
                 else "*" for j, d in enumerate(dims)]
    else:
        marks = ["*"] * len(dims)
    return prefix + ("c" if arr is not None else "") + \
        "[" + ",".join(marks) + "]"


def exact_shapes(g, node):
    def one(v):
        if not v:
            return "-"
        arr = g.consts.get(v)
        if arr is not None and arr.size <= 8:
            return "const " + fmt_value(arr.reshape(-1).tolist()) \
                if arr.ndim else "const " + fmt_num(arr.item())
        d = g.dims(v)
        return "?" if d is None else "[" + ",".join(map(str, d)) + "]"
    ins = ", ".join(one(v) for v in node.input)
    outs = ", ".join(one(v) for v in node.output)
    return f"{ins} -> {outs}"


def find_patterns(g):
    """{node name: pattern label} for the multi-node forms the exporter
    writes for LayerNorm, GELU, hardswish, SiLU, squeeze-and-excitation
    scaling, channel shuffle / split and int64 shape arithmetic, and a
    summary {pattern description: count}."""
    label, summary = {}, collections.Counter()

    def mark(nodes, name):
        for n in nodes:
            label.setdefault(n.name, name)

    folds = collections.Counter()
    for k, n in enumerate(g.nodes):
        if k in g.folded and n.op_type not in ("Constant", "Identity"):
            mark([n], FOLDS)
            folds[n.op_type] += 1
    if folds:
        summary[f"{FOLDS}: " + ", ".join(
            f"{op} {c}" for op, c in sorted(folds.items()))] = \
            sum(folds.values())
    for n in g.nodes:
        op = n.op_type
        if label.get(n.name) == FOLDS:
            continue
        if op == "ReduceMean" and n.name not in label:
            x = n.input[0]
            sub = next((s for s in g.consumers.get(n.output[0], ())
                        if s.op_type == "Sub" and list(s.input) ==
                        [x, n.output[0]]), None)
            pow_ = sub and g.only_consumer(sub.output[0], "Pow")
            var = pow_ and g.only_consumer(pow_.output[0], "ReduceMean")
            add = var and g.only_consumer(var.output[0], "Add")
            sqrt = add and g.only_consumer(add.output[0], "Sqrt")
            div = sqrt and g.only_consumer(sqrt.output[0], "Div")
            if not (div and list(div.input) == [sub.output[0],
                                                sqrt.output[0]]
                    and g.scalar(pow_.input[1]) == 2.0):
                continue
            chain = [n, sub, pow_, var, add, sqrt, div]
            mul = g.only_consumer(div.output[0], "Mul")
            beta = mul and g.only_consumer(mul.output[0], "Add")
            affine = bool(mul and beta
                          and g.other_input(mul, div.output[0]) in g.consts
                          and g.other_input(beta, mul.output[0]) in g.consts)
            if affine:
                chain += [mul, beta]
            eps = g.scalar(g.other_input(add, var.output[0]))
            axes = next((a for a in attrs_of(n) if a.startswith("axes=")),
                        "axes=?")
            dims = g.dims(x)
            rank = len(dims) if dims is not None else "?"
            mark(chain, "layernorm")
            summary[f"LayerNorm (ReduceMean, Sub, Pow 2, ReduceMean, Add "
                    f"eps, Sqrt, Div{', Mul, Add' if affine else ''}): "
                    f"{axes} on rank {rank}, eps {fmt_num(eps)}"] += 1
        elif op == "Erf":
            div = g.producer.get(n.input[0])
            add = g.only_consumer(n.output[0], "Add")
            mul = add and g.only_consumer(add.output[0], "Mul")
            half = mul and g.only_consumer(mul.output[0], "Mul")
            if (div is not None and div.op_type == "Div" and half
                    and div.input[0] in mul.input
                    and g.scalar(add.input[1]) == 1.0
                    and g.scalar(half.input[1]) == 0.5):
                mark([div, n, add, mul, half], "gelu")
                summary[f"GELU (Div by {fmt_num(g.scalar(div.input[1]))}, "
                        f"Erf, Add 1, Mul x, Mul 0.5)"] += 1
        elif op in ("HardSigmoid", "Sigmoid"):
            x = n.input[0]
            mul = next((m for m in g.consumers.get(n.output[0], ())
                        if m.op_type == "Mul"), None)
            if mul is None:
                continue
            other = g.other_input(mul, n.output[0])
            if other == x:
                name = "hardswish" if op == "HardSigmoid" else "silu"
                mark([n, mul], name)
                summary[f"{name} ({op}, Mul by its input)"
                        + (f": {', '.join(attrs_of(n))}"
                           if attrs_of(n) else "")] += 1
                continue
            gd, xd = g.dims(n.output[0]), g.dims(other)
            if gd and xd and len(gd) == 4 and gd[2:] == [1, 1] \
                    and xd[2:] != [1, 1]:
                src = g.producer.get(x)
                mark([n, mul], "se-scale")
                summary[f"squeeze-and-excitation scale ({op} of a "
                        f"{src.op_type if src else '?'}, Mul [N,C,H,W] by "
                        f"[N,C,1,1])"] += 1
        elif op == "Transpose":
            before = g.producer.get(n.input[0])
            after = g.only_consumer(n.output[0], "Reshape")
            dims = g.dims(n.input[0])
            if before is not None and before.op_type == "Reshape" and after \
                    and dims is not None and len(dims) == 5:
                mark([before, n, after], "channel-shuffle")
                summary[f"channel shuffle (Reshape to rank 5, Transpose "
                        f"{attrs_of(n)[0]}, Reshape back)"] += 1
        elif op in ("Slice", "Split"):
            axis = None
            if op == "Slice" and len(n.input) > 3:
                axes = g.consts.get(n.input[3])
                if axes is not None and axes.size == 1:
                    axis = int(axes.reshape(-1)[0])
            elif op == "Split":
                axis = next((int(a[5:]) for a in attrs_of(n)
                             if a.startswith("axis=")), 0)
            dims = g.dims(n.input[0])
            if axis == 1 and dims is not None and len(dims) == 4:
                mark([n], "axis-1 split")
                summary[f"{op} on axis 1 of a rank-4 tensor (the channels "
                        f"if NCHW: ShuffleNet's channel split)"] += 1
    for k, n in enumerate(g.nodes):
        if n.name not in label and n.output and k not in g.folded and \
                g.elem(n.output[0]) in (6, 7, 9):
            label[n.name] = RUNTIME_INT
            summary[f"{RUNTIME_INT}: {n.op_type}"] += 1
    return label, dict(sorted(summary.items()))


def analyse(onnx_path, table_ops, refused):
    """ONNX facts of one model; `refused`: {node name: (op, reason)}. Its
    "needs" group the nodes of op types missing from the table, the nodes
    the exporter refused, and (in_table) the run-time nodes of the table's
    ops whose general form goes beyond HPVM's (all but TRIVIAL), whose
    ranks, axes and attributes the lowering will have to handle."""
    g = Graph(onnx_path)
    counts = collections.Counter(n.op_type for n in g.nodes)
    label, patterns = find_patterns(g)
    groups = {}
    for k, n in enumerate(g.nodes):
        in_table = n.op_type in table_ops
        if in_table and n.name not in refused and (
                k in g.folded or n.op_type in TRIVIAL):
            continue
        out_dims = g.dims(n.output[0]) if n.output else None
        ins = [input_tag(g, n, k, v, out_dims) for k, v in enumerate(n.input)]
        if n.op_type in VARIADIC:   # Concat of 2 or 24: one group
            ins = [("n x " if ins.count(t) > 1 else "") + t
                   for t in dict.fromkeys(ins)]
        outs = [input_tag(g, n, 0, v, None) for v in n.output]
        sig = n.op_type + "(" + ", ".join(attrs_of(n) + ins) + ") -> " + \
            ", ".join(outs)
        if label.get(n.name) in (FOLDS, RUNTIME_INT):
            sig = f"{n.op_type}(...)"   # one group: the values do not matter
        reason = ""
        if n.name in refused and n.op_type in table_ops:
            reason = number_free(refused[n.name][1])
        key = (n.op_type, sig, label.get(n.name, ""), reason)
        if key not in groups:
            groups[key] = {"op": n.op_type, "in_table": in_table,
                           "signature": sig, "pattern": key[2],
                           "refused_because": reason, "count": 0,
                           "example": clip(f"'{n.name}': "
                                           f"{exact_shapes(g, n)}", 300)}
        groups[key]["count"] += 1
        if n.op_type in VARIADIC:
            seen = groups[key].setdefault("inputs", [])
            if len(n.input) not in seen:
                seen.append(len(n.input))
                seen.sort()
    return {
        "nodes": len(g.nodes),
        "ops": dict(sorted(counts.items())),
        "missing_ops": sorted(op for op in counts if op not in table_ops),
        "missing_ops_run_time": sorted({
            n.op_type for k, n in enumerate(g.nodes)
            if n.op_type not in table_ops and k not in g.folded}),
        "patterns": patterns,
        "needs": [groups[k] for k in sorted(groups)],
    }


# ---------------------------------------------------------------------------
# One family at one size

def table_ops(exporter):
    proc = H.run([exporter, "--list-ops", "json"], 60, what="--list-ops")
    H.check_ok(proc, [exporter, "--list-ops", "json"], "--list-ops")
    return sorted(r["onnx_op"] for r in json.loads(proc.stdout)["onnx_ops"])


def scrub(text, work):
    """A tool's output without absolute paths: the survey's scratch
    directory and the repository."""
    text = text.replace(work + os.sep, "").replace(work, ".")
    return text.replace(ROOT + os.sep, "").replace(ROOT, ".")


def survey_one(f, size, args, table, say):
    rec = collections.OrderedDict(
        family=f.name, key=f.key, model=f.model, size=size,
        kwargs=f.build_kwargs(size), note=f.why, status=None, reason="",
        missing_ops=[], missing_ops_run_time=[], refusal_count=0,
        refusal_summary={}, refusals=[], check=None, seconds={},
        onnx_mb=None, onnx=None)
    work = H.fresh_dir(os.path.join(args.workdir, stem(f, size)))
    try:
        run_steps(f, size, args, table, work, rec, say)
    finally:
        if args.keep:
            say(f"  files kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return rec


def finish(rec, status, reason):
    assert status in STATUSES, status
    rec["status"], rec["reason"] = status, reason
    return rec


def run_steps(f, size, args, table, work, rec, say):
    import numpy as np
    secs = rec["seconds"]
    cmd = [sys.executable, os.path.abspath(__file__), "--pytorch-step",
           "--families", f"{f.key}={f.model}", "--one-size", str(size),
           "--workdir", work, "--images", str(args.images)]
    t0 = time.monotonic()
    try:
        proc = H.run(cmd, args.export_timeout, what="PyTorch export")
    except H.TestFailure:
        return finish(rec, "export-failed", f"PyTorch side timed out after "
                      f"{args.export_timeout} s")
    secs["pytorch"] = round(time.monotonic() - t0, 1)
    info_path = os.path.join(work, "pytorch.json")
    if proc.returncode != 0 or not os.path.isfile(info_path):
        return finish(rec, "export-failed", "PyTorch side failed ("
                      f"{H.status_text(proc.returncode)}): "
                      + scrub(H.tail(proc.stderr, 3).strip(), work))
    with open(info_path) as fh:
        info = json.load(fh)
    if "export_seconds" in info:
        secs["onnx_export"] = round(info["export_seconds"], 1)
    onnx_path = os.path.join(work, stem(f, size) + ".onnx")
    if os.path.isfile(onnx_path):
        rec["onnx_mb"] = round(os.path.getsize(onnx_path) / 2**20, 1)
    if info["error"] and not os.path.isfile(onnx_path):
        return finish(rec, "export-failed", info["error"])
    say(f"  exported ({secs['pytorch']:.1f} s)")

    cmd = H.export_cmd(args.exporter, onnx_path,
                       os.path.join(work, "tune_input.bin"),
                       os.path.join(work, "test_input.bin"),
                       os.path.join(work, "out"),
                       ["--batch-size", str(args.batch)])
    refused = {}
    try:
        proc = H.run(cmd, args.build_timeout, what="torch2hpvm-export")
    except H.TestFailure:
        proc = None
    if proc is not None:
        secs["exporter"] = round(proc.seconds, 1)
        summary = collections.Counter()
        for line in proc.stderr.splitlines():
            m = REFUSAL.search(line)
            if m:
                if not args.max_refusals or \
                        len(rec["refusals"]) < args.max_refusals:
                    rec["refusals"].append(m.group(0))
                refused[m.group(1)] = (m.group(2), m.group(4))
                summary[f"{m.group(2)}: {number_free(m.group(4))}"] += 1
        rec["refusal_count"] = len(refused)
        rec["refusal_summary"] = dict(sorted(summary.items(),
                                             key=lambda kv: (-kv[1], kv[0])))
    t0 = time.monotonic()
    try:
        facts = analyse(onnx_path, set(table), refused)
    except Exception as e:  # noqa: BLE001 - report, go on with the rest
        facts = {"error": f"{type(e).__name__}: {first_line(e)}",
                 "needs": []}
    secs["analysis"] = round(time.monotonic() - t0, 1)
    rec["missing_ops"] = facts.get("missing_ops", [])
    rec["missing_ops_run_time"] = facts.get("missing_ops_run_time", [])
    rec["onnx"] = facts
    if info["error"]:   # exported, but no usable reference inputs
        return finish(rec, "export-failed", info["error"])
    if proc is None:
        return finish(rec, "exporter-crashed", f"torch2hpvm-export timed "
                      f"out after {args.build_timeout} s")
    message = scrub(proc.stderr.strip(), work)
    first = message.splitlines()[0] if message else ""
    if proc.returncode == 1:
        return finish(rec, "refused", first if not refused else
                      f"{len(refused)} nodes; first: {rec['refusals'][0]}")
    if proc.returncode == 2:
        return finish(rec, "build-failed",
                      scrub(H.tail(proc.stderr, 15), work).strip())
    if proc.returncode != 0:
        return finish(rec, "exporter-crashed",
                      f"{H.status_text(proc.returncode)}: {first}")
    say(f"  exported and built ({secs['exporter']:.1f} s)")

    run_dir = H.fresh_dir(os.path.join(work, "run"))
    try:
        ours, _, proc = H.run_binary(
            H.binary_path(os.path.join(work, "out"), stem(f, size)), run_dir,
            os.path.join(run_dir, "output.npy"), args.run_timeout,
            ["--batch-size", str(args.batch)])
    except H.TestFailure as e:
        return finish(rec, "run-failed", scrub(str(e), work)[:2000])
    secs["run"] = round(proc.seconds, 1)
    ref = np.load(os.path.join(work, "expected.npy"))
    try:
        _, rel, worst = H.compare(ours, ref)
    except H.TestFailure as e:
        return finish(rec, "mismatch", scrub(str(e), work))
    ours = ours.reshape(ref.shape)
    agree = int(np.sum(np.argmax(ours, 1) == np.argmax(ref, 1)))
    rec["check"] = {"images": int(ref.shape[0]),
                    "max_rel_error": float(f"{rel:.3g}"),
                    "top1_agree": agree}
    problems = []
    if rel > H.TOLERANCE:
        problems.append(f"error {rel:.3g} of max|output| at "
                        f"{tuple(int(i) for i in worst)} (tolerance "
                        f"{H.TOLERANCE:g})")
    if agree != ref.shape[0]:
        problems.append(f"top-1 agrees on {agree} of {ref.shape[0]} images")
    if problems:
        return finish(rec, "mismatch", "; ".join(problems))
    facts["needs"] = []     # nothing: it works
    return finish(rec, "ok", f"max error {rel:.3g} of max|output|, top-1 "
                f"{agree}/{ref.shape[0]}")


# ---------------------------------------------------------------------------
# Reports

def short_reasons(rec, limit=3):
    """Distinct refusal reasons (numbers as N), most frequent first."""
    top = [f"{r} (x{c})" for r, c in rec["refusal_summary"].items()]
    if len(top) > limit:
        top = top[:limit] + [f"... {len(top) - limit} more"]
    return top


def missing_text(r):
    """'Transpose Slice (+ folded only: Div Mul)'."""
    run = r["missing_ops_run_time"]
    only = [o for o in r["missing_ops"] if o not in run]
    text = " ".join(run) or "-"
    return text + (f" (+ folded only: {' '.join(only)})" if only else "")


def print_table(records, out=sys.stdout):
    rows = [("family", "model", "size", "status", "s", "missing ops")]
    for r in records:
        total = sum(r["seconds"].values())
        rows.append((r["family"], r["model"], str(r["size"]), r["status"],
                     f"{total:.0f}", missing_text(r)))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  "
              + row[5], file=out)


def markdown(doc):
    recs = doc["results"]
    notes = collections.OrderedDict(
        (r["family"], r["note"]) for r in recs if r.get("note"))
    out = ["# torchvision 0.14 classifiers through torch2hpvm-export",
           "",
           "Generated by `scripts/tv_survey.py` (" + doc["recipe"] + "). "
           "Status: the first step that fails; see the script's --help. "
           "Missing ops: ONNX op types of the model that the exporter's "
           "table does not accept, computing at run time; '+ folded only': "
           "missing op types whose every node computes on constants alone "
           "(shape arithmetic that a fuller constant folder would remove). "
           "Details (refusal lines, node signatures, timings) are in "
           "`tv_survey.json`. Regenerate with `scripts/tv_survey.py --size "
           "reduced,full --json test_frontend/tv_survey.json --md "
           "test_frontend/tv_survey.md` (25 minutes on 2 busy cores); "
           "`--from-json` re-renders this file.",
           ""] + [f"- {f}: {note}" for f, note in notes.items()] + [
           "",
           "| family | model | size | status | missing ONNX ops | "
           "refusal reasons (first) |",
           "|---|---|---|---|---|---|"]
    for r in recs:
        why = "; ".join(short_reasons(r)) if r["refusal_summary"] \
            else r["reason"]
        why = why.replace("|", "\\|").replace("\n", " ")
        if len(why) > 400:
            why = why[:400] + " ..."
        out.append(f"| {r['family']} | {r['model']} | {r['size']} | "
                   f"{r['status']} | {missing_text(r)} | "
                   f"{why} |")
    # Per op: which families need it, with which signatures. A family
    # surveyed at two sizes counts once (its larger count).
    need, in_table = collections.OrderedDict(), {}
    for r in recs:
        for n in (r["onnx"] or {}).get("needs", []):
            in_table[n["op"]] = n["in_table"]
            by_sig = need.setdefault(n["op"], collections.OrderedDict())
            key = (n["signature"], n["pattern"], n["refused_because"])
            ent = by_sig.setdefault(key, {"count": collections.OrderedDict(),
                                          "sizes": collections.OrderedDict(),
                                          "inputs": set(),
                                          "example": n["example"]})
            ent["inputs"].update(n.get("inputs", ()))
            fam = r["family"]
            ent["count"][fam] = max(ent["count"].get(fam, 0), n["count"])
            ent["sizes"].setdefault(fam, []).append(str(r["size"]))
    out += ["", "## What they need, op by op", "",
            "Every node of an op type the table lacks or that the exporter "
            "refused, and (ops marked 'in the table') the run-time nodes of "
            "the table's other ops in the models that do not pass yet, "
            "grouped by signature: attributes, then per input `[*,..]` its "
            "rank ('1' where it broadcasts against the output, 'c' a "
            "constant, a dtype prefix when not float32, scalar and "
            "structural constants by value). Pattern: the multi-node form "
            "the node belongs to; 'folds to a constant': every input is "
            "constant once shapes are known (the exporter's folder needs "
            "the op, not its lowering). Counts are nodes per model, the "
            "sizes in parentheses those where the signature occurs.", ""]

    def fams(sigs):
        seen = []
        for e in sigs.values():
            seen += [f for f in e["count"] if f not in seen]
        return seen
    for op in sorted(need, key=lambda o: (in_table[o], -len(fams(need[o])),
                                          o)):
        sigs = need[op]
        out.append(f"### {op}{' (in the table)' if in_table[op] else ''} — "
                   f"{len(fams(sigs))} families: {', '.join(fams(sigs))}")
        out.append("")
        for (sig, pattern, reason), e in sigs.items():
            extra = (f" [{pattern}]" if pattern else "") + \
                (f" refused: {reason}" if reason else "")
            where = ", ".join(f"{f} {c} ({'/'.join(e['sizes'][f])})"
                              for f, c in e["count"].items())
            if e["inputs"]:
                lo, hi = min(e["inputs"]), max(e["inputs"])
                where += f"; n = {lo}" + (f" to {hi}" if hi > lo else "")
            out.append(f"- `{sig}`{extra} — {where}; e.g. "
                       f"`{e['example']}`")
        out.append("")
    out += ["## Multi-node patterns", "",
            "| family | size | pattern | count |", "|---|---|---|---|"]
    for r in recs:
        for p, c in (r["onnx"] or {}).get("patterns", {}).items():
            out.append(f"| {r['family']} | {r['size']} | {p} | {c} |")
    return "\n".join(out) + "\n"


def sizes_for(f, spec):
    """The input sizes `--size` asks of family `f`, in order, once each."""
    out = []
    for item in spec.split(","):
        item = item.strip()
        size = f.reduced if item == "reduced" else \
            FULL if item == "full" else int(item)
        if size not in out:
            out.append(size)
    return out


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--families", default="",
                   help="comma-separated family keys, each optionally "
                        "KEY=MODEL (default: all): "
                        + ",".join(f.key for f in FAMILIES))
    p.add_argument("--size", default="reduced",
                   help="input sizes, comma-separated: 'reduced' (each "
                        "family's CI-sized input: 64, 96 for Inception v3, "
                        "224 for AlexNet/VGG), 'full' (224) or N "
                        "[default: reduced]")
    p.add_argument("--then-full", action="store_true",
                   help="also run 224 for families that are ok at a "
                        "smaller size")
    p.add_argument("--workdir", default=None,
                   help="scratch directory (default: a temporary one); one "
                        "subdirectory per model, deleted after it")
    p.add_argument("--keep", action="store_true",
                   help="keep each model's files in --workdir")
    p.add_argument("--json", dest="json_out", help="write the results here")
    p.add_argument("--md", dest="md_out",
                   help="write the markdown table and needs list here")
    p.add_argument("--from-json", help="only render --md from this JSON")
    p.add_argument("--exporter",
                   default=os.path.join(ROOT, "build", "frontend",
                                        "torch2hpvm-export"))
    p.add_argument("--images", type=int, default=3,
                   help="random test images per model [default: 3]")
    p.add_argument("--batch", type=int, default=2,
                   help="the binary's --batch-size [default: 2]")
    p.add_argument("--export-timeout", type=int, default=900,
                   help="seconds for the PyTorch side [default: 900]")
    p.add_argument("--build-timeout", type=int, default=900,
                   help="seconds for torch2hpvm-export [default: 900]")
    p.add_argument("--run-timeout", type=int, default=600,
                   help="seconds for the generated binary [default: 600]")
    p.add_argument("--max-refusals", type=int, default=100,
                   help="refusal lines kept verbatim per model (all are "
                        "counted by reason); 0 = all [default: 100]")
    p.add_argument("--pytorch-step", action="store_true",
                   help=argparse.SUPPRESS)
    p.add_argument("--one-size", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()

    if args.pytorch_step:
        return pytorch_step(args)
    if args.from_json:
        with open(args.from_json) as fh:
            doc = json.load(fh)
        if args.md_out:
            with open(args.md_out, "w") as fh:
                fh.write(markdown(doc))
        print_table(doc["results"])
        return None

    families = select_families(args.families)
    table = table_ops(args.exporter)
    own_tmp = args.workdir is None
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(
        prefix="tv_survey."))
    os.makedirs(args.workdir, exist_ok=True)
    records = []

    def say(msg):
        print(msg, flush=True)
    try:
        jobs = [(f, s) for f in families for s in sizes_for(f, args.size)]
        k = 0
        while k < len(jobs):
            f, size = jobs[k]
            k += 1
            say(f"[{k}/{len(jobs)}] {f.name}: {f.model} at {size}x{size}")
            t0 = time.monotonic()
            rec = survey_one(f, size, args, table, say)
            records.append(rec)
            say(f"  -> {rec['status']} ({time.monotonic() - t0:.0f} s): "
                + (rec["reason"].splitlines() or [""])[0][:300])
            if args.then_full and rec["status"] == "ok" and size < FULL \
                    and (f, FULL) not in jobs:
                jobs.append((f, FULL))
    finally:
        if own_tmp:
            shutil.rmtree(args.workdir, ignore_errors=True)
    order = {f.key: i for i, f in enumerate(FAMILIES)}
    records.sort(key=lambda r: (order[r["key"]], r["size"]))
    doc = {
        "recipe": f"torchvision weights=None + nets/init.py calibrated "
                  f"random draw, eval(), torch.onnx.export opset {OPSET}, "
                  f"do_constant_folding=True, TrainingMode.EVAL; "
                  f"{args.images} random N(0,1) images with a clear top-1; "
                  f"tolerance {H.TOLERANCE:g} of max|output| and same top-1",
        "exporter_onnx_ops": table,
        "results": records,
    }
    print()
    print_table(records)
    if args.json_out:
        write_json(args.json_out, doc)
    if args.md_out:
        with open(args.md_out, "w") as fh:
            fh.write(markdown(doc))
    return None


if __name__ == "__main__":
    sys.exit(main())
