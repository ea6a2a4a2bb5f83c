#!/usr/bin/python3
# make_test_models.py - writes the frontend's ONNX test fixtures
# (test_frontend/models/*.onnxtxt, protobuf text format) with onnx.helper.
#
# One fixture per accepted ONNX operator (<OnnxName>.onnxtxt, checked by
# tests/frontend/LoweringTest.cpp), small networks, and must-fail models under
# errors/. Run with /usr/bin/python3 (it has python3-onnx) from anywhere; the
# output is deterministic, and the fixtures are committed so that tests never
# need Python.
import os
import sys

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import TensorProto, helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                    "test_frontend", "models")


def weights(name, shape, seed):
    """Deterministic small float32 initializer (float_data, readable)."""
    rng = np.random.RandomState(seed)
    values = np.round(rng.uniform(-1, 1, size=shape), 3).astype(np.float32)
    return helper.make_tensor(name, TensorProto.FLOAT, shape,
                              values.flatten().tolist())


def ints(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def floats(name, values):
    return helper.make_tensor(name, TensorProto.FLOAT, [len(values)], values)


def io(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def save(rel, nodes, inputs, output, inits=(), opset=13, doc=""):
    """Writes ROOT/REL; OUTPUT is one graph output or a list of them."""
    outputs = output if isinstance(output, list) else [output]
    graph = helper.make_graph(nodes, os.path.basename(rel).split(".")[0],
                              inputs, outputs, list(inits))
    model = helper.make_model(
        graph, producer_name="make_test_models.py",
        opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    if doc:
        model.doc_string = doc
    path = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text_format.MessageToString(model))


def node(op, ins, outs, name, **attrs):
    return helper.make_node(op, ins, outs, name=name, **attrs)


def flatten_view(prefix, x, out):
    """PyTorch's x.view(x.size(0), -1) exported without constant folding."""
    return [
        node("Shape", [x], [prefix + "shape"], prefix + "Shape"),
        node("Constant", [], [prefix + "zero"], prefix + "Constant_0",
             value=helper.make_tensor("v", TensorProto.INT64, [], [0])),
        node("Gather", [prefix + "shape", prefix + "zero"], [prefix + "n"],
             prefix + "Gather", axis=0),
        node("Constant", [], [prefix + "axes"], prefix + "Constant_1",
             value=ints("v", [0])),
        node("Unsqueeze", [prefix + "n", prefix + "axes"], [prefix + "n1"],
             prefix + "Unsqueeze"),
        node("Constant", [], [prefix + "minus1"], prefix + "Constant_2",
             value=ints("v", [-1])),
        node("Concat", [prefix + "n1", prefix + "minus1"], [prefix + "target"],
             prefix + "Concat", axis=0),
        node("Reshape", [x, prefix + "target"], [out], prefix + "Reshape"),
    ]


def op_fixtures():
    X = io("input", [1, 2, 6, 6])
    # Convolution and dense.
    save("Conv.onnxtxt",
         [node("Conv", ["input", "w", "b"], ["y"], "conv1", kernel_shape=[3, 3],
               pads=[1, 1, 1, 1], strides=[2, 2])],
         [X], io("y", [1, 3, 3, 3]), [weights("w", [3, 2, 3, 3], 1),
                                      weights("b", [3], 2)])
    # U-Net's k2 s2, then k3 s2 with padding 1 and output_padding 1.
    save("ConvTranspose.onnxtxt",
         [node("ConvTranspose", ["input", "w", "b"], ["u"], "up2",
               kernel_shape=[2, 2], strides=[2, 2]),
          node("ConvTranspose", ["u", "w2"], ["y"], "up3",
               kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
               output_padding=[1, 1])],
         [X], io("y", [1, 3, 24, 24]),
         [weights("w", [2, 4, 2, 2], 80), weights("b", [4], 81),
          weights("w2", [4, 3, 3, 3], 82)])
    save("Gemm.onnxtxt",
         [node("Flatten", ["input"], ["f"], "flatten", axis=1),
          node("Gemm", ["f", "w", "b"], ["y"], "fc", transB=1, alpha=0.5,
               beta=2.0)],
         [X], io("y", [1, 4]), [weights("w", [4, 72], 3), weights("b", [4], 4)])
    save("MatMul.onnxtxt",
         [node("Flatten", ["input"], ["f"], "flatten", axis=1),
          node("MatMul", ["f", "w"], ["y"], "matmul")],
         [X], io("y", [1, 5]), [weights("w", [72, 5], 5)])
    # Pre-quantized models, as ONNX Runtime's quantizer writes them:
    # uint8 activations with a zero point, int8 weights per output
    # channel, int32 biases.
    def scalar(name, dtype, v):
        return helper.make_tensor(name, dtype, [], [v])

    def qweights(name, shape, seed, dtype=TensorProto.INT8):
        rng = np.random.RandomState(seed)
        lo, hi = (-127, 127) if dtype == TensorProto.INT8 else (-2**20, 2**20)
        return helper.make_tensor(name, dtype, shape,
                                  rng.randint(lo, hi + 1, size=shape)
                                  .flatten().tolist())
    save("QuantizeLinear.onnxtxt",
         [node("QuantizeLinear", ["input", "s", "z"], ["q"], "quantize"),
          node("MaxPool", ["q"], ["p"], "pool_on_integers",
               kernel_shape=[2, 2], strides=[2, 2]),
          node("DequantizeLinear", ["p", "s", "z"], ["y"], "dequantize")],
         [X], io("y", [1, 2, 3, 3]),
         [scalar("s", TensorProto.FLOAT, 0.0078125),
          scalar("z", TensorProto.UINT8, 128)])
    save("DequantizeLinear.onnxtxt",
         [node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], "weights",
               axis=0),
          node("QuantizeLinear", ["input", "s", "z"], ["q"], "quantize"),
          node("DequantizeLinear", ["q", "s", "z"], ["x"], "dequantize"),
          node("Conv", ["x", "w"], ["y"], "conv", kernel_shape=[3, 3],
               pads=[1, 1, 1, 1])],
         [X], io("y", [1, 3, 6, 6]),
         [qweights("wq", [3, 2, 3, 3], 90),
          helper.make_tensor("ws", TensorProto.FLOAT, [3],
                             [0.004, 0.005, 0.006]),
          helper.make_tensor("wz", TensorProto.INT8, [3], [0, 0, 0]),
          scalar("s", TensorProto.FLOAT, 0.0078125),
          scalar("z", TensorProto.INT8, 0)])
    save("QLinearConv.onnxtxt",
         [node("QuantizeLinear", ["input", "xs", "xz"], ["xq"], "quantize"),
          node("QLinearConv", ["xq", "xs", "xz", "wq", "ws", "wz", "ys", "yz",
                               "bq"], ["yq"], "qconv", kernel_shape=[3, 3],
               pads=[1, 1, 1, 1], strides=[2, 2]),
          node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], "dequantize")],
         [X], io("y", [1, 3, 3, 3]),
         [scalar("xs", TensorProto.FLOAT, 0.0078125),
          scalar("xz", TensorProto.UINT8, 128),
          qweights("wq", [3, 2, 3, 3], 91),
          helper.make_tensor("ws", TensorProto.FLOAT, [3],
                             [0.004, 0.005, 0.006]),
          helper.make_tensor("wz", TensorProto.INT8, [3], [0, 0, 0]),
          scalar("ys", TensorProto.FLOAT, 0.03125),
          scalar("yz", TensorProto.UINT8, 0),
          qweights("bq", [3], 92, TensorProto.INT32)])
    save("QLinearMatMul.onnxtxt",
         [node("QuantizeLinear", ["input", "as", "az"], ["aq"], "quantize"),
          node("Flatten", ["aq"], ["f"], "flatten", axis=1),
          node("QLinearMatMul", ["f", "as", "az", "bq", "bs", "bz", "ys",
                                 "yz"], ["yq"], "qmatmul"),
          node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], "dequantize")],
         [X], io("y", [1, 5]),
         [scalar("as", TensorProto.FLOAT, 0.0078125),
          scalar("az", TensorProto.UINT8, 128),
          qweights("bq", [72, 5], 93),
          scalar("bs", TensorProto.FLOAT, 0.004),
          scalar("bz", TensorProto.INT8, 0),
          scalar("ys", TensorProto.FLOAT, 0.0625),
          scalar("yz", TensorProto.UINT8, 128)])
    # ONNX Runtime's dynamic quantization: DynamicQuantizeLinear of the
    # input, ConvInteger / MatMulInteger, Cast to float, Mul by the input
    # scale times the weight scale (then the bias).
    def dynamic_conv(prefix, x, wq, ws, wz, out):
        return [
            node("Mul", [x + "_s", ws], [prefix + "s"], prefix + "scale"),
            node("ConvInteger", [x + "_q", wq, x + "_z", wz], [prefix + "i"],
                 prefix + "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            node("Cast", [prefix + "i"], [prefix + "f"], prefix + "cast",
                 to=TensorProto.FLOAT),
            node("Mul", [prefix + "f", prefix + "s"], [out], prefix + "rescale")]
    save("ConvInteger.onnxtxt",
         [node("DynamicQuantizeLinear", ["input"],
               ["input_q", "input_s", "input_z"], "quantize")]
         + dynamic_conv("c_", "input", "wq", "ws", "wz", "c")
         + [node("Add", ["c", "b"], ["y"], "bias")],
         [X], io("y", [1, 3, 6, 6]),
         [qweights("wq", [3, 2, 3, 3], 94), scalar("ws", TensorProto.FLOAT,
                                                   0.004),
          scalar("wz", TensorProto.INT8, 0),
          helper.make_tensor("b", TensorProto.FLOAT, [3, 1, 1],
                             [0.1, -0.2, 0.3])])
    # One DynamicQuantizeLinear read by two ConvIntegers (uint8 weights
    # with a zero point) and a DequantizeLinear (a dynamic QDQ pair before
    # a float Conv).
    save("DynamicQuantizeLinear.onnxtxt",
         [node("DynamicQuantizeLinear", ["input"],
               ["input_q", "input_s", "input_z"], "quantize")]
         + dynamic_conv("a_", "input", "wq", "ws", "wz", "a")
         + dynamic_conv("b_", "input", "wq2", "ws", "wz", "b")
         + [node("DequantizeLinear", ["input_q", "input_s", "input_z"],
                 ["d"], "dequantize"),
            node("Conv", ["d", "wf"], ["c"], "float_conv",
                 kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            node("Sum", ["a", "b", "c"], ["y"], "sum")],
         [X], io("y", [1, 3, 6, 6]),
         [helper.make_tensor("wq", TensorProto.UINT8, [3, 2, 3, 3],
                             np.random.RandomState(95).randint(
                                 0, 256, 54).tolist()),
          helper.make_tensor("wq2", TensorProto.UINT8, [3, 2, 3, 3],
                             np.random.RandomState(96).randint(
                                 0, 256, 54).tolist()),
          scalar("ws", TensorProto.FLOAT, 0.003),
          scalar("wz", TensorProto.UINT8, 128), weights("wf", [3, 2, 3, 3], 98)])
    save("MatMulInteger.onnxtxt",
         [node("Flatten", ["input"], ["f"], "flatten", axis=1),
          node("DynamicQuantizeLinear", ["f"], ["f_q", "f_s", "f_z"],
               "quantize"),
          node("Mul", ["f_s", "bs"], ["s"], "scale"),
          node("MatMulInteger", ["f_q", "bq", "f_z", "bz"], ["i"], "matmul"),
          node("Cast", ["i"], ["fl"], "cast", to=TensorProto.FLOAT),
          node("Mul", ["fl", "s"], ["y"], "rescale")],
         [X], io("y", [1, 5]),
         [qweights("bq", [72, 5], 97), scalar("bs", TensorProto.FLOAT, 0.004),
          scalar("bz", TensorProto.INT8, 0)])
    # A 2-D input (N, K): an MLP head on feature vectors.
    save("mlp_2d.onnxtxt",
         [node("Gemm", ["input", "w1", "b1"], ["h"], "fc1", transB=1),
          node("Relu", ["h"], ["r"], "relu"),
          node("MatMul", ["r", "w2"], ["m"], "fc2"),
          node("Sigmoid", ["m"], ["y"], "gate")],
         [io("input", [1, 20])], io("y", [1, 4]),
         [weights("w1", [16, 20], 99), weights("b1", [16], 100),
          weights("w2", [16, 4], 101)])
    # Resizing: sizes (linear, half_pixel, a segmentation head's), then
    # scales (nearest, asymmetric, floor).
    save("Resize.onnxtxt",
         [node("Resize", ["input", "", "", "sizes"], ["r"], "to_size",
               mode="linear", coordinate_transformation_mode="half_pixel"),
          node("Resize", ["r", "", "scales"], ["y"], "by_scale",
               mode="nearest", coordinate_transformation_mode="asymmetric",
               nearest_mode="floor")],
         [X], io("y", [1, 2, 18, 18]),
         [ints("sizes", [1, 2, 9, 9]),
          helper.make_tensor("scales", TensorProto.FLOAT, [4],
                             [1.0, 1.0, 2.0, 2.0])])
    # tf_crop_and_resize: linear to sizes over a region across the left
    # edge (extrapolated with 0.5), nearest by scales over one across the
    # bottom (the output size ignores the region, as ONNX Runtime's), cubic
    # with exclude_outside over one inside.
    crop = "tf_crop_and_resize"
    save("resize_crop.onnxtxt",
         [node("Resize", ["input", "roi1", "", "sizes1"], ["r1"],
               "across_left", mode="linear",
               coordinate_transformation_mode=crop, extrapolation_value=0.5),
          node("Resize", ["r1", "roi2", "scales2"], ["r2"], "across_bottom",
               mode="nearest", coordinate_transformation_mode=crop,
               nearest_mode="round_prefer_ceil", extrapolation_value=-1.0),
          node("Resize", ["r2", "roi3", "", "sizes3"], ["y"], "inside",
               mode="cubic", coordinate_transformation_mode=crop,
               exclude_outside=1)],
         [io("input", [1, 3, 12, 10])], io("y", [1, 3, 7, 7]),
         [floats("roi1", [0, 0, 0.1, -0.2, 1, 1, 0.8, 1.1]),
          ints("sizes1", [1, 3, 9, 8]),
          floats("roi2", [0, 0, 0.2, 0.25, 1, 1, 1.3, 0.9]),
          floats("scales2", [1, 1, 1.5, 1.25]),
          floats("roi3", [0, 0, 0.05, 0.1, 1, 1, 0.95, 0.9]),
          ints("sizes3", [1, 3, 7, 7])])
    # Reshapes that only reinterpret memory: a generator's Linear viewed as
    # a 4 x 4 x 4 image (-1 batch), a conv, its map flattened for a
    # Softmax over all its values, that squeezed into N x 32 x 1 x 1 and
    # back (held alike: no copy).
    save("reshape_memory.onnxtxt",
         [node("Gemm", ["input", "w", "b"], ["fc"], "fc", transB=1),
          node("Relu", ["fc"], ["r"], "relu"),
          node("Reshape", ["r", "image"], ["img"], "view"),
          node("Conv", ["img", "k"], ["c"], "conv", kernel_shape=[3, 3],
               pads=[1, 1, 1, 1]),
          node("Flatten", ["c"], ["f"], "flatten", axis=1),
          node("Softmax", ["f"], ["s"], "softmax", axis=1),
          node("Unsqueeze", ["s", "axes"], ["u"], "unsqueeze"),
          node("Squeeze", ["u", "axes"], ["y"], "squeeze")],
         [io("input", [1, 8])], io("y", [1, 32]),
         [weights("w", [64, 8], 31), weights("b", [64], 32),
          ints("image", [-1, 4, 4, 4]), weights("k", [2, 4, 3, 3], 33),
          ints("axes", [2, 3])])
    # Upsample (opset 9: scales as an input; nearest, asymmetric, floor).
    save("Upsample.onnxtxt",
         [node("Upsample", ["input", "scales"], ["y"], "up", mode="nearest")],
         [X], io("y", [1, 2, 12, 18]),
         [helper.make_tensor("scales", TensorProto.FLOAT, [4],
                             [1.0, 1.0, 2.0, 3.0])], opset=9)
    # Pooling.
    # HPVM's pool_max, then GoogLeNet's ceil_mode pool (pool_max_pads).
    save("MaxPool.onnxtxt",
         [node("MaxPool", ["input"], ["p"], "pool", kernel_shape=[2, 2],
               strides=[2, 2]),
          node("MaxPool", ["p"], ["y"], "ceil", kernel_shape=[2, 2],
               strides=[2, 2], ceil_mode=1)],
         [X], io("y", [1, 2, 2, 2]))
    # HPVM's pool_mean, then a mean over the input only (pool_mean_pads).
    save("AveragePool.onnxtxt",
         [node("AveragePool", ["input"], ["p"], "pool", kernel_shape=[3, 3],
               strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1),
          node("AveragePool", ["p"], ["y"], "exclude_pad",
               kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
               count_include_pad=0)],
         [X], io("y", [1, 2, 3, 3]))
    save("GlobalAveragePool.onnxtxt",
         [node("GlobalAveragePool", ["input"], ["y"], "gap")],
         [X], io("y", [1, 2, 1, 1]))
    # Elementwise and normalisation.
    save("Add.onnxtxt",
         [node("Relu", ["input"], ["r"], "relu"),
          node("Add", ["r", "input"], ["s"], "residual"),
          node("Add", ["s", "c"], ["y"], "bias")],
         [X], io("y", [1, 2, 6, 6]), [weights("c", [2, 1, 1], 6)])
    save("BatchNormalization.onnxtxt",
         [node("BatchNormalization", ["input", "scale", "bias", "mean", "var"],
               ["y"], "bn", epsilon=1e-3, momentum=0.9)],
         [X], io("y", [1, 2, 6, 6]),
         [weights("scale", [2], 7), weights("bias", [2], 8),
          weights("mean", [2], 9),
          helper.make_tensor("var", TensorProto.FLOAT, [2], [0.5, 2.0])])
    save("Relu.onnxtxt", [node("Relu", ["input"], ["y"], "relu")], [X],
         io("y", [1, 2, 6, 6]))
    save("Clip.onnxtxt",
         [node("Clip", ["input", "lo", "hi"], ["y"], "relu6"),
          node("Clip", ["y", "lo"], ["z"], "relu")],
         [X], io("z", [1, 2, 6, 6]),
         [helper.make_tensor("lo", TensorProto.FLOAT, [], [0.0]),
          helper.make_tensor("hi", TensorProto.FLOAT, [], [6.0])])
    # Max and Min with a constant scalar (clamps), and a Clip with a
    # negative min and no max.
    # With a constant scalar (a clamp), then of two activations, the
    # broadcast one first.
    save("Max.onnxtxt",
         [node("Max", ["input", "floor"], ["a"], "at_least"),
          node("GlobalAveragePool", ["input"], ["g"], "mean"),
          node("Max", ["g", "a"], ["y"], "at_least_the_mean")],
         [X], io("y", [1, 2, 6, 6]),
         [helper.make_tensor("floor", TensorProto.FLOAT, [], [-0.5])])
    # With a constant scalar, then a per-channel constant.
    save("Min.onnxtxt",
         [node("Min", ["ceiling", "input"], ["m"], "at_most"),
          node("Min", ["m", "per_channel"], ["n"], "at_most_per_channel"),
          node("Clip", ["n", "lo"], ["y"], "from_below")],
         [X], io("y", [1, 2, 6, 6]),
         [helper.make_tensor("ceiling", TensorProto.FLOAT, [], [0.75]),
          helper.make_tensor("per_channel", TensorProto.FLOAT, [2, 1, 1],
                             [0.5, -0.1]),
          helper.make_tensor("lo", TensorProto.FLOAT, [], [-0.25])])
    save("Sum.onnxtxt",
         [node("Relu", ["input"], ["r"], "relu"),
          node("Tanh", ["input"], ["t"], "tanh"),
          node("Sum", ["input", "r", "t"], ["y"], "sum")],
         [X], io("y", [1, 2, 6, 6]))
    # Element-wise arithmetic of activations beyond the LayerNorm pieces:
    # a standardisation by hand.
    save("arithmetic.onnxtxt",
         [node("GlobalAveragePool", ["input"], ["mean"], "mean"),
          node("Sub", ["input", "mean"], ["d"], "centre"),
          node("Pow", ["d", "two"], ["d2"], "square"),
          node("GlobalAveragePool", ["d2"], ["var"], "variance"),
          node("Add", ["var", "eps"], ["ve"], "plus_eps"),
          node("Sqrt", ["ve"], ["sd"], "deviation"),
          node("Div", ["d", "sd"], ["y"], "standardise")],
         [X], io("y", [1, 2, 6, 6]),
         [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
          helper.make_tensor("eps", TensorProto.FLOAT, [], [1e-3])])
    save("Tanh.onnxtxt", [node("Tanh", ["input"], ["y"], "tanh")], [X],
         io("y", [1, 2, 6, 6]))
    # A conv's post-op (fused) with alpha 0.2, then ONNX's default alpha.
    save("LeakyRelu.onnxtxt",
         [node("Conv", ["input", "w", "b"], ["c"], "conv", kernel_shape=[3, 3],
               pads=[1, 1, 1, 1]),
          node("LeakyRelu", ["c"], ["l"], "leaky", alpha=0.2),
          node("LeakyRelu", ["l"], ["y"], "default_alpha")],
         [X], io("y", [1, 3, 6, 6]),
         [weights("w", [3, 2, 3, 3], 60), weights("b", [3], 61)])
    # x.mean([2, 3]) as torch.onnx writes it (keepdims=0), then a Gemm.
    save("ReduceMean.onnxtxt",
         [node("ReduceMean", ["input"], ["m"], "mean", axes=[2, 3],
               keepdims=0),
          node("Gemm", ["m", "w"], ["y"], "fc", transB=1)],
         [X], io("y", [1, 3]), [weights("w", [3, 2], 50)])
    save("Sigmoid.onnxtxt", [node("Sigmoid", ["input"], ["y"], "sigmoid")],
         [X], io("y", [1, 2, 6, 6]))
    # A squeeze-and-excitation gate: the input times its own pooled
    # sigmoid, broadcast over the spatial extents; then a constant scale.
    save("Mul.onnxtxt",
         [node("GlobalAveragePool", ["input"], ["p"], "squeeze"),
          node("Sigmoid", ["p"], ["g"], "gate"),
          node("Mul", ["input", "g"], ["m"], "excite"),
          node("Mul", ["m", "s"], ["y"], "scale")],
         [X], io("y", [1, 2, 6, 6]),
         [helper.make_tensor("s", TensorProto.FLOAT, [2, 1, 1], [0.5, 2.0])])
    # Minus a per-channel constant, divided by a scalar; the shape
    # arithmetic of a view folds (Sub, Div of constants).
    # Minus a constant, then minus an activation broadcast (N x C x 1 x 1).
    save("Sub.onnxtxt",
         [node("Sub", ["input", "m"], ["c"], "center"),
          node("GlobalAveragePool", ["input"], ["g"], "mean"),
          node("Sub", ["c", "g"], ["y"], "minus_mean")],
         [X], io("y", [1, 2, 6, 6]),
         [helper.make_tensor("m", TensorProto.FLOAT, [2, 1, 1], [0.5, -1.0])])
    # By a constant, then by an activation of the same shape.
    save("Div.onnxtxt",
         [node("Div", ["input", "d"], ["s"], "scale"),
          node("Sigmoid", ["input"], ["g"], "gate"),
          node("Div", ["s", "g"], ["y"], "by_gate")],
         [X], io("y", [1, 2, 6, 6]),
         [helper.make_tensor("d", TensorProto.FLOAT, [], [4.0])])
    # ShuffleNet v2: split the channels in two (Slice), shuffle them
    # (Reshape, Transpose, Reshape).
    save("Slice.onnxtxt",
         [node("Conv", ["input", "w"], ["c"], "expand", kernel_shape=[1, 1]),
          node("Slice", ["c", "s0", "s2", "ax"], ["a"], "split_a"),
          node("Slice", ["c", "s2", "s4", "ax"], ["b"], "split_b"),
          node("Add", ["a", "b"], ["y"], "join")],
         [X], io("y", [1, 2, 6, 6]),
         [weights("w", [4, 2, 1, 1], 20), ints("s0", [0]), ints("s2", [2]),
          ints("s4", [4]), ints("ax", [1])])
    # Split (unbind, chunk): sizes 1, 2, 3 as an input (opset 13), put back
    # in another order; an even split by the attribute's default (opset
    # 11). Each output is loaded as a Slice.
    save("Split.onnxtxt",
         [node("Conv", ["input", "w"], ["c"], "expand", kernel_shape=[1, 1]),
          node("Split", ["c", "sizes"], ["a", "b", "d"], "split", axis=1),
          node("Sigmoid", ["b"], ["g"], "gate"),
          node("Concat", ["d", "a", "g"], ["y"], "join", axis=1)],
         [X], io("y", [1, 6, 6, 6]),
         [weights("w", [6, 2, 1, 1], 22), ints("sizes", [1, 2, 3])])
    save("Split_opset11.onnxtxt",
         [node("Conv", ["input", "w"], ["c"], "expand", kernel_shape=[1, 1]),
          node("Split", ["c"], ["a", "b", "d"], "split", axis=-3),
          node("Mul", ["a", "b"], ["ab"], "mul"),
          node("Add", ["ab", "d"], ["y"], "add")],
         [X], io("y", [1, 2, 6, 6]),
         [weights("w", [6, 2, 1, 1], 23)], opset=11)
    save("Transpose.onnxtxt",
         [node("Conv", ["input", "w"], ["c"], "expand", kernel_shape=[1, 1]),
          node("Reshape", ["c", "grouped"], ["g"], "group"),
          node("Transpose", ["g"], ["t"], "swap", perm=[0, 2, 1, 3, 4]),
          node("Reshape", ["t", "flat"], ["y"], "ungroup")],
         [X], io("y", [1, 4, 6, 6]),
         [weights("w", [4, 2, 1, 1], 21), ints("grouped", [1, 2, 2, 6, 6]),
          ints("flat", [1, 4, 6, 6])])
    # MobileNet v3: hardswish as x * HardSigmoid(x) (one hard_swish, either
    # operand order, 4-D and after a Gemm), a squeeze-and-excitation gate
    # (hard_sigmoid, then multiply), and ONNX's default alpha 0.2 (only
    # alpha 1/6, beta 1/2 make a hardswish: hard_sigmoid, then multiply).
    save("HardSigmoid.onnxtxt",
         [node("HardSigmoid", ["input"], ["h1"], "hswish_gate", alpha=1 / 6,
               beta=0.5),
          node("Mul", ["input", "h1"], ["a"], "hswish"),
          node("GlobalAveragePool", ["a"], ["p"], "squeeze"),
          node("HardSigmoid", ["p"], ["g"], "se_gate", alpha=1 / 6, beta=0.5),
          node("Mul", ["g", "a"], ["e"], "excite"),
          node("HardSigmoid", ["e"], ["h2"], "default_alpha"),
          node("Mul", ["h2", "e"], ["d"], "not_hswish"),
          node("Flatten", ["d"], ["f"], "flatten"),
          node("Gemm", ["f", "w"], ["c"], "fc", transB=1),
          node("HardSigmoid", ["c"], ["h3"], "fc_gate", alpha=1 / 6,
               beta=0.5),
          node("Mul", ["h3", "c"], ["y"], "fc_hswish")],
         [X], io("y", [1, 3]), [weights("w", [3, 72], 51)])
    save("HardSwish.onnxtxt",
         [node("HardSwish", ["input"], ["y"], "hardswish")], [X],
         io("y", [1, 2, 6, 6]), opset=14)
    # A ConvNeXt block as torch.onnx writes it at opset 13: channel-last
    # between two Transposes, LayerNorm (ReduceMean, Sub, Pow, ReduceMean,
    # Add, Sqrt, Div, Mul, Add), Linear (MatMul, Add), exact GELU (Div,
    # Erf, Add, Mul, Mul), Linear, then layer scale and the residual.
    def f32(name, dims, values):
        return helper.make_tensor(name, TensorProto.FLOAT, dims, values)
    block = [
        node("Conv", ["input", "w0"], ["x"], "dwconv", kernel_shape=[3, 3],
             pads=[1, 1, 1, 1]),
        node("Transpose", ["x"], ["t"], "to_last", perm=[0, 2, 3, 1]),
        node("ReduceMean", ["t"], ["m"], "ln_mean", axes=[-1]),
        node("Sub", ["t", "m"], ["d"], "ln_sub"),
        node("Pow", ["d", "two"], ["d2"], "ln_pow"),
        node("ReduceMean", ["d2"], ["v"], "ln_var", axes=[-1]),
        node("Add", ["v", "eps"], ["ve"], "ln_eps"),
        node("Sqrt", ["ve"], ["s"], "ln_sqrt"),
        node("Div", ["d", "s"], ["nrm"], "ln_div"),
        node("Mul", ["nrm", "gamma"], ["sc"], "ln_scale"),
        node("Add", ["sc", "beta"], ["ln"], "ln_bias"),
        node("MatMul", ["ln", "w1"], ["h"], "fc1"),
        node("Add", ["b1", "h"], ["hb"], "fc1_bias"),
        node("Div", ["hb", "sqrt2"], ["g0"], "gelu_div"),
        node("Erf", ["g0"], ["g1"], "gelu_erf"),
        node("Add", ["g1", "one"], ["g2"], "gelu_add"),
        node("Mul", ["hb", "g2"], ["g3"], "gelu_mul"),
        node("Mul", ["g3", "half"], ["g"], "gelu_half"),
        node("MatMul", ["g", "w2"], ["o"], "fc2"),
        node("Add", ["b2", "o"], ["ob"], "fc2_bias"),
        node("Transpose", ["ob"], ["back"], "to_first", perm=[0, 3, 1, 2]),
        node("Mul", ["scale", "back"], ["ls"], "layer_scale"),
        node("Add", ["ls", "x"], ["y"], "residual")]
    block_inits = [
        weights("w0", [2, 2, 3, 3], 22),
        f32("two", [], [2.0]), f32("eps", [], [1e-6]),
        f32("gamma", [2], [1.5, 0.5]), f32("beta", [2], [0.25, -0.5]),
        weights("w1", [2, 8], 23), weights("b1", [8], 24),
        f32("sqrt2", [], [1.4142135381698608]), f32("one", [], [1.0]),
        f32("half", [], [0.5]), weights("w2", [8, 2], 25),
        weights("b2", [2], 26), f32("scale", [2, 1, 1], [0.5, 2.0])]
    for op in ("Pow", "Sqrt", "Erf"):
        save(op + ".onnxtxt", block, [X], io("y", [1, 2, 6, 6]), block_inits)
    # ONNX's own LayerNormalization (opset 17), channel-last.
    save("LayerNormalization.onnxtxt",
         [node("Transpose", ["input"], ["t"], "to_last", perm=[0, 2, 3, 1]),
          node("LayerNormalization", ["t", "gamma", "beta"], ["ln"], "ln",
               axis=-1, epsilon=1e-6),
          node("Transpose", ["ln"], ["y"], "to_first", perm=[0, 3, 1, 2])],
         [X], io("y", [1, 2, 6, 6]),
         [f32("gamma", [2], [1.5, 0.5]), f32("beta", [2], [0.25, -0.5])],
         opset=17)
    save("Softmax.onnxtxt",
         [node("Flatten", ["input"], ["f"], "flatten"),
          node("Gemm", ["f", "w"], ["g"], "fc", transB=1),
          node("Softmax", ["g"], ["y"], "softmax", axis=1)],
         [X], io("y", [1, 3]), [weights("w", [3, 72], 10)])
    # A constant minus an activation (per channel), a scalar divided by one
    # (a gate in (0, 1): no division by zero).
    save("constant_first.onnxtxt",
         [node("Sub", ["m", "input"], ["r"], "reflect"),
          node("Sigmoid", ["r"], ["g"], "gate"),
          node("Div", ["d", "g"], ["y"], "inverse_gate")],
         [X], io("y", [1, 2, 6, 6]),
         [helper.make_tensor("m", TensorProto.FLOAT, [2, 1, 1], [0.5, -1.0]),
          helper.make_tensor("d", TensorProto.FLOAT, [], [3.0])])
    # Weights stored in half precision, read through their Casts (a model
    # converted to fp16 keeping fp32 inputs and outputs): a conv filter in
    # float16 (one subnormal value among them) and its bias in bfloat16.
    def bits(name, shape, seed, dtype):
        rng = np.random.RandomState(seed)
        v = np.round(rng.uniform(-1, 1, size=shape), 3).astype(np.float32)
        if dtype == TensorProto.FLOAT16:
            v.flat[0] = 3e-6
            b = v.astype(np.float16).view(np.uint16)
        else:
            b = (v.view(np.uint32) >> 16).astype(np.uint16)
        t = TensorProto(name=name, data_type=dtype, dims=shape)
        t.int32_data.extend(int(x) for x in b.flatten())
        return t
    save("fp16_weights.onnxtxt",
         [node("Cast", ["w16"], ["w"], "filter_to_float", to=TensorProto.FLOAT),
          node("Cast", ["b16"], ["b"], "bias_to_float", to=TensorProto.FLOAT),
          node("Conv", ["input", "w", "b"], ["c"], "conv",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          node("Relu", ["c"], ["y"], "relu")],
         [X], io("y", [1, 3, 6, 6]),
         [bits("w16", [3, 2, 3, 3], 14, TensorProto.FLOAT16),
          bits("b16", [3], 15, TensorProto.BFLOAT16)])
    # Per-pixel class log-probabilities: over the channels of each pixel.
    save("LogSoftmax.onnxtxt",
         [node("Conv", ["input", "w"], ["c"], "classes", kernel_shape=[1, 1]),
          node("LogSoftmax", ["c"], ["y"], "log_softmax", axis=1)],
         [X], io("y", [1, 3, 6, 6]), [weights("w", [3, 2, 1, 1], 13)])
    # A 3-D input (N x H x W) unsqueezed into the channel axis, as audio
    # models and grayscale ones without a channel axis take theirs.
    save("input_3d_unsqueeze.onnxtxt",
         [node("Unsqueeze", ["input", "axes"], ["u"], "unsqueeze"),
          node("Conv", ["u", "w"], ["c"], "conv", kernel_shape=[3, 3],
               pads=[1, 1, 1, 1]),
          node("Relu", ["c"], ["y"], "relu")],
         [io("input", [1, 6, 6])], io("y", [1, 2, 6, 6]),
         [ints("axes", [1]), weights("w", [2, 1, 3, 3], 14)])
    # Shape, aliasing and folding.
    save("Flatten.onnxtxt",
         [node("Flatten", ["input"], ["f"], "flatten", axis=1),
          node("Gemm", ["f", "w"], ["y"], "fc", transB=1)],
         [X], io("y", [1, 3]), [weights("w", [3, 72], 11)])
    save("Reshape.onnxtxt",
         [node("Reshape", ["input", "shape"], ["f"], "reshape"),
          node("Gemm", ["f", "w"], ["y"], "fc", transB=1)],
         [X], io("y", [1, 3]), [ints("shape", [1, -1]),
                                weights("w", [3, 72], 12)])
    view = flatten_view("view_", "input", "f") + [
        node("Gemm", ["f", "w"], ["y"], "fc", transB=1)]
    for op in ("Shape", "Gather", "Unsqueeze"):
        save(op + ".onnxtxt", view, [X], io("y", [1, 3]),
             [weights("w", [3, 72], 13)])
    # A fire module (SqueezeNet) joined with its input along the channels,
    # then the flattening view, whose shape Concat folds away.
    save("Concat.onnxtxt",
         [node("Conv", ["input", "w1"], ["a"], "expand1x1",
               kernel_shape=[1, 1]),
          node("Relu", ["a"], ["ar"], "relu1"),
          node("Conv", ["input", "w3"], ["b"], "expand3x3",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          node("Concat", ["input", "ar", "b"], ["c"], "join", axis=1)]
         + flatten_view("view_", "c", "f")
         + [node("Gemm", ["f", "w"], ["y"], "fc", transB=1)],
         [X], io("y", [1, 3]),
         [weights("w1", [3, 2, 1, 1], 18), weights("w3", [1, 2, 3, 3], 19),
          weights("w", [3, 216], 13)])
    save("Squeeze.onnxtxt",
         [node("Shape", ["input"], ["s"], "shape"),
          node("Gather", ["s", "idx"], ["n"], "gather", axis=0),
          node("Squeeze", ["n", "axes"], ["n0"], "squeeze"),
          node("Unsqueeze", ["n0", "axes"], ["n1"], "unsqueeze"),
          node("Concat", ["n1", "minus1"], ["t"], "concat", axis=0),
          node("Reshape", ["input", "t"], ["f"], "reshape"),
          node("Gemm", ["f", "w"], ["y"], "fc", transB=1)],
         [X], io("y", [1, 3]),
         [ints("idx", [0]), ints("axes", [0]), ints("minus1", [-1]),
          weights("w", [3, 72], 14)])
    save("Cast.onnxtxt",
         [node("Shape", ["input"], ["s"], "shape"),
          node("Cast", ["s"], ["sf"], "to_float", to=TensorProto.FLOAT),
          node("Cast", ["sf"], ["si"], "to_int", to=TensorProto.INT64),
          node("Gather", ["si", "idx"], ["n"], "gather", axis=0),
          node("Concat", ["n", "minus1"], ["t"], "concat", axis=0),
          node("Reshape", ["input", "t"], ["f"], "reshape"),
          node("Gemm", ["f", "w"], ["y"], "fc", transB=1)],
         [X], io("y", [1, 3]),
         [ints("idx", [0]), ints("minus1", [-1]), weights("w", [3, 72], 15)])
    # PyTorch's x.expand(1, -1, -1, -1) of a constant, as it exports the
    # class token's broadcast (ViT): the shape's -1s replaced through
    # ConstantOfShape, Equal and Where, then Expand; all of it folds into
    # the per-channel bias the Add reads.
    expand = [
        node("ConstantOfShape", ["rank"], ["ones"], "ones",
             value=helper.make_tensor("v", TensorProto.INT64, [1], [1])),
        node("Mul", ["ones", "minus1"], ["neg"], "negate"),
        node("Equal", ["target", "neg"], ["keep"], "equal"),
        node("Where", ["keep", "ones", "target"], ["shape"], "where"),
        node("Expand", ["c", "shape"], ["e"], "expand"),
        node("Add", ["input", "e"], ["y"], "bias")]
    for op in ("ConstantOfShape", "Equal", "Where", "Expand"):
        save(op + ".onnxtxt", expand, [X], io("y", [1, 2, 6, 6]),
             [ints("rank", [4]), ints("minus1", [-1]),
              ints("target", [1, -1, -1, -1]), weights("c", [2, 1, 1], 20)])
    # Index arithmetic on constants as Swin's mask computation writes it
    # (Range, Mod, ScatterND, Not): channel 1 of a per-channel bias
    # replaced, all of it folded into the constant the Add reads.
    scatter = [
        node("Range", ["one", "two", "one"], ["r"], "range"),
        node("Mod", ["r", "two"], ["m"], "mod", fmod=0),
        node("Unsqueeze", ["m", "axis1"], ["idx"], "unsqueeze"),
        node("ScatterND", ["c", "idx", "upd"], ["s"], "scatter"),
        node("Equal", ["m", "zero"], ["e"], "equal"),
        node("Not", ["e"], ["keep"], "not"),
        node("Where", ["keep", "s", "c"], ["w"], "where"),
        node("Add", ["input", "w"], ["y"], "bias")]
    for op in ("Mod", "Not", "Range", "ScatterND"):
        save(op + ".onnxtxt", scatter, [X], io("y", [1, 2, 6, 6]),
             [helper.make_tensor("one", TensorProto.INT64, [], [1]),
              helper.make_tensor("two", TensorProto.INT64, [], [2]),
              ints("axis1", [1]), ints("zero", [0]),
              weights("c", [2, 1, 1], 22), weights("upd", [1, 1, 1], 23)])
    save("Identity.onnxtxt",
         [node("Identity", ["input"], ["i"], "identity"),
          node("Relu", ["i"], ["y"], "relu")],
         [X], io("y", [1, 2, 6, 6]))
    save("Dropout.onnxtxt",
         [node("Dropout", ["input", "ratio"], ["d"], "dropout"),
          node("Relu", ["d"], ["y"], "relu")],
         [X], io("y", [1, 2, 6, 6]),
         [helper.make_tensor("ratio", TensorProto.FLOAT, [], [0.25])])
    save("Pad.onnxtxt",
         [node("Pad", ["input", "pads"], ["p"], "pad", mode="constant"),
          node("Conv", ["p", "w"], ["y"], "conv", kernel_shape=[3, 3])],
         [X], io("y", [1, 2, 6, 6]),
         [ints("pads", [0, 0, 1, 1, 0, 0, 1, 1]), weights("w", [2, 2, 3, 3],
                                                          16)])
    save("Constant.onnxtxt",
         [node("Constant", [], ["w"], "weight",
               value=weights("value", [2, 2, 1, 1], 17)),
          node("Conv", ["input", "w"], ["y"], "conv", kernel_shape=[1, 1])],
         [X], io("y", [1, 2, 6, 6]))


def networks():
    # A small LeNet (HPVM benchmark 9.1 with fewer channels), opset 10.
    X = io("input", [1, 1, 28, 28])
    save("lenet_small.onnxtxt",
         [node("Conv", ["input", "c1w", "c1b"], ["c1"], "conv1",
               kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
          node("Tanh", ["c1"], ["t1"], "tanh1"),
          node("MaxPool", ["t1"], ["p1"], "pool1", kernel_shape=[2, 2],
               strides=[2, 2]),
          node("Conv", ["p1", "c2w", "c2b"], ["c2"], "conv2",
               kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
          node("Tanh", ["c2"], ["t2"], "tanh2"),
          node("MaxPool", ["t2"], ["p2"], "pool2", kernel_shape=[2, 2],
               strides=[2, 2]),
          node("Flatten", ["p2"], ["f"], "flatten"),
          node("Gemm", ["f", "f1w", "f1b"], ["g1"], "fc1", transB=1),
          node("Tanh", ["g1"], ["t3"], "tanh3"),
          node("Gemm", ["t3", "f2w", "f2b"], ["g2"], "fc2", transB=1),
          node("Tanh", ["g2"], ["t4"], "tanh4"),
          node("Softmax", ["t4"], ["output"], "softmax", axis=1)],
         [X], io("output", [1, 10]),
         [weights("c1w", [4, 1, 5, 5], 20), weights("c1b", [4], 21),
          weights("c2w", [8, 4, 5, 5], 22), weights("c2b", [8], 23),
          weights("f1w", [16, 392], 24), weights("f1b", [16], 25),
          weights("f2w", [10, 16], 26), weights("f2b", [10], 27)],
         opset=10)
    # Depthwise block with ReLU6 and asymmetric SAME padding, opset 11 Clip.
    X = io("input", [1, 4, 7, 7])
    save("depthwise_block.onnxtxt",
         [node("Conv", ["input", "dw"], ["d"], "depthwise", group=4,
               kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
          node("BatchNormalization", ["d", "s", "b", "m", "v"], ["bn"], "bn",
               epsilon=1e-3),
          node("Clip", ["bn", "lo", "hi"], ["r"], "relu6"),
          node("Conv", ["r", "pw"], ["p"], "pointwise", kernel_shape=[1, 1]),
          node("GlobalAveragePool", ["p"], ["output"], "gap")],
         [X], io("output", [1, 6, 1, 1]),
         [weights("dw", [4, 1, 3, 3], 30), weights("s", [4], 31),
          weights("b", [4], 32), weights("m", [4], 33),
          helper.make_tensor("v", TensorProto.FLOAT, [4], [1, 2, 3, 4]),
          helper.make_tensor("lo", TensorProto.FLOAT, [], [0.0]),
          helper.make_tensor("hi", TensorProto.FLOAT, [], [6.0]),
          weights("pw", [6, 4, 1, 1], 34)],
         opset=11)
    # EfficientNet: SiLU after a convolution as torch.onnx writes it
    # (Sigmoid, then Mul with the same input; one silu, either operand
    # order), a squeeze-and-excitation gate (sigmoid of another value,
    # multiply: stays) and a sigmoid read beside the product (stays).
    X = io("input", [1, 2, 6, 6])
    save("silu_block.onnxtxt",
         [node("Conv", ["input", "w", "b"], ["c"], "conv", kernel_shape=[3, 3],
               pads=[1, 1, 1, 1]),
          node("Sigmoid", ["c"], ["s1"], "silu_sigmoid"),
          node("Mul", ["s1", "c"], ["a"], "silu_mul"),
          node("GlobalAveragePool", ["a"], ["p"], "squeeze"),
          node("Sigmoid", ["p"], ["g"], "gate"),
          node("Mul", ["a", "g"], ["e"], "excite"),
          node("Sigmoid", ["e"], ["s3"], "shared_sigmoid"),
          node("Mul", ["e", "s3"], ["m"], "not_silu"),
          node("Add", ["m", "s3"], ["y"], "sum")],
         [X], io("y", [1, 4, 6, 6]),
         [weights("w", [4, 2, 3, 3], 70), weights("b", [4], 71)])


def errors():
    X = io("input", [1, 2, 6, 6])
    save("errors/two_unsupported.onnxtxt",
         [node("Relu", ["input"], ["r"], "relu"),
          node("Elu", ["r"], ["l"], "elu"),
          node("Conv", ["l", "w"], ["c"], "dilated", kernel_shape=[3, 3],
               dilations=[0, 2]),
          node("Softsign", ["c"], ["y"], "")],
         [X], io("y", [1, 2, 2, 2]), [weights("w", [2, 2, 3, 3], 40)])
    # Pre-quantized models: what is refused, all at once.
    s8 = helper.make_tensor("s", TensorProto.FLOAT, [], [0.0078125])
    z8 = helper.make_tensor("z", TensorProto.UINT8, [], [128])
    save("errors/quantized.onnxtxt",
         [node("QuantizeLinear", ["input", "cs", "cz"], ["pc"], "per_channel",
               axis=1),
          node("DequantizeLinear", ["pc", "cs", "cz"], ["d0"], "dq0", axis=1),
          node("QuantizeLinear", ["d0", "s", "z"], ["q"], "quantize"),
          node("Transpose", ["q"], ["t"], "transpose_integers",
               perm=[0, 1, 3, 2]),
          node("DequantizeLinear", ["t", "s", "z"], ["d2"], "dq2"),
          node("QuantizeLinear", ["input", "s", "z"], ["q2"], "quantize2"),
          node("DequantizeLinear", ["q2", "s2", "z"], ["d1"], "other_scale"),
          node("Add", ["d1", "d2"], ["y"], "add")],
         [X], io("y", [1, 2, 6, 6]),
         [s8, z8, helper.make_tensor("s2", TensorProto.FLOAT, [], [0.5]),
          helper.make_tensor("cs", TensorProto.FLOAT, [2], [0.01, 0.02]),
          helper.make_tensor("cz", TensorProto.UINT8, [2], [128, 128])])
    # Dynamic quantization in a form other than ONNX Runtime's (no scale
    # Mul after the Cast).
    save("errors/dynamic_quantized.onnxtxt",
         [node("DynamicQuantizeLinear", ["input"], ["q", "s", "z"],
               "quantize"),
          node("ConvInteger", ["q", "w", "z"], ["i"], "conv",
               kernel_shape=[1, 1]),
          node("Cast", ["i"], ["y"], "cast", to=TensorProto.FLOAT)],
         [X], io("y", [1, 2, 6, 6]),
         [helper.make_tensor("w", TensorProto.UINT8, [2, 2, 1, 1],
                             [1, 2, 3, 4])])
    # Symbolic height and width (fixed by --input-shape).
    save("errors/symbolic_hw.onnxtxt",
         [node("Conv", ["input", "w"], ["y"], "conv", kernel_shape=[3, 3],
               pads=[1, 1, 1, 1])],
         [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                        ["N", 2, "H", "W"])],
         helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       ["N", 3, "H", "W"]),
         [weights("w", [3, 2, 3, 3], 41)])
    # More refusals than a flat list holds: grouped by op type.
    chain = [node("Elu", ["input" if i == 0 else f"e{i - 1}"], [f"e{i}"],
                  f"elu{i}") for i in range(8)]
    chain += [node("Softsign", ["e7"], ["s0"], "soft0"),
              node("Softsign", ["s0"], ["y"], "soft1")]
    save("errors/many_unsupported.onnxtxt", chain, [X],
         io("y", [1, 2, 6, 6]))
    save("errors/unknown_attribute.onnxtxt",
         [node("Relu", ["input"], ["y"], "relu", alpha=0.5)],
         [X], io("y", [1, 2, 6, 6]))
    save("errors/low_opset.onnxtxt",
         [node("Shape", ["input"], ["s"], "shape"),
          node("Cast", ["s"], ["t"], "cast", to="INT64"),
          node("Reshape", ["input"], ["f"], "reshape", shape=[1, 72]),
          node("Gemm", ["f", "w"], ["y"], "fc", transB=1)],
         [X], io("y", [1, 3]), [weights("w", [3, 72], 41)], opset=5)
    save("errors/nonconst_weight.onnxtxt",
         [node("Relu", ["input"], ["w"], "weights_from_input"),
          node("Conv", ["input", "w"], ["y"], "conv")],
         [io("input", [1, 1, 3, 3])], io("y", [1, 1, 1, 1]))
    save("errors/two_inputs.onnxtxt",
         [node("Add", ["input", "other"], ["y"], "add")],
         [X, io("other", [1, 2, 6, 6])], io("y", [1, 2, 6, 6]))
    save("errors/input_3d.onnxtxt",
         [node("Transpose", ["input"], ["y"], "transpose", perm=[1, 0, 2])],
         [io("input", [1, 28, 20])], io("y", [28, 1, 20]))
    # Problems of every kind loading finds, reported at once: the input's
    # symbolic H and W with the nodes' unsupported operator.
    save("errors/symbolic_and_unsupported.onnxtxt",
         [node("Hardmax", ["input"], ["h"], "hardmax"),
          node("Relu", ["h"], ["y"], "relu")],
         [io("input", ["N", 3, "H", "W"])], io("y", ["N", 3, "H", "W"]))
    # One refusal for both stages: an operator the loader refuses (its
    # output still feeds nodes that lower), with nodes lowering refuses.
    save("errors/two_stages.onnxtxt",
         [node("Hardmax", ["input"], ["h"], "hardmax"),
          node("Relu", ["h"], ["y"], "after_hardmax"),
          node("Transpose", ["input"], ["t"], "transpose", perm=[0, 1, 3, 2]),
          node("Reshape", ["t", "shape"], ["f"], "reshape"),
          node("Relu", ["f"], ["z"], "relu")],
         [X], [io("y", [1, 2, 6, 6]), io("z", [2, 36])],
         [ints("shape", [2, -1])])
    save("errors/input_5d.onnxtxt",
         [node("Relu", ["input"], ["y"], "relu")],
         [io("input", [1, 2, 3, 4, 5])], io("y", [1, 2, 3, 4, 5]))
    save("errors/reshape_batch.onnxtxt",
         [node("Reshape", ["input", "shape"], ["f"], "reshape"),
          node("Relu", ["f"], ["y"], "relu")],
         [X], io("y", [2, 36]), [ints("shape", [2, -1])])
    save("errors/pool_geometry.onnxtxt",
         [node("AveragePool", ["input"], ["a"], "ceil", kernel_shape=[3, 3],
               strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
               count_include_pad=1),
          node("AveragePool", ["a"], ["b"], "asymmetric_mean",
               kernel_shape=[2, 2], pads=[0, 0, 1, 1], count_include_pad=1),
          node("Conv", ["b", "w"], ["y"], "asymmetric", kernel_shape=[2, 2],
               pads=[0, 0, 1, 1])],
         [X], io("y", [1, 2, 4, 4]), [weights("w", [2, 2, 2, 2], 42)])
    save("pad_before_maxpool.onnxtxt",
         [node("Pad", ["input", "pads"], ["p"], "pad"),
          node("MaxPool", ["p"], ["y"], "pool", kernel_shape=[2, 2])],
         [X], io("y", [1, 2, 7, 7]), [ints("pads", [0, 0, 1, 1, 0, 0, 1, 1])])


def torch_fixture(name, model, shape):
    """Writes \p model (its parameters replaced by seeded draws rounded to
    3 decimals) exported by torch.onnx as a PyTorch user does (opset 13,
    eval, constant folding) for an input of \p shape to NAME.onnxtxt, with
    typed tensor fields so that the fixture reads."""
    import io as pyio

    import onnx.numpy_helper
    import torch
    rng = np.random.RandomState(21)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(np.round(
                rng.uniform(-1, 1, size=tuple(p.shape)), 3).astype(
                    np.float32)))
    buf = pyio.BytesIO()
    torch.onnx.export(model, torch.zeros(*shape), buf, opset_version=13,
                      do_constant_folding=True, input_names=["input"],
                      output_names=["output"])
    model_proto = onnx.load_from_string(buf.getvalue())

    def typed(t):
        a = onnx.numpy_helper.to_array(t)
        return helper.make_tensor(t.name, t.data_type, list(t.dims),
                                  a.flatten().tolist())
    for i, t in enumerate(model_proto.graph.initializer):
        model_proto.graph.initializer[i].CopyFrom(typed(t))
    for n in model_proto.graph.node:
        for attr in n.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                attr.t.CopyFrom(typed(attr.t))
    model_proto.producer_name = "make_test_models.py (torch.onnx)"
    model_proto.producer_version = ""
    with open(os.path.join(ROOT, name + ".onnxtxt"), "w") as f:
        f.write(text_format.MessageToString(model_proto))


def vit_tiny():
    """torchvision's VisionTransformer at toy size (8x8 image, 4x4 patches:
    5 tokens of 8 features, one encoder layer of 2 heads, MLP 16, 3
    classes): the patterns makeTokensChannelFirst matches, exactly as the
    exporter writes them."""
    import torch
    from torchvision.models.vision_transformer import VisionTransformer
    torch.manual_seed(0)
    model = VisionTransformer(image_size=8, patch_size=4, num_layers=1,
                              num_heads=2, hidden_dim=8, mlp_dim=16,
                              num_classes=3).eval()
    torch_fixture("vit_tiny", model, (1, 3, 8, 8))


def tokens_tiny():
    """A CRNN-style token stage at toy size (3 x 4 x 6 image: a conv pooled
    to one row of 3 columns of 8 features; the columns as tokens through a
    Linear, a LayerNorm and a self-attention of 2 heads) with two heads:
    per-token log-probabilities of 5 classes (a B x T x D graph output) and
    a classifier of 3 classes on the mean of the tokens."""
    import torch
    import torch.nn as nn

    class Tokens(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.pool = nn.MaxPool2d((4, 2))
            self.proj = nn.Linear(8, 8)
            self.norm = nn.LayerNorm(8)
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
            self.per_token = nn.Linear(8, 5)
            self.whole = nn.Linear(8, 3)

        def forward(self, x):
            t = self.pool(self.conv(x)).squeeze(2).permute(0, 2, 1)
            t = self.norm(self.proj(t))
            t = t + self.attn(t, t, t, need_weights=False)[0]
            return (self.per_token(t).log_softmax(-1),
                    self.whole(t.mean(1)))

    torch.manual_seed(0)
    torch_fixture("tokens_tiny", Tokens().eval(), (1, 3, 4, 6))


def mixer_tiny():
    """MLP-Mixer's token mixing at toy size (3 x 4 x 6 image: a conv pooled
    to one row of 3 columns of 8 features, the columns as tokens): a
    LayerNorm, the tokens transposed to 1 x 8 x 3 (output 1), a Linear over
    the 3 tokens, transposed back, a residual; the mean over the tokens to
    3 classes (output 0). And mixer_mixed: 4 tokens of 4 features through
    a LayerNorm, plus their transpose (the same shape, not the same
    layout), then the mean to 3 classes."""
    import torch
    import torch.nn as nn

    class Mixer(nn.Module):
        def __init__(self, d=8, tokens=3, width=6):
            super().__init__()
            self.conv = nn.Conv2d(3, d, 3, padding=1)
            self.pool = nn.MaxPool2d((4, width // tokens))
            self.norm = nn.LayerNorm(d)
            self.mix = nn.Linear(tokens, tokens)
            self.whole = nn.Linear(d, 3)

        def forward(self, x):
            t = self.pool(self.conv(x)).squeeze(2).permute(0, 2, 1)
            flipped = self.norm(t).transpose(1, 2)
            t = t + self.mix(flipped).transpose(1, 2)
            return self.whole(t.mean(1)), flipped

    class Mixed(Mixer):
        def forward(self, x):
            t = self.pool(self.conv(x)).squeeze(2).permute(0, 2, 1)
            t = self.norm(t)
            return self.whole((t + t.transpose(1, 2)).mean(1))

    torch.manual_seed(0)
    torch_fixture("mixer_tiny", Mixer().eval(), (1, 3, 4, 6))
    torch_fixture("errors/mixer_mixed", Mixed(d=4, tokens=4, width=4).eval(),
                  (1, 3, 4, 4))


def products_tiny():
    """Token products at toy size (3 x 4 x 6 image: a conv pooled to one
    row of 3 columns of 8 features, the columns as tokens): a single-head
    attention written out (queries, keys, values, softmax(q @ k^T / 2) @
    v), a residual, then the features mixed across the tokens by the
    attention's weights from the transposed tokens ((t^T @ a)^T, a product
    whose first operand is flipped), a residual; the mean over the tokens
    to 3 classes."""
    import torch
    import torch.nn as nn

    class Products(nn.Module):
        def __init__(self, d=8, tokens=3, width=6):
            super().__init__()
            self.conv = nn.Conv2d(3, d, 3, padding=1)
            self.pool = nn.MaxPool2d((4, width // tokens))
            self.q = nn.Linear(d, d)
            self.k = nn.Linear(d, d)
            self.v = nn.Linear(d, d)
            self.whole = nn.Linear(d, 3)

        def forward(self, x):
            t = self.pool(self.conv(x)).squeeze(2).permute(0, 2, 1)
            a = torch.softmax(self.q(t) @ self.k(t).transpose(1, 2) / 2, -1)
            t = t + a @ self.v(t)
            t = t + (t.transpose(1, 2) @ a).transpose(1, 2)
            return self.whole(t.mean(1))

    torch.manual_seed(0)
    torch_fixture("products_tiny", Products().eval(), (1, 3, 4, 6))


def heads_tiny():
    """Multi-head attention written out, at toy size (3 x 4 x 6 image: a
    conv pooled to one row of 3 columns of 8 features, the columns as
    tokens): timm's form (one qkv Linear, Reshape to 1 x 3 x 3 x 2 x 4,
    permute, unbind, the queries times 1/2), a residual, then a Linear each
    viewed as 2 heads of 4 and permuted (the scores divided by 2), a
    residual; the mean over the tokens to 3 classes."""
    import torch
    import torch.nn as nn

    class Heads(nn.Module):
        def __init__(self, d=8, heads=2, tokens=3, width=6):
            super().__init__()
            self.heads = heads
            self.conv = nn.Conv2d(3, d, 3, padding=1)
            self.pool = nn.MaxPool2d((4, width // tokens))
            self.qkv = nn.Linear(d, 3 * d)
            self.q, self.k, self.v = (nn.Linear(d, d) for _ in range(3))
            self.whole = nn.Linear(d, 3)

        def split(self, x):
            b, t, d = x.shape
            return x.view(b, t, self.heads, d // self.heads).permute(0, 2, 1, 3)

        def forward(self, x):
            t = self.pool(self.conv(x)).squeeze(2).permute(0, 2, 1)
            b, n, d = t.shape
            q, k, v = self.qkv(t).reshape(b, n, 3, self.heads, -1).permute(
                2, 0, 3, 1, 4).unbind(0)
            a = (q * 0.5 @ k.transpose(-2, -1)).softmax(-1) @ v
            t = t + a.transpose(1, 2).reshape(b, n, d)
            q, k, v = self.split(self.q(t)), self.split(self.k(t)), \
                self.split(self.v(t))
            a = torch.softmax(q @ k.transpose(-1, -2) / 2, -1) @ v
            t = t + a.permute(0, 2, 1, 3).reshape(b, n, d)
            return self.whole(t.mean(1))

    torch.manual_seed(0)
    torch_fixture("heads_tiny", Heads().eval(), (1, 3, 4, 6))


def non_local_tiny():
    """A non-local block at toy size (3 x 4 x 6 image, a conv to 8
    features): queries, keys and values by 1x1 convs to 4, the keys viewed
    as B x 4 x 24 (flipped tokens), the queries and values transposed to
    B x 24 x 4, softmax(q @ k) @ v, transposed and viewed back as
    B x 4 x 4 x 6, a 1x1 conv and the residual; the mean to 3 classes. And
    errors/mixer_wide: tokens transposed, widened to 2T by a Linear and
    transposed back at 2T, which is no token sequence of the image."""
    import torch
    import torch.nn as nn

    class NonLocal(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.theta = nn.Conv2d(8, 4, 1)
            self.phi = nn.Conv2d(8, 4, 1)
            self.g = nn.Conv2d(8, 4, 1)
            self.out = nn.Conv2d(4, 8, 1)
            self.whole = nn.Linear(8, 3)

        def forward(self, x):
            x = self.conv(x)
            b, _, h, w = x.shape
            q = self.theta(x).view(b, -1, h * w).permute(0, 2, 1)
            k = self.phi(x).view(b, -1, h * w)
            v = self.g(x).view(b, -1, h * w).permute(0, 2, 1)
            y = (torch.softmax(q @ k, -1) @ v).permute(0, 2, 1)
            x = x + self.out(y.contiguous().view(b, -1, h, w))
            return self.whole(x.mean((2, 3)))

    class Wide(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.widen = nn.Linear(24, 48)
            self.whole = nn.Linear(4, 3)

        def forward(self, x):
            t = self.conv(x).flatten(2).transpose(1, 2)
            t = self.widen(t.transpose(1, 2)).transpose(1, 2)
            return self.whole(t.mean(1))

    torch.manual_seed(0)
    torch_fixture("non_local_tiny", NonLocal().eval(), (1, 3, 4, 6))
    torch_fixture("errors/mixer_wide", Wide().eval(), (1, 3, 4, 6))


def swin_tiny():
    """torchvision's SwinTransformer at toy size (10x10 image, 2x2
    patches: 5x5 pixels of 8 features, padded to 3x3 windows of 2x2; two
    blocks, the second shifted by 1; patch merging to 3x3 pixels of 16,
    padded to 2x2 windows, one block of 2 heads; 3 classes): the windows
    that makeChannelFirst matches, with the pads, rolls and masks exactly
    as the exporter writes them."""
    import torch
    from torchvision.models.swin_transformer import SwinTransformer
    torch.manual_seed(0)
    model = SwinTransformer(patch_size=[2, 2], embed_dim=8, depths=[2, 1],
                            num_heads=[1, 2], window_size=[2, 2],
                            num_classes=3).eval()
    torch_fixture("swin_tiny", model, (1, 3, 10, 10))


def yolo_head_tiny():
    """YOLOv8's Detect head as torch.onnx writes it (opset 17), at toy
    size: a 1 x 14 x 4 x 4 map (4 sides x 3 bins of box distances and 2
    classes) and its 2x2 max pool as two scales, each flattened to 1 x 14 x
    H*W and concatenated along the anchors (20), split into box bins and
    classes; DFL (Reshape to 1 x 4 x 3 x 20, Transpose (0, 2, 1, 3),
    Softmax over the 3 bins, a 1x1 Conv by [0, 1, 2], Reshape to 1 x 4 x
    20); dist2bbox around constant anchor points (1 x 2 x 20) times the
    strides (1 x 20); the class sigmoids: 1 x 6 x 20."""
    rng = np.random.RandomState(7)
    points = np.round(rng.uniform(0, 4, size=(1, 2, 20)), 3)
    strides = np.array([[8.0] * 16 + [16.0] * 4], dtype=np.float32)
    save("yolo_head_tiny.onnxtxt",
         [node("MaxPool", ["input"], ["p"], "pool", kernel_shape=[2, 2],
               strides=[2, 2]),
          node("Reshape", ["input", "seq0"], ["s0"], "view0"),
          node("Reshape", ["p", "seq1"], ["s1"], "view1"),
          node("Concat", ["s0", "s1"], ["cat"], "cat_anchors", axis=2),
          node("Split", ["cat", "box_cls"], ["box", "cls"], "split", axis=1),
          node("Reshape", ["box", "bins"], ["b4"], "dfl_view"),
          node("Transpose", ["b4"], ["bt"], "dfl_transpose",
               perm=[0, 2, 1, 3]),
          node("Softmax", ["bt"], ["bs"], "dfl_softmax", axis=1),
          node("Conv", ["bs", "expect"], ["bc"], "dfl_conv",
               kernel_shape=[1, 1]),
          node("Reshape", ["bc", "sides"], ["dist"], "dfl_back"),
          node("Split", ["dist", "halves"], ["lt", "rb"], "chunk", axis=1),
          node("Sub", ["points", "lt"], ["x1y1"], "x1y1"),
          node("Add", ["points", "rb"], ["x2y2"], "x2y2"),
          node("Add", ["x1y1", "x2y2"], ["sum"], "sum"),
          node("Div", ["sum", "two"], ["cxy"], "center"),
          node("Sub", ["x2y2", "x1y1"], ["wh"], "size"),
          node("Concat", ["cxy", "wh"], ["xywh"], "cat_box", axis=1),
          node("Mul", ["xywh", "strides"], ["boxes"], "scale"),
          node("Sigmoid", ["cls"], ["scores"], "scores"),
          node("Concat", ["boxes", "scores"], ["y"], "cat_out", axis=1)],
         [io("input", [1, 14, 4, 4])], io("y", [1, 6, 20]),
         [ints("seq0", [1, 14, -1]), ints("seq1", [1, 14, -1]),
          ints("box_cls", [12, 2]), ints("bins", [1, 4, 3, 20]),
          helper.make_tensor("expect", TensorProto.FLOAT, [1, 3, 1, 1],
                             [0.0, 1.0, 2.0]),
          ints("sides", [1, 4, 20]), ints("halves", [2, 2]),
          helper.make_tensor("points", TensorProto.FLOAT, [1, 2, 20],
                             points.flatten().tolist()),
          helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
          helper.make_tensor("strides", TensorProto.FLOAT, [1, 20],
                             strides.flatten().tolist())],
         opset=17)


def yolov5_head_tiny():
    """YOLOv5's Detect head as torch.onnx writes it (opset 17), at toy
    size: a 1 x 14 x 4 x 4 map (2 anchors x 7 values: xy, wh, 3 scores)
    viewed as 1 x 2 x 7 x 4 x 4 and permuted to 1 x 2 x 4 x 4 x 7; its
    sigmoid split into xy, wh and scores, xy * 2 plus a grid constant
    (1 x 2 x 4 x 4 x 2) times the stride, (wh * 2) ^ 2 times the anchor
    sizes (1 x 2 x 1 x 1 x 2), concatenated and viewed as 1 x 32 x 7
    boxes; a second scale (the 2x2 max pool, its sigmoid only) viewed the
    same way; the boxes concatenated: 1 x 40 x 7."""
    rng = np.random.RandomState(11)
    grid = np.round(rng.uniform(-1, 4, size=(1, 2, 4, 4, 2)), 3)
    sizes = [10.0, 13.0, 33.0, 23.0]
    save("yolov5_head_tiny.onnxtxt",
         [node("Reshape", ["input", "view"], ["v"], "view"),
          node("Transpose", ["v"], ["cells"], "cells", perm=[0, 1, 3, 4, 2]),
          node("Sigmoid", ["cells"], ["s"], "sigmoid"),
          node("Split", ["s", "parts"], ["xy", "wh", "conf"], "split",
               axis=4),
          node("Mul", ["xy", "two"], ["xy2"], "xy2"),
          node("Add", ["xy2", "grid"], ["xyg"], "xy_grid"),
          node("Mul", ["xyg", "stride"], ["xyp"], "xy_pixels"),
          node("Mul", ["wh", "two"], ["wh2"], "wh2"),
          node("Pow", ["wh2", "two"], ["whp"], "wh_squared"),
          node("Mul", ["whp", "sizes"], ["whs"], "wh_pixels"),
          node("Concat", ["xyp", "whs", "conf"], ["y0"], "cat_values",
               axis=4),
          node("Reshape", ["y0", "boxes0"], ["b0"], "boxes0"),
          node("MaxPool", ["input"], ["p"], "pool", kernel_shape=[2, 2],
               strides=[2, 2]),
          node("Reshape", ["p", "view1"], ["v1"], "view1"),
          node("Transpose", ["v1"], ["cells1"], "cells1",
               perm=[0, 1, 3, 4, 2]),
          node("Sigmoid", ["cells1"], ["s1"], "sigmoid1"),
          node("Reshape", ["s1", "boxes1"], ["b1"], "boxes1"),
          node("Concat", ["b0", "b1"], ["y"], "cat_boxes", axis=1)],
         [io("input", [1, 14, 4, 4])], io("y", [1, 40, 7]),
         [ints("view", [1, 2, 7, 4, 4]), ints("parts", [2, 2, 3]),
          helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
          helper.make_tensor("grid", TensorProto.FLOAT, [1, 2, 4, 4, 2],
                             grid.flatten().tolist()),
          helper.make_tensor("stride", TensorProto.FLOAT, [], [8.0]),
          helper.make_tensor("sizes", TensorProto.FLOAT, [1, 2, 1, 1, 2],
                             sizes),
          ints("boxes0", [1, 32, 7]), ints("view1", [1, 2, 7, 2, 2]),
          ints("boxes1", [1, 8, 7])],
         opset=17)


def main():
    op_fixtures()
    networks()
    vit_tiny()
    tokens_tiny()
    mixer_tiny()
    products_tiny()
    heads_tiny()
    non_local_tiny()
    swin_tiny()
    yolo_head_tiny()
    yolov5_head_tiny()
    errors()
    # Every valid fixture must pass ONNX's own checker.
    for f in sorted(os.listdir(ROOT)):
        if f.endswith(".onnxtxt"):
            model = onnx.ModelProto()
            with open(os.path.join(ROOT, f)) as fh:
                text_format.Parse(fh.read(), model)
            onnx.checker.check_model(model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
