"""check_quantized.py - pre-quantized models against ONNX Runtime, which runs
them on its integer kernels: our programs give its results within one
quantization step.

    check_quantized.py BUILD WORK SRC

The shipped ResNet-18 quantized the way ONNX Runtime's quantizer writes QDQ
models (scripts/bench/ort_quantize.py: uint8 activations with zero points,
int8 weights per channel, int32 biases); check_op_fixtures.py checks the
quantized operators' fixtures:
- cut after its first quantized convolution, every element within one
  step and at most 0.01% of them off by one;
- whole, on 1000 Fashion-MNIST images: the same top-1 class for at least
  99.5% of the images, at least 90% of them equal to 1e-5 (one-step
  differences deeper in the network move the others), with either
  configuration; and the default configuration is model_int8 (int8 on every
  convolution and the dense layer, at the model's scales).

On a CPU without VNNI, ONNX Runtime's u8 x s8 kernels saturate with 8-bit
weights, so ort_quantize.py writes 7-bit ones there (its --reduce-range
auto, as ONNX Runtime advises): their grid is not the int8 knob's, so the
export writes no model_int8 and the default runs every layer in fp32,
which computes the model's integers exactly.
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "tuning")]
from lenet_tuning import fail, run  # noqa: E402
from ort_oracle import Oracle, fashion_sets, steps_off  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "bench"))
from ort_quantize import has_vnni  # noqa: E402

build, work, src = sys.argv[1:4]
oracle = Oracle(build, work, src)
export, ours, ort = oracle.export, oracle.ours, oracle.ort


# ResNet-18 in QDQ form.
tune, test = fashion_sets(build, os.path.join(work, "data"))
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
confs = os.path.join(out, "tuner_confs.txt")
if has_vnni():
    conf = open(confs).read().split("\n")
    convs = [line for line in conf if " conv " in line or " mul " in line]
    if conf[2].split()[0] != "model_int8" or not convs or any(
            " int8 311" not in line for line in convs):
        fail("the QDQ ResNet-18's tuner_confs.txt is not model_int8 with "
             "int8 on every conv and mul:\n" + "\n".join(conf))
elif os.path.exists(confs):
    fail("the QDQ ResNet-18 with 7-bit weights got a tuner_confs.txt:\n"
         + open(confs).read())
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
print("check_quantized: the QDQ ResNet-18 within one step of ONNX Runtime")
