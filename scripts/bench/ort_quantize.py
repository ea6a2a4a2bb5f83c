#!/usr/bin/python3
"""ort_quantize.py - ONNX Runtime's peers of our programs: a copy of an ONNX
model with a symbolic batch (for ORT FP32), and a statically quantized QDQ
copy (for ORT int8), the format ONNX Runtime's own quantizer writes by
default: activations uint8 with a zero point, calibrated by min/max on the
tune set; Conv and Gemm weights int8, symmetric, per output channel; biases
int32 at the input scale times the weight scale; MatMul weights per tensor.
A model below opset 13 is converted to 13 first (per-channel
DequantizeLinear needs it).

    ort_quantize.py MODEL.onnx --fp32 OUT_fp32.onnx
    ort_quantize.py MODEL.onnx --int8 OUT_int8.onnx --calib TUNE_input.bin
        [--calib-images 256] [--reduce-range auto|on|off]

--reduce-range on quantizes weights to 7 bits (-63..63), as ONNX Runtime's
quantizer does with reduce_range=True, which its documentation advises for
CPUs without VNNI: their u8 x s8 instruction (vpmaddubsw) saturates the
sums of pairs of 8-bit products. auto (the default) turns it on where
/proc/cpuinfo shows no avx512_vnni, avx_vnni or amx_int8.

Which tensors get a QuantizeLinear/DequantizeLinear pair: every float
activation read or written by a compute op (Conv, Gemm, MatMul, Add, Mul,
Concat, AveragePool, GlobalAveragePool, Sigmoid, Softmax's input); a Relu or
Clip right after one of them (its only reader) is dropped, its range
calibrated at its output, as ONNX Runtime's quantizer does; MaxPool, Flatten,
Reshape, Transpose, Squeeze and Unsqueeze pass their input's quantization
through. ONNX Runtime then fuses the pairs into its int8 kernels
(QLinearConv, QLinearMatMul, QLinearAdd, ...).

The calibration runs the model in ONNX Runtime (scripts/bench/ort_run.js
range) with every such tensor added as a graph output.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, version_converter

HERE = os.path.dirname(os.path.abspath(__file__))
COMPUTE = {"Conv", "Gemm", "MatMul", "Add", "Mul", "Concat", "AveragePool",
           "GlobalAveragePool", "Sigmoid"}
WEIGHTED = {"Conv", "Gemm", "MatMul"}
PASS_THROUGH = {"MaxPool", "Flatten", "Reshape", "Transpose", "Squeeze",
                "Unsqueeze"}
DROPPABLE = {"Relu", "Clip"}
# The largest weight code: 127, or 63 with --reduce-range.
WEIGHT_QMAX = 127.0


def has_vnni():
    """True where the CPU multiplies u8 by s8 without saturating pairs."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return True
    return bool({"avx512_vnni", "avx_vnni", "amx_int8"} & set(flags))


def dynamic_batch(model):
    """Dim 0 of the graph's inputs and outputs becomes symbolic 'N' and the
    inferred shapes are dropped (ONNX Runtime infers them again)."""
    g = model.graph
    inits = {i.name for i in g.initializer}
    for v in list(g.input) + list(g.output):
        if v.name in inits:
            continue
        dims = v.type.tensor_type.shape.dim
        if len(dims):
            dims[0].ClearField("dim_value")
            dims[0].dim_param = "N"
    del g.value_info[:]
    return model


def consumers(graph):
    out = {}
    for n in graph.node:
        for i in n.input:
            out.setdefault(i, []).append(n)
    return out


def plan(graph):
    """Which tensors to quantize, which activations to drop, and which
    tensors share the quantization of another. Returns (quantize: set of
    tensor names, drop: {act node name: producer output}, alias: {tensor:
    tensor whose range it takes})."""
    inits = {i.name for i in graph.initializer}
    readers = consumers(graph)
    outputs = {o.name for o in graph.output}
    quantize, drop = set(), {}
    for n in graph.node:
        if n.op_type not in COMPUTE:
            continue
        for i, name in enumerate(n.input):
            if name and name not in inits and not (
                    n.op_type in WEIGHTED and i > 0):
                quantize.add(name)
        out = n.output[0]
        r = readers.get(out, [])
        if (len(r) == 1 and r[0].op_type in DROPPABLE and out not in outputs
                and all(x in inits or not x for x in r[0].input[1:])):
            drop[r[0].name or r[0].output[0]] = out
            quantize.add(r[0].output[0])
        elif n.op_type != "Sigmoid" or out not in outputs:
            quantize.add(out)
    # Pass-through ops: output quantized like the input (fixed point).
    alias = {}
    changed = True
    while changed:
        changed = False
        for n in graph.node:
            if (n.op_type in PASS_THROUGH and n.input[0] in quantize
                    and n.output[0] not in alias
                    and n.output[0] not in outputs):
                alias[n.output[0]] = alias.get(n.input[0], n.input[0])
                quantize.add(n.output[0])
                changed = True
    quantize -= outputs
    return quantize, drop, alias


def calibrate(model, names, data, images, shape):
    """min/max of each named tensor over the first `images` of `data`."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for name in sorted(names):
        if name not in have:
            m.graph.output.append(helper.make_tensor_value_info(
                name, TensorProto.FLOAT, None))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "calib.onnx")
        onnx.save(m, path)
        res = subprocess.run(
            ["node", os.path.join(HERE, "ort_run.js"), "range", path, data,
             "16", "2", str(images)], capture_output=True, text=True,
            check=False)
    if res.returncode != 0:
        sys.exit(f"ort_quantize: calibration failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout)["ranges"]


def uint8_params(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    zp = int(np.clip(round(-lo / scale), 0, 255))
    return np.float32(scale), np.uint8(zp)


def quantize(model, ranges):
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    names, drop, alias = plan(g)
    params = {}
    for name in names:
        lo, hi = ranges[alias.get(name, name)]
        params[name] = uint8_params(lo, hi)
    new_inits, nodes = [], []

    def const(name, array):
        new_inits.append(numpy_helper.from_array(array, name))
        return name

    by_key = {(n.name or n.output[0]): n for n in g.node}
    # dropped activation's output -> producer's output
    renamed = {prod: by_key[act].output[0] for act, prod in drop.items()}
    # Each quantized tensor T: T -> Q -> DQ -> T__dq; readers use T__dq.
    for n in g.node:
        if (n.name or n.output[0]) in drop:
            continue
        node = onnx.NodeProto()
        node.CopyFrom(n)
        for k, o in enumerate(node.output):
            node.output[k] = renamed.get(o, o)
        for k, i in enumerate(node.input):
            if i in names:
                node.input[k] = i + "__dq"
        if n.op_type in WEIGHTED and len(n.input) > 1 and n.input[1] in inits:
            x_scale = params[n.input[0]][0] if n.input[0] in params else None
            node = quantize_weights(n, node, inits, x_scale, const, nodes)
        nodes.append(node)
        for o in node.output:
            if o in names:
                s, z = params[o]
                nodes.append(helper.make_node(
                    "QuantizeLinear", [o, const(o + "__s", np.array(s)),
                                       const(o + "__z", np.array(z))],
                    [o + "__q"]))
                nodes.append(helper.make_node(
                    "DequantizeLinear", [o + "__q", o + "__s", o + "__z"],
                    [o + "__dq"]))
    for inp in g.input:
        if inp.name in names and inp.name not in inits:
            s, z = params[inp.name]
            nodes[:0] = [
                helper.make_node("QuantizeLinear",
                                 [inp.name, const(inp.name + "__s",
                                                  np.array(s)),
                                  const(inp.name + "__z", np.array(z))],
                                 [inp.name + "__q"]),
                helper.make_node("DequantizeLinear",
                                 [inp.name + "__q", inp.name + "__s",
                                  inp.name + "__z"], [inp.name + "__dq"])]
    used = {i for n in nodes for i in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    g.initializer.extend(keep + new_inits)
    return model


def quantize_weights(orig, node, inits, x_scale, const, nodes):
    """Replaces node's float weight (and bias) by int8 (int32) initializers
    behind DequantizeLinear."""
    w = numpy_helper.to_array(inits[orig.input[1]]).astype(np.float32)
    if orig.op_type == "Conv":
        axis = 0
    elif orig.op_type == "Gemm":
        trans_b = next((a.i for a in orig.attribute if a.name == "transB"), 0)
        axis = 0 if trans_b else 1
    else:
        axis = None  # MatMul: per tensor
    qmax = WEIGHT_QMAX
    if axis is None:
        scale = np.array(max(np.abs(w).max(), 1e-12) / qmax, np.float32)
        zp = np.array(0, np.int8)
        q = np.clip(np.round(w / scale), -qmax, qmax).astype(np.int8)
    else:
        red = tuple(d for d in range(w.ndim) if d != axis)
        scale = (np.maximum(np.abs(w).max(axis=red), 1e-12)
                 / qmax).astype(np.float32)
        zp = np.zeros(scale.shape, np.int8)
        shape = [1] * w.ndim
        shape[axis] = -1
        q = np.clip(np.round(w / scale.reshape(shape)), -qmax,
                    qmax).astype(np.int8)
    base = orig.input[1]
    nodes.append(helper.make_node(
        "DequantizeLinear", [const(base + "__q", q), const(base + "__s", scale),
                             const(base + "__z", zp)], [base + "__dq"],
        **({} if axis is None else {"axis": axis})))
    node.input[1] = base + "__dq"
    if (len(orig.input) > 2 and orig.input[2] in inits
            and x_scale is not None and orig.op_type != "MatMul"):
        b = numpy_helper.to_array(inits[orig.input[2]]).astype(np.float64)
        bscale = (np.float64(x_scale) * scale.astype(np.float64)).astype(
            np.float32)
        qb = np.round(b / bscale).astype(np.int32)
        bb = orig.input[2]
        nodes.append(helper.make_node(
            "DequantizeLinear",
            [const(bb + "__q", qb), const(bb + "__s", bscale),
             const(bb + "__z", np.zeros(bscale.shape, np.int32))],
            [bb + "__dq"], **({} if bscale.ndim == 0 else {"axis": 0})))
        node.input[2] = bb + "__dq"
    return node


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--fp32", help="write the symbolic-batch FP32 copy here")
    ap.add_argument("--int8", help="write the QDQ int8 copy here")
    ap.add_argument("--calib", help="tune set input (.bin) for --int8")
    ap.add_argument("--calib-images", type=int, default=256)
    ap.add_argument("--reduce-range", choices=("auto", "on", "off"),
                    default="auto",
                    help="7-bit weights (default: where the CPU lacks VNNI)")
    args = ap.parse_args()
    if args.int8 and not args.calib:
        ap.error("--int8 needs --calib")
    global WEIGHT_QMAX
    reduce = (args.reduce_range == "on" or
              (args.reduce_range == "auto" and not has_vnni()))
    WEIGHT_QMAX = 63.0 if reduce else 127.0
    model = dynamic_batch(onnx.load(args.model))
    if args.fp32:
        onnx.save(model, args.fp32)
    if args.int8:
        # Per-channel DequantizeLinear (its axis) needs opset 13.
        opset = next((o.version for o in model.opset_import
                      if o.domain in ("", "ai.onnx")), 13)
        if opset < 13:
            model = dynamic_batch(version_converter.convert_version(model, 13))
        names, _, alias = plan(model.graph)
        shape = [d.dim_value for d in
                 model.graph.input[0].type.tensor_type.shape.dim[1:]]
        ranges = calibrate(model, {alias.get(n, n) for n in names},
                           args.calib, args.calib_images, shape)
        q = quantize(model, ranges)
        onnx.checker.check_model(q)
        onnx.save(q, args.int8)


if __name__ == "__main__":
    main()
