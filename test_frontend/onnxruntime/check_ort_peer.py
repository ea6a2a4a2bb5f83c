"""check_ort_peer.py - the benchmarks' ONNX Runtime peers are what they claim
(scripts/bench/ort_run.js, ort_quantize.py): on the shipped ResNet-18, ONNX
Runtime's FP32 outputs agree with our exact program's to 1e-4 of their
largest magnitude; the static QDQ copy runs on ONNX Runtime's int8 kernels
(its optimized graph has QLinearConv, QLinearAdd and QGemm and no float
Conv or Gemm) and keeps top-1 within 1 point of FP32 (its weights in 7 bits
on a CPU without VNNI, where ONNX Runtime's 8-bit ones saturate:
ort_quantize.py --reduce-range auto).

    check_ort_peer.py BUILD WORK SRC
"""
import collections
import json
import os
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "tuning")]
from lenet_tuning import fail, run  # noqa: E402
from ort_oracle import fashion_sets  # noqa: E402

build, work, src = sys.argv[1:4]
bench = os.path.join(src, "scripts", "bench")
os.makedirs(work, exist_ok=True)
data = os.path.join(work, "data")
fashion_sets(build, data)
model = os.path.join(src, "datasets", "example", "resnet18_fashion.onnx")
out = os.path.join(work, "resnet18")
run([os.path.join(build, "frontend", "torch2hpvm-export"), model, "--tune",
     f"{data}/tune_input.bin", "--test", f"{data}/test_input.bin",
     "--batch-size", "100", "--force", "-o", out])
binary = os.path.join(out, json.load(open(os.path.join(out,
                                                       "manifest.json")))["binary"])
ours = os.path.join(work, "ours.npy")
run([binary, "test", "--quiet", "--output", ours], cwd=out)
ours = np.load(ours)

fp32, int8 = os.path.join(work, "fp32.onnx"), os.path.join(work, "int8.onnx")
run(["/usr/bin/python3", os.path.join(bench, "ort_quantize.py"), model,
     "--fp32", fp32, "--int8", int8, "--calib", f"{data}/tune_input.bin"])
node = ["node", os.path.join(bench, "ort_run.js")]
ort_out = os.path.join(work, "ort_fp32.bin")
run(node + ["outputs", fp32, f"{data}/test_input.bin", ort_out, "100", "2"])
ref = np.fromfile(ort_out, np.float32).reshape(ours.shape)
err = np.abs(ours - ref).max() / np.abs(ref).max()
if not err <= 1e-4:
    fail(f"ONNX Runtime FP32 and our exact program differ by {err:.3g} of "
         "the largest output (more than 1e-4)")

optimized = os.path.join(work, "int8_optimized.onnx")
run(node + ["optimize", int8, optimized])
ops = collections.Counter(n.op_type for n in onnx.load(optimized).graph.node)
for want in ("QLinearConv", "QLinearAdd", "QGemm"):
    if not ops[want]:
        fail(f"the QDQ model's optimized graph has no {want}: {dict(ops)}")
for float_op in ("Conv", "Gemm", "FusedConv", "FusedGemm"):
    if ops[float_op]:
        fail(f"the QDQ model still runs {ops[float_op]} float {float_op} "
             f"node(s): {dict(ops)}")

acc = {}
for name, path in (("fp32", fp32), ("int8", int8)):
    r = json.loads(run(node + ["eval", path, f"{data}/test_input.bin",
                               f"{data}/test_labels.bin", "100", "2"]).stdout)
    acc[name] = r["accuracy"]
if abs(acc["int8"] - acc["fp32"]) > 1.0:
    fail(f"ONNX Runtime int8 top-1 {acc['int8']:.2f}% is more than 1 point "
         f"from FP32's {acc['fp32']:.2f}%")
print(f"check_ort_peer: FP32 agrees with ours to {err:.2g}; QDQ graph "
      f"{dict(ops)}; top-1 FP32 {acc['fp32']:.2f}%, int8 {acc['int8']:.2f}%")
