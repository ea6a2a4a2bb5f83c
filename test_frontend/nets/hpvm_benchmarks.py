"""hpvm_benchmarks.py - HPVM's ten DNN benchmark architectures in PyTorch.

Written from the layer-by-layer description of the benchmarks (reference
section 9), not copied from HPVM's sources. Every network ends with a softmax
over the classes, as HPVM's do; no dropout anywhere. Weights are whatever the
caller initialises (see nets/init.py); these classes only fix the topology.
"""
import torch
from torch import nn


def _conv(cin, cout, k, stride=1, pad=0, bias=True, groups=1):
    return nn.Conv2d(cin, cout, k, stride=stride, padding=pad, bias=bias,
                     groups=groups)


def _width(channels, width):
    """`channels` scaled by the width multiplier `width` (at least 1)."""
    return max(1, int(round(channels * width)))


class LeNet(nn.Module):
    """LeNet for MNIST (1x28x28): two 5x5 conv+tanh+maxpool, two FC+tanh."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            _conv(1, 32, 5, pad=2), nn.Tanh(), nn.MaxPool2d(2, 2),
            _conv(32, 64, 5, pad=2), nn.Tanh(), nn.MaxPool2d(2, 2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * 7 * 7, 1024), nn.Tanh(),
            nn.Linear(1024, classes), nn.Tanh())
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        return self.softmax(self.classifier(self.features(x)))


class AlexNetCifar(nn.Module):
    """AlexNet for CIFAR-10 (3x32x32), tanh activations, one FC layer."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            _conv(3, 64, 11, pad=5), nn.Tanh(), nn.MaxPool2d(2, 2),
            _conv(64, 192, 5, pad=2), nn.Tanh(), nn.MaxPool2d(2, 2),
            _conv(192, 384, 3, pad=1), nn.Tanh(),
            _conv(384, 256, 3, pad=1), nn.Tanh(),
            _conv(256, 256, 3, pad=1), nn.Tanh(), nn.MaxPool2d(2, 2))
        self.fc = nn.Linear(256 * 4 * 4, classes)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        # view(N, -1) exports as a Shape/Gather/Unsqueeze/Concat/Reshape chain
        # that the exporter must fold, as in most PyTorch code.
        x = self.features(x)
        return self.softmax(self.fc(x.view(x.size(0), -1)))


class AlexNet2Cifar(nn.Module):
    """AlexNet2 for CIFAR-10 (3x32x32): six 3x3 conv+tanh, three maxpools."""

    def __init__(self, classes=10):
        super().__init__()
        layers = []
        cin = 3
        for cout in (32, 32, 64, 64, 128, 128):
            layers += [_conv(cin, cout, 3, pad=1), nn.Tanh()]
            if cout == cin:
                layers.append(nn.MaxPool2d(2, 2))
            cin = cout
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(128 * 4 * 4, classes)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = torch.flatten(self.features(x), 1)
        return self.softmax(self.fc(x))


class AlexNetImagenet(nn.Module):
    """AlexNet for ImageNet (3x224x224), ReLU, three FC layers."""

    def __init__(self, classes=1000):
        super().__init__()
        self.features = nn.Sequential(
            _conv(3, 64, 11, stride=4, pad=2), nn.ReLU(), nn.MaxPool2d(3, 2),
            _conv(64, 192, 5, pad=2), nn.ReLU(), nn.MaxPool2d(3, 2),
            _conv(192, 384, 3, pad=1), nn.ReLU(),
            _conv(384, 256, 3, pad=1), nn.ReLU(),
            _conv(256, 256, 3, pad=1), nn.ReLU(), nn.MaxPool2d(3, 2))
        self.classifier = nn.Sequential(
            nn.Linear(256 * 6 * 6, 4096), nn.ReLU(),
            nn.Linear(4096, 4096), nn.ReLU(),
            nn.Linear(4096, classes))
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = self.features(x)
        return self.softmax(self.classifier(x.view(x.size(0), -1)))


class VGG16(nn.Module):
    """VGG-16: 13 conv3x3+ReLU, maxpool after conv 2, 4, 7, 10 and 13.

    CIFAR variants (32x32 input) end in FC 512->512->classes; the ImageNet
    variant (224x224) in FC 25088->4096->4096->1000. `in_channels` is the
    input's channel count (3, or 1 for gray images); `width` multiplies every
    channel count and hidden FC width (0.5: convs 32..256, FC 256->256).
    """

    CHANNELS = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M",
                512, 512, 512, "M", 512, 512, 512, "M")

    def __init__(self, classes=10, imagenet=False, in_channels=3, width=1.0):
        super().__init__()
        layers = []
        cin = in_channels
        for c in self.CHANNELS:
            if c == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                c = _width(c, width)
                layers += [_conv(cin, c, 3, pad=1), nn.ReLU()]
                cin = c
        self.features = nn.Sequential(*layers)
        if imagenet:
            hidden = _width(4096, width)
            self.classifier = nn.Sequential(
                nn.Flatten(), nn.Linear(cin * 7 * 7, hidden), nn.ReLU(),
                nn.Linear(hidden, hidden), nn.ReLU(),
                nn.Linear(hidden, classes))
        else:
            self.classifier = nn.Sequential(
                nn.Flatten(), nn.Linear(cin, cin), nn.ReLU(),
                nn.Linear(cin, classes))
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        return self.softmax(self.classifier(self.features(x)))


class _BasicBlock(nn.Module):
    """CIFAR ResNet basic block without batch norm (HPVM's ResNet-18)."""

    def __init__(self, cin, cout, down):
        super().__init__()
        stride = 2 if down else 1
        self.conv1 = _conv(cin, cout, 3, stride=stride, pad=1)
        self.relu1 = nn.ReLU()
        self.conv2 = _conv(cout, cout, 3, pad=1)
        self.shortcut = _conv(cin, cout, 1, stride=2) if down else None
        self.relu2 = nn.ReLU()

    def forward(self, x):
        y = self.conv2(self.relu1(self.conv1(x)))
        s = self.shortcut(x) if self.shortcut is not None else x
        return self.relu2(y + s)


class ResNet18Cifar(nn.Module):
    """HPVM's "ResNet-18" for CIFAR-10: a 3-stage, 9-block CIFAR ResNet.

    `in_channels`: the input's channel count (3, or 1 for gray images);
    `width` multiplies the stages' channel counts (16, 32, 64).
    """

    def __init__(self, classes=10, in_channels=3, width=1.0):
        super().__init__()
        stages = [_width(c, width) for c in (16, 32, 64)]
        blocks = [_conv(in_channels, stages[0], 3, pad=1), nn.ReLU()]
        cin = stages[0]
        for cout in stages:
            for i in range(3):
                blocks.append(_BasicBlock(cin, cout, down=(cin != cout)))
                cin = cout
        self.features = nn.Sequential(*blocks, nn.AvgPool2d(8, 8))
        self.fc = nn.Linear(cin, classes)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = torch.flatten(self.features(x), 1)
        return self.softmax(self.fc(x))


class _Bottleneck(nn.Module):
    """ResNet-50 bottleneck: 1x1 (stride), 3x3, 1x1 x4, each with BN."""

    def __init__(self, cin, planes, stride):
        super().__init__()
        cout = 4 * planes
        self.main = nn.Sequential(
            _conv(cin, planes, 1, stride=stride), _bn(planes), nn.ReLU(),
            _conv(planes, planes, 3, pad=1), _bn(planes), nn.ReLU(),
            _conv(planes, cout, 1), _bn(cout))
        # Tells nets/init.py to draw a small gamma here, as trained ResNets
        # have: each block stays close to its shortcut, so the network is
        # not chaotic and rounding noise does not grow with depth.
        self.main[-1].residual_branch_end = True
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(_conv(cin, cout, 1, stride=stride),
                                          _bn(cout))
        self.relu = nn.ReLU()

    def forward(self, x):
        # Main branch first, then the shortcut: the ONNX node order (and so
        # the HPVM op numbering) then matches HPVM's ResNet-50 and its
        # configuration files.
        y = self.main(x)
        s = self.shortcut(x) if self.shortcut is not None else x
        return self.relu(y + s)


def _bn(c):
    # HPVM's networks use eps 0.001 everywhere they have batch norm.
    return nn.BatchNorm2d(c, eps=0.001)


class ResNet50Imagenet(nn.Module):
    """HPVM's ResNet-50 for ImageNet: biased convs, BN after the stem pool."""

    def __init__(self, classes=1000):
        super().__init__()
        layers = [_conv(3, 64, 7, stride=2, pad=3), nn.ReLU(),
                  nn.MaxPool2d(3, 2), _bn(64)]
        cin = 64
        for planes, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2),
                                      (512, 3, 2)):
            for i in range(count):
                stride_i = stride if i == 0 else 1
                layers.append(_Bottleneck(cin, planes, stride_i))
                cin = 4 * planes
        self.features = nn.Sequential(*layers, nn.AvgPool2d(7, 7))
        self.fc = nn.Linear(2048, classes)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = self.features(x)
        return self.softmax(self.fc(x.view(x.size(0), -1)))


class MobileNetCifar(nn.Module):
    """MobileNet (v1) for CIFAR-10: bias-free convs, each with BN and ReLU.

    `in_channels`: the input's channel count (3, or 1 for gray images);
    `width` multiplies every channel count (0.5: 16..512).
    """

    PAIRS = ((1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512),
             (1, 512), (1, 512), (1, 512), (1, 512), (1, 512), (2, 1024),
             (1, 1024))

    def __init__(self, classes=10, in_channels=3, width=1.0):
        super().__init__()
        cin = _width(32, width)
        layers = [_conv(in_channels, cin, 3, pad=1, bias=False), _bn(cin),
                  nn.ReLU()]
        for stride, cout in self.PAIRS:
            cout = _width(cout, width)
            layers += [
                _conv(cin, cin, 3, stride=stride, pad=1, bias=False,
                      groups=cin), _bn(cin), nn.ReLU(),
                _conv(cin, cout, 1, bias=False), _bn(cout), nn.ReLU()]
            cin = cout
        self.features = nn.Sequential(*layers, nn.AvgPool2d(2, 2))
        self.fc = nn.Linear(cin, classes)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = torch.flatten(self.features(x), 1)
        return self.softmax(self.fc(x))
