#!/usr/bin/python3
# train_lenet_fashion.py - train the shipped LeNet example on Fashion-MNIST
# and export it to ONNX the way HPVM-style exports look.
#
# Run with Debian's interpreter (it has torch, numpy and onnx):
#   /usr/bin/python3 scripts/train_lenet_fashion.py [--epochs 4] [--out DIR]
#
# Data: the IDX files of the Debian package dataset-fashion-mnist. The 60,000
# training images train the model; the official 10,000-image test split is
# what torch2hpvm-dataset turns into HPVM's tune (first 5,000) and test (last
# 5,000) sets. The input normalisation here is exactly what
#   torch2hpvm-dataset convert ... --scale 1/255 --normalize 0.5,0.5
# applies: x = (pixel / 255 - 0.5) / 0.5.
import argparse
import gzip
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA_DIR = "/usr/share/datasets/fashion-mnist"
SEED = 20240611
MEAN, STD = 0.5, 0.5


def read_idx(path, expected_magic):
    """Reads one IDX file (gzip-compressed) into a uint8 numpy array."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    if magic != expected_magic:
        sys.exit(f"{path}: IDX magic 0x{magic:08x}, expected "
                 f"0x{expected_magic:08x}")
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_split(kind):
    """Returns (images N x 1 x 28 x 28 float32 normalised, labels int64)."""
    images = read_idx(os.path.join(DATA_DIR, f"{kind}-images-idx3-ubyte.gz"),
                      0x803)
    labels = read_idx(os.path.join(DATA_DIR, f"{kind}-labels-idx1-ubyte.gz"),
                      0x801)
    x = (images.astype(np.float32) / np.float32(255) - np.float32(MEAN)) / \
        np.float32(STD)
    return (torch.from_numpy(x[:, None]),
            torch.from_numpy(labels.astype(np.int64)))


class LeNet(nn.Module):
    """HPVM's LeNet shape (reference section 9.1), slimmed: 16 and 32 filters
    and a 128-wide hidden layer keep the ONNX file near 1 MB. The last dense
    layer feeds softmax directly (HPVM config line `mul add`)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 5, padding=2)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def logits(self, x):
        x = F.max_pool2d(torch.tanh(self.conv1(x)), 2, 2)
        x = F.max_pool2d(torch.tanh(self.conv2(x)), 2, 2)
        x = torch.flatten(x, 1)
        x = torch.tanh(self.fc1(x))
        return self.fc2(x)

    def forward(self, x):
        return F.softmax(self.logits(x), dim=1)


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        pred = torch.cat([model.logits(x[i:i + 1000]).argmax(1)
                          for i in range(0, len(x), 1000)])
    return 100.0 * (pred == y).float().mean().item()


def export_onnx(model, path):
    """Exports model (N x 1 x 28 x 28 input) as HPVM-style exports look,
    atomically: eval mode, training mode preserved, no constant folding,
    opset 13, input "input", output "output"."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    model.eval()
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), tmp,
                      input_names=["input"], output_names=["output"],
                      training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False, opset_version=13)
    os.replace(tmp, path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)", flush=True)


def main():
    parser = argparse.ArgumentParser(
        description="Train the LeNet example on Fashion-MNIST; export ONNX.")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--out", default=os.path.normpath(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "datasets",
        "example")))
    args = parser.parse_args()

    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.set_num_threads(min(2, os.cpu_count() or 1))

    x_train, y_train = load_split("train")
    x_test, y_test = load_split("t10k")
    model = LeNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(
        opt, T_max=args.epochs * (len(x_train) // 128))
    gen = torch.Generator().manual_seed(SEED)
    start = time.time()
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(x_train), generator=gen)
        total = 0.0
        for i in range(0, len(x_train) - 127, 128):
            idx = perm[i:i + 128]
            loss = F.cross_entropy(model.logits(x_train[idx]), y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item()
        print(f"epoch {epoch + 1}: loss {total / (len(x_train) // 128):.4f} "
              f"test accuracy {accuracy(model, x_test, y_test):.2f}% "
              f"({time.time() - start:.0f} s)", flush=True)

    tune_acc = accuracy(model, x_test[:5000], y_test[:5000])
    test_acc = accuracy(model, x_test[5000:], y_test[5000:])
    print(f"tune set (test images 0-4999): {tune_acc:.2f}%")
    print(f"test set (test images 5000-9999): {test_acc:.2f}%")

    export_onnx(model, os.path.join(args.out, "lenet_fashion.onnx"))


if __name__ == "__main__":
    main()
