#!/usr/bin/python3
"""seg_fashion.py - a small segmentation network trained on Fashion-MNIST
(the only real data set here), for tuning with the mIoU QoS: each pixel of
a garment is labelled with its class (1-10), the background 0 (pixels below
0.2 of full brightness). The network is a DeepLab-style FCN: a strided
encoder, dilated convolutions, a 1x1 classifier over 11 classes and a
bilinear Resize back to 28x28. Seeded: the same files every run.

    seg_fashion.py OUT [--images 12000] [--epochs 3]

Writes OUT/seg_fashion.onnx, OUT/tune_input.bin (first 500 test images),
OUT/test_input.bin (next 1000) and OUT/train.json (its pixel accuracy and
mIoU against the true masks on the test images).
"""
import argparse
import gzip
import json
import os

import numpy as np
import torch
from torch import nn

FMNIST = "/usr/share/datasets/fashion-mnist"
CLASSES = 11


def idx(name):
    with gzip.open(os.path.join(FMNIST, name)) as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
             for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def masks(images, labels):
    """Per-pixel class: the garment's label + 1 where the pixel is bright
    enough, else 0."""
    on = images >= 0.2 * 255
    return np.where(on, labels[:, None, None].astype(np.int64) + 1, 0)


class SegNet(nn.Module):
    def __init__(self):
        super().__init__()
        def block(cin, cout, stride=1, dilation=1):
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, dilation, dilation,
                          bias=False),
                nn.BatchNorm2d(cout), nn.ReLU())
        self.encoder = nn.Sequential(block(1, 32), block(32, 64, 2),
                                     block(64, 64), block(64, 96, 2))
        self.context = nn.Sequential(block(96, 96, dilation=2),
                                     block(96, 96, dilation=4))
        self.classify = nn.Conv2d(96, CLASSES, 1)

    def forward(self, x):
        y = self.classify(self.context(self.encoder(x)))
        return nn.functional.interpolate(y, size=x.shape[-2:],
                                         mode="bilinear",
                                         align_corners=False)


def miou(pred, true):
    ious = []
    for c in range(CLASSES):
        either = np.logical_or(pred == c, true == c).sum()
        if either:
            ious.append(np.logical_and(pred == c, true == c).sum() / either)
    return 100.0 * float(np.mean(ious))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--images", type=int, default=12000)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(2)
    train_x = idx("train-images-idx3-ubyte.gz")[:args.images]
    train_y = masks(train_x, idx("train-labels-idx1-ubyte.gz")[:args.images])
    test_x = idx("t10k-images-idx3-ubyte.gz")[:1500]
    test_y = masks(test_x, idx("t10k-labels-idx1-ubyte.gz")[:1500])

    def inputs(x):
        return torch.from_numpy((x.astype(np.float32) / 255 - 0.5) / 0.5)[
            :, None]

    net = SegNet()
    opt = torch.optim.Adam(net.parameters(), 2e-3)
    x, y = inputs(train_x), torch.from_numpy(train_y)
    for epoch in range(args.epochs):
        net.train()
        order = torch.randperm(len(x))
        for i in range(0, len(x), 64):
            b = order[i:i + 64]
            loss = nn.functional.cross_entropy(net(x[b]), y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"seg_fashion: epoch {epoch + 1}: loss {loss.item():.3f}")
    net.eval()
    tx = inputs(test_x)
    with torch.no_grad():
        pred = net(tx[500:]).argmax(1).numpy()
    true = test_y[500:]
    result = {"pixel_accuracy": 100.0 * float((pred == true).mean()),
              "miou": miou(pred, true), "classes": CLASSES,
              "train_images": args.images, "epochs": args.epochs}
    print(f"seg_fashion: test pixel accuracy {result['pixel_accuracy']:.2f}%,"
          f" mIoU {result['miou']:.2f}%")
    json.dump(result, open(os.path.join(args.out, "train.json"), "w"),
              indent=2)
    tx[:500].numpy().tofile(os.path.join(args.out, "tune_input.bin"))
    tx[500:].numpy().tofile(os.path.join(args.out, "test_input.bin"))
    torch.onnx.export(net, tx[:1], os.path.join(args.out, "seg_fashion.onnx"),
                      input_names=["input"], output_names=["output"],
                      opset_version=13)


if __name__ == "__main__":
    main()
