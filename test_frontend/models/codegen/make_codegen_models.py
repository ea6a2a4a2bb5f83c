#!/usr/bin/python3
"""make_codegen_models.py - regenerate the codegen tests' ONNX fixtures.

Writes, next to this script, in protobuf text format:
  lenet_small.onnxtxt  Conv(bias)+Relu+MaxPool+Flatten+Gemm(bias)+Softmax,
                       input 1x1x8x8, 10 classes; fixed weights.
  evil_names.onnxtxt   the same network with hostile node and tensor names.
  unsupported.onnxtxt  two unsupported operators (Elu, Softsign).
Run with /usr/bin/python3 (it has onnx); the outputs are committed.
"""
import os

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def lenet(names):
    rng = np.random.default_rng(1234)

    def init(name, shape):
        data = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
        return numpy_helper.from_array(data, name)

    inits = [init(names["conv_w"], (4, 1, 3, 3)), init(names["conv_b"], (4,)),
             init(names["fc_w"], (10, 64)), init(names["fc_b"], (10,))]
    nodes = [
        helper.make_node("Conv", [names["input"], names["conv_w"],
                                  names["conv_b"]], ["c"],
                         name=names["conv"], kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name=names["relu"]),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", names["fc_w"], names["fc_b"]], ["g"],
                         name=names["gemm"], transB=1),
        helper.make_node("Softmax", ["g"], [names["output"]],
                         name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, names["graph"],
        [helper.make_tensor_value_info(names["input"], TensorProto.FLOAT,
                                       [1, 1, 8, 8])],
        [helper.make_tensor_value_info(names["output"], TensorProto.FLOAT,
                                       [1, 10])],
        inits)
    model = helper.make_model(graph, producer_name="make_codegen_models",
                              producer_version="1",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def unsupported():
    nodes = [
        helper.make_node("Elu", ["input"], ["a"], name="elu"),
        helper.make_node("Softsign", ["a"], ["output"], name="sig"),
    ]
    graph = helper.make_graph(
        nodes, "unsupported",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       [1, 1, 2, 2])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                       [1, 1, 2, 2])])
    model = helper.make_model(graph, producer_name="make_codegen_models",
                              producer_version="1",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def write(model, name):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        f.write(text_format.MessageToString(model))


PLAIN = {"input": "input", "output": "output", "conv_w": "conv1.weight",
         "conv_b": "conv1.bias", "fc_w": "fc.weight", "fc_b": "fc.bias",
         "conv": "Conv_0", "relu": "Relu_1", "gemm": "Gemm_4",
         "graph": "lenet_small"}
EVIL = {"input": 'x"); system("rm -rf ~");//',
        "output": "*/ out /*",
        "conv_w": "int", "conv_b": "conv\\bias\n#define",
        "fc_w": "root", "fc_b": "var_0_node",
        "conv": 'x"); system("rm -rf ~");//', "relu": "??/\nrelu",
        "gemm": "\u00e9t\u00e9", "graph": "evil */ graph"}

if __name__ == "__main__":
    write(lenet(PLAIN), "lenet_small.onnxtxt")
    write(lenet(EVIL), "evil_names.onnxtxt")
    write(unsupported(), "unsupported.onnxtxt")
