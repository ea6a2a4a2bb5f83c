"""nets - the networks of the end-to-end tests and how each test uses them.

MODELS is the one list of end-to-end model tests: CMake asks
`run_e2e.py list --set ci|full` for it, so adding a model here adds its ctest.
STABILITY lists the torchvision networks whose export must be deterministic.
"""
from dataclasses import dataclass
from typing import Callable, Tuple

import torchvision

from . import hpvm_benchmarks as hb


@dataclass(frozen=True)
class ModelSpec:
    """One end-to-end model test."""
    name: str                       # test and file name
    build: Callable                 # () -> torch.nn.Module (topology only)
    shape: Tuple[int, int, int]     # input C, H, W
    opset: int                      # ONNX opset of the export
    images: int                     # test images
    batch: int                      # run-time --batch-size (< images)
    ci: bool                        # part of the CI-sized set
    about: str                      # one line for listings and the README
    hpvm_ops: bool = False          # op sequence must be HPVM's (its config)


def _tv(name):
    """A torchvision architecture with fresh random weights (no download)."""
    return lambda: getattr(torchvision.models, name)(weights=None)


MNIST, CIFAR, IMAGENET = (1, 28, 28), (3, 32, 32), (3, 224, 224)

# ImageNet networks run 2-3 images, the others 12-20; `batch` leaves a
# partial last batch. `ci`: part of the CI-sized set. `hpvm_ops`: one of
# HPVM's ten benchmarks, whose op sequence must be the one of HPVM's
# configuration file for it.
MODELS = [
    ModelSpec("lenet_mnist", hb.LeNet, MNIST, 10, 20, 8, ci=True,
              about="HPVM LeNet: conv+tanh+maxpool x2, FC+tanh x2, softmax",
              hpvm_ops=True),
    ModelSpec("alexnet_cifar10", hb.AlexNetCifar, CIFAR, 10, 20, 8, ci=True,
              about="HPVM AlexNet (CIFAR-10): 5 conv, tanh, view() flatten",
              hpvm_ops=True),
    ModelSpec("alexnet2_cifar10", hb.AlexNet2Cifar, CIFAR, 13, 20, 8,
              ci=True, about="HPVM AlexNet2 (CIFAR-10): 6 conv3x3, tanh",
              hpvm_ops=True),
    ModelSpec("vgg16_cifar10", hb.VGG16, CIFAR, 10, 12, 5, ci=True,
              about="HPVM VGG-16 (CIFAR-10): 13 conv3x3+ReLU, 2 FC",
              hpvm_ops=True),
    ModelSpec("vgg16_cifar100", lambda: hb.VGG16(classes=100), CIFAR, 13, 12,
              5, ci=True, about="HPVM VGG-16 (CIFAR-100)", hpvm_ops=True),
    ModelSpec("resnet18_cifar10", hb.ResNet18Cifar, CIFAR, 13, 12, 5,
              ci=True, about="HPVM ResNet-18 (CIFAR-10): residual adds",
              hpvm_ops=True),
    ModelSpec("mobilenet_cifar10", hb.MobileNetCifar, CIFAR, 10, 12, 5,
              ci=True, about="HPVM MobileNet (CIFAR-10): depthwise, BN",
              hpvm_ops=True),
    ModelSpec("alexnet_imagenet", hb.AlexNetImagenet, IMAGENET, 10, 3, 2,
              ci=False, about="HPVM AlexNet (ImageNet): conv11x11 s4, 3 FC",
              hpvm_ops=True),
    ModelSpec("vgg16_imagenet", lambda: hb.VGG16(classes=1000, imagenet=True),
              IMAGENET, 10, 2, 2, ci=False, about="HPVM VGG-16 (ImageNet)",
              hpvm_ops=True),
    ModelSpec("resnet50_imagenet", hb.ResNet50Imagenet, IMAGENET, 10, 3, 2,
              ci=True, about="HPVM ResNet-50 (ImageNet): bottlenecks, 53 BN",
              hpvm_ops=True),
    ModelSpec("tv_mobilenet_v2", _tv("mobilenet_v2"), IMAGENET, 13, 3, 2,
              ci=True, about="torchvision mobilenet_v2: ReLU6 (Clip), "
              "inverted residuals"),
    ModelSpec("tv_resnet18", _tv("resnet18"), IMAGENET, 10, 3, 2, ci=False,
              about="torchvision resnet18: BN, GlobalAveragePool"),
]

# torchvision networks whose export must be byte-identical across runs, at
# every (opset, constant folding) variant of the full set; the CI-sized set
# runs the variants listed with each network (today all of them: vgg11_bn,
# with 530 MB of weights, takes about 25 s a variant).
STABILITY_VARIANTS = [(10, False), (10, True), (13, False), (13, True)]
STABILITY = [
    ("resnet18", _tv("resnet18"), STABILITY_VARIANTS),
    ("vgg11_bn", _tv("vgg11_bn"), STABILITY_VARIANTS),
    ("mobilenet_v2", _tv("mobilenet_v2"), STABILITY_VARIANTS),
]


def model(name):
    """The ModelSpec called `name`; KeyError names the known ones."""
    for spec in MODELS:
        if spec.name == name:
            return spec
    raise KeyError(f"unknown model '{name}' (known: "
                   f"{', '.join(s.name for s in MODELS)})")
