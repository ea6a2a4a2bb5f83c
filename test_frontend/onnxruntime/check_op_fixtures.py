"""check_op_fixtures.py - operator fixtures (test_frontend/models) that
PyTorch cannot rebuild, against ONNX Runtime on random images, with the
program's default configuration and with exact fp32:

- the pre-quantized operators (QuantizeLinear, DequantizeLinear,
  QLinearConv, QLinearMatMul): every output element within one step of the
  output's grid (ONNX Runtime computes them on its integer kernels);
- ONNX Runtime's dynamic quantization (DynamicQuantizeLinear, ConvInteger,
  MatMulInteger, with their Cast and scale Mul), the element-wise
  arithmetic of activations (Sub, Div, Max, Min, Sum, and a standardisation
  by hand: Sub, Pow, Sqrt, Div with broadcasts; a constant minus and
  divided by an activation), per-pixel LogSoftmax over
  the channels, a conv whose weights are stored in float16 and bfloat16
  (with their Casts), the DequantizeLinear fixture's float output, an MLP on
  a 2-D input (N, K), tf_crop_and_resize's regions (linear, nearest and
  cubic, inside and across the image's edges), Reshapes that only
  reinterpret memory (a Linear viewed as an image, a map flattened for a
  Softmax) and Split (sizes as an input, and an even split): to 1e-5 of
  the largest output.

On a CPU without VNNI, ONNX Runtime's u8 x s8 matrix products saturate
(vpmaddubsw's 16-bit pair sums) with the QLinearMatMul and MatMulInteger
fixtures' 8-bit weights: there those two are checked against their integer
arithmetic computed here in NumPy, as ONNX defines it.

    check_op_fixtures.py BUILD WORK SRC
"""
import os
import sys

import numpy as np
import onnx
from google.protobuf import text_format

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "tuning")]
from lenet_tuning import fail  # noqa: E402
from ort_oracle import Oracle, output_step, steps_off  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "bench"))
from ort_quantize import has_vnni  # noqa: E402


def integer_reference(name, m, images):
    """The QLinearMatMul and MatMulInteger fixtures' outputs in NumPy, one
    image at a time (a dynamic quantization's range is its image's)."""
    from onnx import numpy_helper
    c = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    x = images.reshape(len(images), -1).astype(np.float32)
    w = c["bq"].astype(np.int64) - c["bz"].astype(np.int64)
    if name == "QLinearMatMul":
        a = np.clip(np.round(x / c["as"]) + c["az"], 0, 255)
        acc = (a - c["az"]).astype(np.int64) @ w
        y = np.float32(c["as"] * c["bs"] / c["ys"]) * acc.astype(np.float32)
        q = np.clip(np.round(y) + c["yz"], 0, 255)
        return ((q - c["yz"]) * c["ys"]).astype(np.float32)
    lo = np.minimum(x.min(1, keepdims=True), 0)
    hi = np.maximum(x.max(1, keepdims=True), 0)
    scale = ((hi - lo) / np.float32(255)).astype(np.float32)
    zero = np.clip(np.round(-lo / scale), 0, 255)
    q = np.clip(np.round(x / scale) + zero, 0, 255)
    acc = (q - zero).astype(np.int64) @ w
    return (acc.astype(np.float32) * (scale * np.float32(c["bs"]))).astype(
        np.float32)


build, work, src = sys.argv[1:4]
oracle = Oracle(build, work, src)
IMAGES = 64
rng = np.random.RandomState(7)
for name in ("QuantizeLinear", "DequantizeLinear", "QLinearConv",
             "QLinearMatMul", "DynamicQuantizeLinear", "ConvInteger",
             "MatMulInteger", "Sub", "Div", "Max", "Min", "Sum",
             "arithmetic", "constant_first", "LogSoftmax", "fp16_weights",
             "mlp_2d", "resize_crop", "reshape_memory", "Split",
             "Split_opset11"):
    m = text_format.Parse(
        open(os.path.join(src, "test_frontend", "models",
                          name + ".onnxtxt")).read(), onnx.ModelProto())
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    images = rng.uniform(-1.2, 1.2, size=[IMAGES] + dims[1:])
    data = os.path.join(work, name + "_input.bin")
    images.astype(np.float32).tofile(data)
    out = os.path.join(work, name)
    # One image per batch on both sides: a dynamic quantization's range is
    # its whole batch's.
    binary = oracle.export(path, data, data, out, 1)
    want = oracle.ort(path, data, name + "_ort", 1, (IMAGES, -1))
    if name in ("QLinearMatMul", "MatMulInteger") and not has_vnni():
        want = integer_reference(name, m, images)
    step = output_step(m)
    for label, exact in (("default", False), ("exact fp32", True)):
        got = oracle.ours(binary, out, f"{name}_{label[:5]}", exact)
        got = got.reshape(IMAGES, -1)
        if step is not None:
            steps_off(got, want, step, f"{name} ({label})")
        elif not np.abs(got - want).max() <= 1e-5 * np.abs(want).max():
            fail(f"{name} ({label}): differs from ONNX Runtime by "
                 f"{np.abs(got - want).max():.3g} (largest output "
                 f"{np.abs(want).max():.3g}; 1e-5 of it allowed)")
print("check_op_fixtures: every fixture as ONNX Runtime computes it")
