"""ort_oracle.py - ONNX Runtime as the oracle of our programs, for the
test_frontend/onnxruntime checks: export a model, run its program and
ONNX Runtime (scripts/bench/ort_run.js) on the same images, compare."""
import json
import os
import sys

import numpy as np
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tuning"))
from lenet_tuning import FMNIST, fail, run  # noqa: E402


class Oracle:
    def __init__(self, build, work, src):
        self.work = work
        os.makedirs(work, exist_ok=True)
        self.exporter = os.path.join(build, "frontend", "torch2hpvm-export")
        self.node = ["node", os.path.join(src, "scripts", "bench",
                                          "ort_run.js")]

    def export(self, model, tune, test, out, batch):
        """Exports and builds MODEL into OUT; returns the program's path."""
        run([self.exporter, model, "--tune", tune, "--test", test,
             "--batch-size", str(batch), "--force", "-o", out])
        manifest = json.load(open(os.path.join(out, "manifest.json")))
        return os.path.join(out, manifest["binary"])

    def ours(self, binary, out_dir, name, exact):
        """The program's test-set outputs: with its default configuration,
        or (exact) with every knob fp32 (a model_int8 configuration with its
        int8 knobs made fp32)."""
        path = os.path.join(self.work, name + ".npy")
        extra = []
        conf = os.path.join(out_dir, "tuner_confs.txt")
        if exact and os.path.exists(conf):
            text = open(conf).read().replace(" int8 311", " fp32 11")
            extra = ["-c", os.path.join(self.work, name + "_fp32.txt")]
            open(extra[1], "w").write(text)
        run([binary, "test", "--quiet", "--output", path, *extra],
            cwd=out_dir)
        return np.load(path)

    def ort(self, model, data, name, batch, shape):
        """ONNX Runtime's first output for every image of DATA."""
        path = os.path.join(self.work, name + ".bin")
        run(self.node + ["outputs", model, data, path, str(batch), "2"])
        return np.fromfile(path, np.float32).reshape(shape)


def fashion_sets(build, data):
    """Fashion-MNIST's first 1,500 test images as the shipped ResNet-18
    takes them (scaled to [0, 1], normalized by 0.5, 0.5), split into a
    tune set of 500 and a test set of 1,000 in DATA; returns their input
    files (tune, test)."""
    run([os.path.join(build, "datasets", "torch2hpvm-dataset"), "convert",
         f"{FMNIST}/t10k-images-idx3-ubyte.gz",
         f"{FMNIST}/t10k-labels-idx1-ubyte.gz", "--split",
         "tune=500,test=1000", "--limit", "1500", "--scale", "1/255",
         "--normalize", "0.5,0.5", "-o", data])
    return f"{data}/tune_input.bin", f"{data}/test_input.bin"


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
    """Fails when A and B differ by more than one STEP anywhere; returns the
    fraction of elements a step apart."""
    d = np.abs(a.astype(np.float64) - b) / step
    if not d.max() <= 1 + 1e-4:
        i = np.unravel_index(np.argmax(d), d.shape)
        fail(f"{what}: {d.max():.3f} quantization steps from ONNX Runtime at "
             f"{i} (ours {a[i]}, ORT {b[i]}); at most 1 allowed")
    return float((d > 0.5).mean())
