"""accuracy_from_python - the program built by hpvm_readme_flow.py back in
PyTorch: torch2hpvm.load() makes it a Module, and a DataLoader over a
plain PyTorch Dataset (Fashion-MNIST read here from the IDX files, no
torchvision) measures the accuracy of the exact program and of an
approximated configuration, with no dataset file exported for it.

Usage: accuracy_from_python.py OUTPUT_DIR [CONFIG]   (default: every
configuration of OUTPUT_DIR/tuner_confs.txt)
"""
import gzip
import sys
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import torch2hpvm

FASHION = Path("/usr/share/datasets/fashion-mnist")


class FashionMNIST(Dataset):
    """Fashion-MNIST's test images as (1 x 28 x 28 float32, label), scaled
    to [0, 1] and normalized with mean 0.5 and std 0.5."""

    def __init__(self, root=FASHION, start=0, count=10000):
        with gzip.open(root / "t10k-images-idx3-ubyte.gz") as f:
            raw = np.frombuffer(f.read(), np.uint8, offset=16)
        with gzip.open(root / "t10k-labels-idx1-ubyte.gz") as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)
        images = raw.reshape(-1, 1, 28, 28)[start:start + count]
        x = images.astype(np.float32) / np.float32(255)
        self.images = (x - np.float32(0.5)) / np.float32(0.5)
        self.labels = labels[start:start + count].astype(np.int64)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return torch.from_numpy(self.images[i]), int(self.labels[i])


def accuracy(net, loader):
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            correct += (net(images).argmax(1) == labels).sum().item()
            total += len(labels)
    return 100.0 * correct / total


def main():
    out = Path(sys.argv[1])
    loader = DataLoader(FashionMNIST(start=5000, count=5000), batch_size=64)
    net = torch2hpvm.load(out, exact=True)
    print(f"exact FP32: {accuracy(net, loader):.2f}%")
    names = sys.argv[2:] or None
    if names is None:
        text = (out / "tuner_confs.txt").read_text()
        lines = text.split("\n")
        names = [lines[i + 1].split()[0] for i, line in enumerate(lines)
                 if line.strip() == "+++++"]
    for name in names:
        net.configure(config=name)
        print(f"{name}: {accuracy(net, loader):.2f}%")


if __name__ == "__main__":
    main()
