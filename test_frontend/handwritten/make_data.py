#!/usr/bin/python3
"""make_data.py - weights, inputs, labels and PyTorch reference outputs for
the hand-written HPVM-C test programs (lenet.cpp, resnet.cpp).

Writes HPVM's model_params layout into OUT/<model>/: one raw float32 file per
weight with HPVM's benchmark names (conv2d_<i>_w.bin, conv2d_<i>_b.bin,
batch_normalization_<i>_{gamma,beta,mean,variance}.bin, dense_<i>_w.bin as
K x N, dense_<i>_b.bin), test_input.bin (N x C x H x W float32),
test_labels.bin (int32, PyTorch's argmax, so the expected accuracy is 100%)
and reference_output.bin (N x 10 float32, PyTorch's softmax outputs).
Weights are random with a fixed seed; batch-norm statistics are randomised.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn


class LeNet(nn.Module):
    """HPVM's LeNet (reference 9.1): two conv/tanh/maxpool stages, two
    tanh dense layers, softmax."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = nn.Linear(3136, 1024)
        self.fc2 = nn.Linear(1024, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.tanh(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.tanh(self.conv2(x)), 2)
        x = torch.tanh(self.fc1(torch.flatten(x, 1)))
        x = torch.tanh(self.fc2(x))
        return torch.softmax(x, dim=1)


class ResNet(nn.Module):
    """A small CIFAR ResNet: stem, an identity block, a downsampling block
    with a 1x1 shortcut, a block with batch norm instead of biases, average
    pooling, dense layer, softmax."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.b1c1 = nn.Conv2d(8, 8, 3, padding=1)
        self.b1c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.b2c1 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.b2c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.b2sc = nn.Conv2d(8, 16, 1, stride=2)
        self.b3c1 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.b3n1 = nn.BatchNorm2d(16)
        self.b3c2 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.b3n2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        y = self.b1c2(torch.relu(self.b1c1(x)))
        x = torch.relu(y + x)
        y = self.b2c2(torch.relu(self.b2c1(x)))
        x = torch.relu(self.b2sc(x) + y)
        y = self.b3n2(self.b3c2(torch.relu(self.b3n1(self.b3c1(x)))))
        x = torch.relu(y + x)
        x = nn.functional.avg_pool2d(x, 16)
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=1)


def write(path, array):
    """Writes raw little-endian float32/int32 data atomically."""
    tmp = path + ".tmp"
    np.ascontiguousarray(array).tofile(tmp)
    os.replace(tmp, path)


def conv_files(out, index, conv):
    write(os.path.join(out, "conv2d_%d_w.bin" % index),
          conv.weight.detach().numpy().astype(np.float32))
    if conv.bias is not None:
        write(os.path.join(out, "conv2d_%d_b.bin" % index),
              conv.bias.detach().numpy().astype(np.float32))


def bn_files(out, index, bn):
    for name, value in (("gamma", bn.weight), ("beta", bn.bias),
                        ("mean", bn.running_mean),
                        ("variance", bn.running_var)):
        write(os.path.join(out, "batch_normalization_%d_%s.bin" %
                           (index, name)),
              value.detach().numpy().astype(np.float32))


def dense_files(out, index, fc):
    # HPVM stores dense weights K x N, the transpose of PyTorch's N x K.
    write(os.path.join(out, "dense_%d_w.bin" % index),
          fc.weight.detach().numpy().T.astype(np.float32))
    write(os.path.join(out, "dense_%d_b.bin" % index),
          fc.bias.detach().numpy().astype(np.float32))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", choices=["lenet", "resnet"])
    parser.add_argument("out", help="model_params directory")
    parser.add_argument("--images", type=int, default=200)
    args = parser.parse_args()

    torch.manual_seed(1234)
    np.random.seed(1234)
    out = os.path.join(args.out, args.model)
    os.makedirs(out, exist_ok=True)
    if args.model == "lenet":
        net = LeNet()
        shape = (1, 28, 28)
        x = torch.rand(args.images, *shape)
        conv_files(out, 1, net.conv1)
        conv_files(out, 2, net.conv2)
        dense_files(out, 1, net.fc1)
        dense_files(out, 2, net.fc2)
    else:
        net = ResNet()
        for bn in (net.b3n1, net.b3n2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.5, 0.5)
        shape = (3, 32, 32)
        x = torch.randn(args.images, *shape)
        convs = [net.stem, net.b1c1, net.b1c2, net.b2c1, net.b2c2, net.b2sc,
                 net.b3c1, net.b3c2]
        for i, conv in enumerate(convs, 1):
            conv_files(out, i, conv)
        bn_files(out, 1, net.b3n1)
        bn_files(out, 2, net.b3n2)
        dense_files(out, 1, net.fc)
    net.eval()
    with torch.no_grad():
        y = net(x)
    write(os.path.join(out, "test_input.bin"), x.numpy().astype(np.float32))
    write(os.path.join(out, "test_labels.bin"),
          y.argmax(dim=1).numpy().astype(np.int32))
    write(os.path.join(out, "reference_output.bin"),
          y.numpy().astype(np.float32))


if __name__ == "__main__":
    main()
