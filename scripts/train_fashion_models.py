#!/usr/bin/python3
# train_fashion_models.py - train three of HPVM's CIFAR benchmark networks
# (ResNet-18, MobileNet, VGG-16) on Fashion-MNIST and export them to ONNX the
# way HPVM-style exports look, next to the LeNet example.
#
# Run with Debian's interpreter (it has torch, numpy and onnx):
#   /usr/bin/python3 scripts/train_fashion_models.py [--model all]
#       [--epochs N] [--threads 1] [--precision bf16|fp32] [--out DIR]
#
# The architectures are the classes of test_frontend/nets/hpvm_benchmarks.py
# (imported, not copied): ResNet18Cifar at full width, MobileNetCifar and
# VGG16 (CIFAR variant) at width 0.5, each with one input channel. They
# expect 32x32 images: the exported model zero-pads the 1x28x28 image by 2 on
# each side (one ONNX Pad, which torch2hpvm folds into the first
# convolution's padding) and ends with a softmax, as HPVM's networks do.
#
# Data, normalisation and the tune/test split are those of
# train_lenet_fashion.py (imported from it): the 60,000 training images train
# the models and nothing else; HPVM's tune set is t10k images 0-4,999 and its
# test set images 5,000-9,999, with x = (pixel / 255 - 0.5) / 0.5, exactly
# what torch2hpvm-dataset convert ... --scale 1/255 --normalize 0.5,0.5 writes.
#
# Training: batches of 128, one warm-up epoch then a cosine learning rate,
# weight decay on conv and dense weights only, random horizontal flips and
# shifts of up to 2 pixels. He initialisation. ResNet18Cifar and VGG16 have
# no batch norm (HPVM's versions have none): SGD sits at chance level for
# hundreds of steps on them, so they train with AdamW, and each residual
# block's last convolution starts at zero (Fixup). MobileNetCifar, which has
# batch norm, trains with SGD and Nesterov momentum. By default the forward
# and backward passes run in bfloat16 autocast (weights, optimizer and all
# reported accuracies stay float32): about 1.8x faster on CPUs with
# AVX512-BF16; --precision fp32 elsewhere. Seeded; with one thread the run is
# deterministic on a given machine and torch build.
import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.onnx import symbolic_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test_frontend"))

from nets import hpvm_benchmarks as hb  # noqa: E402
from train_lenet_fashion import (MEAN, SEED, STD, accuracy,  # noqa: E402
                                 export_onnx, load_split)

BATCH = 128
BLACK = (0.0 - MEAN) / STD  # a black pixel after normalisation


class FashionNet(nn.Module):
    """One of HPVM's CIFAR networks on 1x28x28 Fashion-MNIST images: a zero
    Pad of 2 on each side makes them 1x32x32 (zero is the normalised value of
    a mid-gray pixel; torch2hpvm folds the Pad into the first convolution's
    padding). The network's own softmax moves here so that logits() can
    train on the scores; forward() is the exported model."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.softmax = net.softmax
        net.softmax = nn.Identity()  # traces to nothing

    def logits(self, x):
        return self.net(F.pad(x, (2, 2, 2, 2)))

    def forward(self, x):
        return self.softmax(self.logits(x))


# Per model: the network, default epochs, optimizer, peak learning rate and
# weight decay. Epochs are chosen to stay under 30 minutes on one thread
# of a 2-core machine.
MODELS = {
    "resnet18": dict(build=lambda: hb.ResNet18Cifar(in_channels=1),
                     epochs=10, optimizer="adamw", lr=2e-3, wd=0.05),
    "mobilenet": dict(build=lambda: hb.MobileNetCifar(in_channels=1,
                                                      width=0.5),
                      epochs=12, optimizer="sgd", lr=0.1, wd=5e-4),
    "vgg16": dict(build=lambda: hb.VGG16(in_channels=1, width=0.5),
                  epochs=9, optimizer="adamw", lr=5e-4, wd=0.05),
}


def onnx_pad(g, x, pad, mode, value):
    """aten::pad as one ONNX Pad whose pads are a Constant.

    torch 1.13's opset-11+ symbolic computes the pads at run time
    (Shape, ConstantOfShape, Slice, Transpose, ...), which only constant
    folding removes, and HPVM-style exports do not fold. torch2hpvm folds
    a Pad with constant pads into the following Conv."""
    pads = symbolic_helper._get_const(pad, "is", "pad")
    if symbolic_helper._get_const(mode, "s", "mode") != "constant" or not (
            symbolic_helper._is_none(value) or
            symbolic_helper._get_const(value, "f", "value") == 0):
        raise RuntimeError("onnx_pad: only zero padding is exported")
    rank = symbolic_helper._get_tensor_rank(x)
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pads) // 2):  # torch: last dimension first
        begins[rank - 1 - i] = pads[2 * i]
        ends[rank - 1 - i] = pads[2 * i + 1]
    const = g.op("Constant",
                 value_t=torch.tensor(begins + ends, dtype=torch.int64))
    return g.op("Pad", x, const, mode_s="constant")


def initialise(net):
    """He initialisation; zero biases; the classifier's last layer small;
    each residual block's last convolution zero (Fixup), so that the block
    starts as its shortcut."""
    dense = [m for m in net.modules() if isinstance(m, (nn.Conv2d,
                                                        nn.Linear))]
    with torch.no_grad():
        for m in dense:
            nn.init.kaiming_normal_(m.weight, mode="fan_in",
                                    nonlinearity="relu")
            if m.bias is not None:
                m.bias.zero_()
        nn.init.normal_(dense[-1].weight, std=0.01)
        for m in net.modules():
            if isinstance(m, hb._BasicBlock):
                m.conv2.weight.zero_()


def augment(x, gen):
    """Random horizontal flips and shifts of up to 2 pixels (black fill)."""
    n, h, w = len(x), x.shape[2], x.shape[3]
    flip = torch.rand(n, generator=gen) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    padded = F.pad(x, (2, 2, 2, 2), value=BLACK)
    dy = torch.randint(0, 5, (n,), generator=gen).tolist()
    dx = torch.randint(0, 5, (n,), generator=gen).tolist()
    return torch.stack([padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w]
                        for i in range(n)])


def train(name, args, data):
    """Trains MODELS[name], prints its accuracies and writes the ONNX file."""
    spec = MODELS[name]
    epochs = args.epochs or spec["epochs"]
    x_train, y_train, x_test, y_test = data
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]

    torch.manual_seed(SEED)
    np.random.seed(SEED)
    model = FashionNet(spec["build"]())
    initialise(model.net)
    params = sum(p.numel() for p in model.parameters())
    print(f"{name}: {params} parameters, {epochs} epochs, "
          f"{spec['optimizer']} peak lr {spec['lr']} weight decay "
          f"{spec['wd']}, {args.precision}, {args.threads} thread(s)",
          flush=True)
    model = model.to(memory_format=torch.channels_last)
    groups = [{"params": [p for p in model.parameters() if p.dim() > 1],
               "weight_decay": spec["wd"]},
              {"params": [p for p in model.parameters() if p.dim() <= 1],
               "weight_decay": 0.0}]
    if spec["optimizer"] == "sgd":
        opt = torch.optim.SGD(groups, lr=spec["lr"], momentum=0.9,
                              nesterov=True)
    else:
        opt = torch.optim.AdamW(groups, lr=spec["lr"])
    steps_per_epoch = len(x_train) // BATCH
    total, warmup = epochs * steps_per_epoch, steps_per_epoch

    def schedule(step):
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + np.cos(np.pi * (step - warmup) /
                                 max(1, total - warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    gen = torch.Generator().manual_seed(SEED)
    bf16 = args.precision == "bf16"
    start = time.time()
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(x_train), generator=gen)
        loss_sum, correct = 0.0, 0
        for i in range(0, steps_per_epoch * BATCH, BATCH):
            idx = perm[i:i + BATCH]
            x = augment(x_train[idx], gen).contiguous(
                memory_format=torch.channels_last)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                out = model.logits(x)
            loss = F.cross_entropy(out.float(), y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item()
            correct += (out.argmax(1) == y_train[idx]).sum().item()
        if not np.isfinite(loss_sum):
            sys.exit(f"{name}: the loss diverged in epoch {epoch + 1}")
        print(f"{name} epoch {epoch + 1}/{epochs}: loss "
              f"{loss_sum / steps_per_epoch:.4f} train accuracy "
              f"{100.0 * correct / (steps_per_epoch * BATCH):.2f}% "
              f"test accuracy {accuracy(model, x_test, y_test):.2f}% "
              f"({time.time() - start:.0f} s)", flush=True)
    seconds = time.time() - start

    # The exported model: float32, default (NCHW) memory format.
    model = model.to(memory_format=torch.contiguous_format)
    tune_acc = accuracy(model, x_test[:5000], y_test[:5000])
    test_acc = accuracy(model, x_test[5000:], y_test[5000:])
    print(f"{name}: trained in {seconds:.0f} s ({seconds / 60:.1f} min)")
    print(f"tune set (test images 0-4999): {tune_acc:.2f}%")
    print(f"test set (test images 5000-9999): {test_acc:.2f}%")

    export_onnx(model, os.path.join(args.out, f"{name}_fashion.onnx"))


def main():
    parser = argparse.ArgumentParser(
        description="Train HPVM's ResNet-18, MobileNet and VGG-16 (CIFAR "
        "variants) on Fashion-MNIST; export ONNX.")
    parser.add_argument("--model", choices=sorted(MODELS) + ["all"],
                        default="all",
                        help="network to train (default: all, one after "
                        "the other)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="epochs (default per model: " + ", ".join(
                            f"{k} {v['epochs']}" for k, v in MODELS.items())
                        + ")")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default: 1)")
    parser.add_argument("--precision", choices=["bf16", "fp32"],
                        default="bf16",
                        help="training arithmetic (default: bf16 autocast; "
                        "evaluation and export are always float32)")
    parser.add_argument("--limit", type=int, default=0,
                        help="train on the first N images only (a quick "
                        "check; the shipped models use all 60,000)")
    parser.add_argument("--out", default=os.path.join(ROOT, "datasets",
                                                      "example"),
                        help="output directory of <model>_fashion.onnx "
                        "(default: datasets/example)")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    torch.onnx.register_custom_op_symbolic("aten::pad", onnx_pad, 13)

    x_train, y_train = load_split("train")
    x_test, y_test = load_split("t10k")
    data = (x_train, y_train, x_test, y_test)
    names = list(MODELS) if args.model == "all" else [args.model]
    for name in names:
        train(name, args, data)


if __name__ == "__main__":
    main()
