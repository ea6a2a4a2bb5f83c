"""common - what the torch2hpvm package's tests share: paths (from the
environment CTest sets), Fashion-MNIST in HPVM's files (converted by the
build's torch2hpvm-dataset) and as a plain PyTorch Dataset, the trained
LeNet as a Module, and running a built program."""
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset


def _env(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"${name} is not set: run these tests through "
                           f"ctest (python/tests/CMakeLists.txt sets it)")
    return Path(value)


SOURCE = _env("T2H_SOURCE_DIR")
BUILD = _env("T2H_BUILD_DIR")
WORK = _env("T2H_TEST_WORK")
FASHION = Path("/usr/share/datasets/fashion-mnist")
ONNX_LENET = SOURCE / "datasets" / "example" / "lenet_fashion.onnx"
CONFIGS = SOURCE / "datasets" / "example" / "tuner_confs.txt"
EXAMPLES = SOURCE / "python" / "examples"
DATASET_TOOL = BUILD / "datasets" / "torch2hpvm-dataset"

# The tests find the tools as an installed package does (_location.py).
os.environ.pop("TORCH2HPVM_BUILD", None)
sys.path.insert(0, str(EXAMPLES))
from lenet import LeNet, state_dict_from_onnx  # noqa: E402

# Images of the test sets: tune = t10k[0:TUNE], test = t10k[TUNE:TUNE+TEST].
TUNE, TEST = 100, 200


def fresh_dir(name):
    path = WORK / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def fashion_bins(directory):
    """Converts Fashion-MNIST t10k's first TUNE + TEST images with the
    build's torch2hpvm-dataset (scaled to [0, 1], normalized 0.5/0.5)."""
    subprocess.run(
        [str(DATASET_TOOL), "convert",
         str(FASHION / "t10k-images-idx3-ubyte.gz"),
         str(FASHION / "t10k-labels-idx1-ubyte.gz"),
         "--split", f"tune={TUNE},test={TEST}", "--limit", str(TUNE + TEST),
         "--scale", "1/255", "--normalize", "0.5,0.5", "-o", str(directory)],
        check=True, stdout=subprocess.DEVNULL)
    return Path(directory)


class FashionPairs(Dataset):
    """Fashion-MNIST t10k images [start, start + count) as (1 x 28 x 28
    float32 tensor, int label) pairs, computed as torch2hpvm-dataset
    computes them (float32: x / 255, then (x - 0.5) / 0.5)."""

    def __init__(self, start, count):
        with gzip.open(FASHION / "t10k-images-idx3-ubyte.gz") as f:
            raw = np.frombuffer(f.read(), np.uint8, offset=16)
        with gzip.open(FASHION / "t10k-labels-idx1-ubyte.gz") as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)
        x = raw.reshape(-1, 1, 28, 28)[start:start + count]
        x = x.astype(np.float32) / np.float32(255)
        self.images = (x - np.float32(0.5)) / np.float32(0.5)
        self.labels = labels[start:start + count].astype(np.int64)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return torch.from_numpy(self.images[i]), torch.tensor(self.labels[i])


class BareImages(Dataset):
    """The images of `pairs` without labels, K images per sample as
    K x 1 x 28 x 28 tensors."""

    def __init__(self, pairs, k):
        self.images = pairs.images
        self.k = k

    def __len__(self):
        return (len(self.images) + self.k - 1) // self.k

    def __getitem__(self, i):
        return torch.from_numpy(self.images[i * self.k:(i + 1) * self.k])


def lenet():
    """The shipped, trained LeNet as a Module."""
    model = LeNet()
    model.load_state_dict(state_dict_from_onnx(ONNX_LENET))
    return model.eval()


def export_lenet(work, batch_size=64):
    """The trained LeNet exported by ModelExporter into work/lenet with
    work/data's Fashion-MNIST sets and datasets/example/tuner_confs.txt
    baked in, built; returns (output directory, data directory, the test
    images as an N x 1 x 28 x 28 tensor)."""
    from torch2hpvm import BinDataset, ModelExporter
    data = fashion_bins(work / "data")
    tune = BinDataset(data / "tune_input.bin", data / "tune_labels.bin",
                      (TUNE, 1, 28, 28))
    test = BinDataset(data / "test_input.bin", data / "test_labels.bin",
                      (TEST, 1, 28, 28))
    out = work / "lenet"
    ModelExporter(lenet(), tune, test, out, config_file=CONFIGS).generate(
        batch_size=batch_size).compile(out / "build" / "lenet")
    images = torch.from_numpy(np.fromfile(
        data / "test_input.bin", np.float32).reshape(-1, 1, 28, 28))
    return out, data, images


def program(out_dir):
    manifest = json.loads((Path(out_dir) / "manifest.json").read_text())
    return Path(out_dir) / manifest["binary"]


def run_program(out_dir, *args, cwd=None):
    """Runs the built program on its test set with `args`; returns (outputs
    as an N x classes array, accuracy printed)."""
    cwd = Path(cwd or WORK)
    npy = cwd / "outputs.npy"
    proc = subprocess.run([str(program(out_dir)), "test", "-q", "--output",
                           str(npy), *args], cwd=cwd, check=True,
                          stdout=subprocess.PIPE, text=True)
    accuracy = float(proc.stdout.split("Accuracy: ")[1].split("%")[0])
    outputs = np.load(npy)
    npy.unlink()
    return outputs, accuracy


def config_names(path=CONFIGS):
    lines = Path(path).read_text().split("\n")
    return [lines[i + 1].split()[0] for i, line in enumerate(lines)
            if line.strip() == "+++++"]
