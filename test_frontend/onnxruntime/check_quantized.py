"""check_quantized.py - pre-quantized models against ONNX Runtime, which runs
them on its integer kernels: our programs give its results within one
quantization step.

    check_quantized.py BUILD WORK SRC

1. The operator fixtures (QuantizeLinear, DequantizeLinear, QLinearConv,
   QLinearMatMul; test_frontend/models) on random images: every output
   element within one step of the output's grid (a float output: to 1e-5
   of the largest), with the program's default configuration (model_int8
   where the model quantizes a convolution's input) and with exact fp32.
2. The shipped ResNet-18 quantized the way ONNX Runtime's quantizer writes
   QDQ models (scripts/bench/ort_quantize.py: uint8 activations with zero
   points, int8 weights per channel, int32 biases):
   - cut after its first quantized convolution, every element within one
     step and at most 0.01% of them off by one;
   - whole, on 1000 Fashion-MNIST images: the same top-1 class for at least
     99.5% of the images, at least 90% of them equal to 1e-5 (one-step
     differences deeper in the network move the others), with either
     configuration; and the default configuration is model_int8 (int8 on
     every convolution and the dense layer, at the model's scales).
"""
import json
import os
import sys

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import numpy_helper, shape_inference

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tuning"))
from lenet_tuning import FMNIST, fail, run  # noqa: E402

build, work, src = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
exporter = os.path.join(build, "frontend", "torch2hpvm-export")
node = ["node", os.path.join(src, "scripts", "bench", "ort_run.js")]


def export(model, tune, test, out, batch):
    run([exporter, model, "--tune", tune, "--test", test, "--batch-size",
         str(batch), "--force", "-o", out])
    return os.path.join(out, json.load(open(os.path.join(out,
                                                         "manifest.json")))
                        ["binary"])


def ours(binary, out_dir, name, exact):
    """The program's outputs: with its default configuration, or (exact)
    with every knob fp32 (model_int8 with its int8 knobs made fp32)."""
    path = os.path.join(work, name + ".npy")
    extra = []
    conf = os.path.join(out_dir, "tuner_confs.txt")
    if exact and os.path.exists(conf):
        text = open(conf).read().replace(" int8 311", " fp32 11")
        extra = ["-c", os.path.join(work, name + "_fp32.txt")]
        open(extra[1], "w").write(text)
    run([binary, "test", "--quiet", "--output", path, *extra], cwd=out_dir)
    return np.load(path)


def ort(model, data, name, batch, shape):
    path = os.path.join(work, name + ".bin")
    run(node + ["outputs", model, data, path, str(batch), "2"])
    return np.fromfile(path, np.float32).reshape(shape)


def output_step(model):
    """The scale of the DequantizeLinear that makes the graph output; None
    when a float op makes it."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    out = model.graph.output[0].name
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] == out:
            return float(inits[n.input[1]])
    return None


def steps_off(a, b, step, what):
    d = np.abs(a.astype(np.float64) - b) / step
    if not d.max() <= 1 + 1e-4:
        i = np.unravel_index(np.argmax(d), d.shape)
        fail(f"{what}: {d.max():.3f} quantization steps from ONNX Runtime at "
             f"{i} (ours {a[i]}, ORT {b[i]}); at most 1 allowed")
    return float((d > 0.5).mean())


# 1. The operator fixtures.
rng = np.random.RandomState(7)
for name in ("QuantizeLinear", "DequantizeLinear", "QLinearConv",
             "QLinearMatMul"):
    m = text_format.Parse(
        open(os.path.join(src, "test_frontend", "models",
                          name + ".onnxtxt")).read(), onnx.ModelProto())
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    images = rng.uniform(-1.2, 1.2, size=[64] + dims[1:]).astype(np.float32)
    data = os.path.join(work, name + "_input.bin")
    images.tofile(data)
    out = os.path.join(work, name)
    binary = export(path, data, data, out, 16)
    want = ort(path, data, name + "_ort", 1, (64, -1))
    step = output_step(m)
    for label, exact in (("default", False), ("exact fp32", True)):
        got = ours(binary, out, f"{name}_{label[:5]}", exact).reshape(64, -1)
        if step is not None:
            steps_off(got, want, step, f"{name} ({label})")
        elif not np.abs(got - want).max() <= 1e-5 * np.abs(want).max():
            fail(f"{name} ({label}): differs from ONNX Runtime by "
                 f"{np.abs(got - want).max():.3g} (largest output "
                 f"{np.abs(want).max():.3g}; 1e-5 of it allowed)")

# 2. ResNet-18 in QDQ form.
data = os.path.join(work, "data")
run([os.path.join(build, "datasets", "torch2hpvm-dataset"), "convert",
     f"{FMNIST}/t10k-images-idx3-ubyte.gz",
     f"{FMNIST}/t10k-labels-idx1-ubyte.gz", "--split",
     "tune=500,test=1000", "--limit", "1500", "--scale", "1/255",
     "--normalize", "0.5,0.5", "-o", data])
tune, test = f"{data}/tune_input.bin", f"{data}/test_input.bin"
fp32 = os.path.join(src, "datasets", "example", "resnet18_fashion.onnx")
qdq = os.path.join(work, "resnet18_qdq.onnx")
run(["/usr/bin/python3", os.path.join(src, "scripts", "bench",
                                      "ort_quantize.py"), fp32,
     "--int8", qdq, "--calib", tune])
m = onnx.load(qdq)

# Cut after the first quantized convolution (the DequantizeLinear of its
# output is the graph output).
inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
seen_conv = False
for n in m.graph.node:
    seen_conv |= n.op_type == "Conv"
    if (seen_conv and n.op_type == "DequantizeLinear"
            and n.input[0] not in inits):
        cut = n
        break
typed = {v.name: v for v in shape_inference.infer_shapes(m).graph.value_info}
first = onnx.ModelProto()
first.CopyFrom(m)
del first.graph.output[:]
first.graph.output.append(typed[cut.output[0]])
first_path = os.path.join(work, "resnet18_qdq_first.onnx")
onnx.save(first, first_path)
out = os.path.join(work, "first")
binary = export(first_path, tune, test, out, 100)
want = ort(first_path, test, "first_ort", 100, (1000, -1))
step = float(inits[cut.input[1]])
for label, exact in (("default", False), ("exact fp32", True)):
    got = ours(binary, out, "first_" + label[:5], exact).reshape(1000, -1)
    off = steps_off(got, want, step, f"first quantized conv ({label})")
    if off > 1e-4:
        fail(f"first quantized conv ({label}): {off:.2%} of the elements "
             "are a step from ONNX Runtime's (at most 0.01% allowed)")

out = os.path.join(work, "resnet18")
binary = export(qdq, tune, test, out, 100)
conf = open(os.path.join(out, "tuner_confs.txt")).read().split("\n")
convs = [line for line in conf if " conv " in line or " mul " in line]
if conf[2].split()[0] != "model_int8" or not convs or any(
        " int8 311" not in line for line in convs):
    fail("the QDQ ResNet-18's tuner_confs.txt is not model_int8 with int8 "
         "on every conv and mul:\n" + "\n".join(conf))
want = ort(qdq, test, "resnet18_ort", 100, (1000, 10))
for label, exact in (("default", False), ("exact fp32", True)):
    got = ours(binary, out, "resnet18_" + label[:5], exact)
    agree = float((got.argmax(1) == want.argmax(1)).mean())
    close = float((np.abs(got - want).max(1) < 1e-5).mean())
    if agree < 0.995 or close < 0.9:
        fail(f"QDQ ResNet-18 ({label}): top-1 agrees with ONNX Runtime on "
             f"{agree:.1%} of the images (at least 99.5%), outputs equal to "
             f"1e-5 on {close:.1%} (at least 90%)")
    print(f"check_quantized: QDQ ResNet-18 ({label}): top-1 as ONNX Runtime "
          f"on {agree:.1%}, outputs equal to 1e-5 on {close:.1%}")
print("check_quantized: fixtures and ResNet-18 within one step of ONNX "
      "Runtime")
