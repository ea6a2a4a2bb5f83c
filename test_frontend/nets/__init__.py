"""nets - the networks of the end-to-end tests and how each test uses them.

MODELS is the one list of end-to-end model tests: CMake asks
`run_e2e.py list --set ci|full` for it, so adding a model here adds its ctest.
STABILITY lists the torchvision networks whose export must be deterministic.
"""
from dataclasses import dataclass, replace
from typing import Callable, Tuple

import torchvision

from . import detection
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
    export: str = "hpvm"            # harness.EXPORTS: "hpvm" (torch2hpvm's
    #   way: batch norm kept, no constant folding) or "pytorch" (a PyTorch
    #   user's torch.onnx.export: eval, batch norm folded, constants folded)
    calib_images: int = 0           # images nets/init.py calibrates the
    #   random weights on; 0: 4 at ImageNet size (>= 100 pixels), else 16
    dense: bool = False             # per-pixel outputs (N x classes x H x
    #   W: segmentation; one or several) compared element by element and by
    #   per-pixel argmax, on plain random inputs, with no labels files
    class_axis: int = 1             # dense: the axis of the class scores
    #   (-1: N x T x classes tokens, N x H x W x classes NHWC maps)
    dynamic_batch: bool = False     # exported with a symbolic batch
    #   (N x C x H x W), as torch.onnx users export for serving
    symbolic_hw: str = ""           # dense: exported with symbolic batch,
    #   H and W, fixed by the exporter's --input-shape ("option") or by the
    #   tune set given as a .npy array ("npy": both sets .npy files)

    def __post_init__(self):
        if self.symbolic_hw not in ("", "option", "npy"):
            raise ValueError(f"{self.name}: symbolic_hw is "
                             f"'{self.symbolic_hw}'; use '', 'option' or "
                             f"'npy'")
        if self.export not in ("hpvm", "pytorch"):
            raise ValueError(f"{self.name}: export is '{self.export}'; "
                             f"use 'hpvm' or 'pytorch'")


def _tv(name, **kwargs):
    """A torchvision architecture with fresh random weights (no download)."""
    return lambda: getattr(torchvision.models, name)(weights=None, **kwargs)


def _darknet_cifar():
    """A Darknet-style CNN (YOLO's backbones): conv, batch norm and
    LeakyReLU(0.1) blocks with max pooling, then a head with PyTorch's
    default LeakyReLU slope (0.01)."""
    import torch.nn as nn
    layers, cin = [], 3
    for cout in (16, 32, 64):
        layers += [nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                   nn.BatchNorm2d(cout), nn.LeakyReLU(0.1), nn.MaxPool2d(2)]
        cin = cout
    layers += [nn.Flatten(), nn.Linear(64 * 4 * 4, 64), nn.LeakyReLU(),
               nn.Linear(64, 10)]
    return nn.Sequential(*layers)


MNIST, CIFAR, IMAGENET = (1, 28, 28), (3, 32, 32), (3, 224, 224)
SMALL = (3, 64, 64)     # torchvision classifiers at a CI-sized input
INCEPTION = (3, 96, 96)  # Inception v3's CI size (it needs at least 75x75)

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
    ModelSpec("darknet_cifar10", _darknet_cifar, CIFAR, 13, 12, 5, ci=True,
              about="Darknet-style CNN: conv, batch norm, LeakyReLU 0.1 "
              "(fused into the conv) and 0.01", export="pytorch"),
]

# torchvision classifiers exported as a PyTorch user does (export="pytorch":
# opset 13, eval, batch norm folded into the conv, constant folding), one
# per family that goes through today (scripts/tv_survey.py and
# test_frontend/tv_survey.md track the others). CI runs each family once,
# at 64x64 where the family allows it; AlexNet and VGG only export at 224
# (their AdaptiveAvgPool2d to 6x6 / 7x7 exports only when the feature map
# divides evenly).
MODELS += [
    ModelSpec(f"pt_{name}_{shape[1]}", _tv(name), shape, 13, images, batch,
              ci=ci, about=f"torchvision {name} at {shape[1]}x{shape[1]}, "
              f"PyTorch-style export: {about}", export="pytorch",
              calib_images=calib[0] if calib else 0)
    for name, shape, images, batch, ci, about, *calib in [
        ("alexnet", IMAGENET, 3, 2, True, "conv11x11 s4, 3 FC"),
        ("vgg11", IMAGENET, 3, 2, True, "8 conv3x3, 3 FC, 507 MB"),
        ("resnet18", SMALL, 6, 4, True, "basic blocks"),
        ("resnet18", IMAGENET, 3, 2, False, "basic blocks"),
        ("resnet50", IMAGENET, 3, 2, False, "bottlenecks"),
        ("resnext50_32x4d", SMALL, 6, 4, True, "grouped 3x3 bottlenecks"),
        ("resnext50_32x4d", IMAGENET, 3, 2, False,
         "grouped 3x3 bottlenecks"),
        ("wide_resnet50_2", SMALL, 6, 4, True, "wide bottlenecks"),
        ("wide_resnet50_2", IMAGENET, 3, 2, False, "wide bottlenecks"),
        ("mobilenet_v2", SMALL, 6, 4, True, "ReLU6, inverted residuals"),
        ("mobilenet_v2", IMAGENET, 3, 2, False, "ReLU6, inverted residuals"),
        ("regnet_x_400mf", SMALL, 6, 4, False, "RegNet X: grouped convs, "
         "no squeeze-and-excitation"),
        ("regnet_y_400mf", SMALL, 6, 4, True, "RegNet Y: squeeze-and-"
         "excitation (sigmoid gate, multiply)"),
        ("efficientnet_b0", SMALL, 6, 4, True, "EfficientNet v1: MBConv "
         "blocks, SiLU (x * sigmoid(x)), squeeze-and-excitation"),
        ("efficientnet_b0", IMAGENET, 3, 2, False, "EfficientNet v1: MBConv "
         "blocks, SiLU, squeeze-and-excitation"),
        ("efficientnet_v2_s", SMALL, 6, 4, True, "EfficientNet v2: "
         "FusedMBConv and MBConv blocks, SiLU, squeeze-and-excitation"),
        ("efficientnet_v2_s", IMAGENET, 3, 2, False, "EfficientNet v2: "
         "FusedMBConv and MBConv blocks, SiLU, squeeze-and-excitation"),
        ("mnasnet0_5", SMALL, 6, 4, True, "MNASNet: x.mean([2, 3]) "
         "(ReduceMean) before the classifier"),
        ("squeezenet1_1", SMALL, 6, 4, True, "SqueezeNet: fire modules "
         "(Concat of two expand convs)"),
        ("squeezenet1_1", IMAGENET, 3, 2, False, "SqueezeNet: fire modules"),
        ("densenet121", SMALL, 6, 4, True, "DenseNet: dense blocks (Concat "
         "of up to 25 activations)"),
        ("densenet121", IMAGENET, 3, 2, False, "DenseNet: dense blocks"),
        ("googlenet", SMALL, 6, 4, True, "GoogLeNet: inception blocks "
         "(Concat), MaxPool ceil_mode=1 (pool_max_pads)"),
        ("googlenet", IMAGENET, 3, 2, False, "GoogLeNet: inception blocks"),
        ("shufflenet_v2_x0_5", SMALL, 6, 4, True, "ShuffleNet v2: channel "
         "split (Slice), channel shuffle (Reshape, Transpose, Reshape)"),
        ("shufflenet_v2_x1_0", IMAGENET, 3, 2, False, "ShuffleNet v2"),
        ("convnext_tiny", SMALL, 6, 4, True, "ConvNeXt: channel-last "
         "blocks (Transpose, LayerNorm, Linear, GELU, Linear, Transpose) made "
         "channel-first: layer_norm, 1x1 convs, gelu"),
        ("convnext_tiny", IMAGENET, 3, 2, False, "ConvNeXt"),
        ("inception_v3", INCEPTION, 6, 4, True, "Inception v3: factorised "
         "inception blocks (Concat), Pad + AveragePool"),
        ("inception_v3", (3, 299, 299), 3, 2, False, "Inception v3 at its "
         "native 299x299"),
        # Its last stages are 2 x 2 at 64x64: calibrated on 16 images, the
        # batch norms and squeeze-and-excitation layers fit 16-64 samples a
        # channel, and on fresh images activations grow block after block
        # (logits 10x the calibrated spread, a third of the last gates
        # saturated); 64 images keep them within 20%.
        ("mobilenet_v3_small", SMALL, 6, 4, True, "hardswish (x * "
         "HardSigmoid(x)), squeeze-and-excitation (hard sigmoid gate)", 64),
        ("mobilenet_v3_large", IMAGENET, 3, 2, False, "hardswish (x * "
         "HardSigmoid(x)), squeeze-and-excitation (hard sigmoid gate)"),
    ]
]

# Vision transformers: torchvision's ViT sizes its position embedding for
# the input (image_size), 16 x 16 patches; tokens are made channel-first
# (class_token, layer_norm, 1x1 convs, attention, gelu, select_token).
MODELS += [
    ModelSpec(f"pt_vit_b_16_{shape[1]}", _tv("vit_b_16", image_size=shape[1]),
              shape, 13, images, batch, ci=ci, about=f"torchvision vit_b_16 "
              f"at {shape[1]}x{shape[1]}, PyTorch-style export: ViT-B/16, "
              f"{(shape[1] // 16) ** 2 + 1} tokens (class token, "
              f"self-attention, MLP)", export="pytorch")
    for shape, images, batch, ci in [(SMALL, 6, 4, True),
                                     (IMAGENET, 3, 2, False)]
]

# torchvision networks whose export must be byte-identical across runs, at
# every (opset, constant folding) variant of the full set; the CI-sized set
# runs the variants listed with each network (all of them but for vgg11_bn,
# whose 530 MB of weights take about 25 s a variant: two of its four).
STABILITY_VARIANTS = [(10, False), (10, True), (13, False), (13, True)]
STABILITY = [
    ("resnet18", _tv("resnet18"), STABILITY_VARIANTS),
    ("vgg11_bn", _tv("vgg11_bn"), [(10, False), (13, True)]),
    ("mobilenet_v2", _tv("mobilenet_v2"), STABILITY_VARIANTS),
]


def model(name):
    """The ModelSpec called `name`; KeyError names the known ones."""
    for spec in MODELS:
        if spec.name == name:
            return spec
    raise KeyError(f"unknown model '{name}' (known: "
                   f"{', '.join(s.name for s in MODELS)})")

# Swin: shifted window attention (7 x 7 windows, relative position bias,
# the mask of shifted windows) and patch merging, channel-first (layer_norm,
# 1x1 convs, window_attention, spatial_slice, concat, gelu). At 64x64 the
# stages are 16, 8, 4 and 2 pixels wide: torchvision pads them to whole
# windows (pad, and a spatial_slice crops back); at 224 they tile exactly.
MODELS += [
    ModelSpec(f"pt_swin_t_{shape[1]}", _tv("swin_t"), shape, 13, images, batch,
              ci=ci, about=f"torchvision swin_t at {shape[1]}x{shape[1]}, "
              f"PyTorch-style export: Swin-T, shifted window attention "
              f"{about}", export="pytorch")
    for shape, images, batch, ci, about in [
        (SMALL, 6, 4, True, "(windows padded)"),
        (IMAGENET, 3, 2, False, "(windows tile the image)")]
]


def _tv_segmentation(name, **kwargs):
    """A torchvision segmentation network with fresh random weights: its
    'out' head, and with aux_loss=True its 'aux' head too (a second graph
    output)."""
    import torch.nn as nn

    def net():
        return getattr(torchvision.models.segmentation, name)(
            weights=None, weights_backbone=None, num_classes=21, **kwargs)

    # (Two classes, not one returning either: TorchScript scripts them.)
    class Out(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net()

        def forward(self, x):
            return self.net(x)["out"]

    class OutAux(Out):
        def forward(self, x):
            heads = self.net(x)
            return heads["out"], heads["aux"]

    return OutAux if kwargs.get("aux_loss") else Out


# Segmentation: per-pixel class scores at the input's size (Resize, linear,
# half_pixel, after the head), atrous (dilated) convolutions in the backbone
# (MobileNet v3's last stage; ResNet-50's layer3 and layer4) and DeepLab's
# ASPP (dilations 12, 24, 36 and a pooled branch resized back up).
MODELS += [
    ModelSpec(f"pt_{name}_{shape[1]}", _tv_segmentation(name, **kw), shape,
              13, images, batch, ci=ci, about=f"torchvision {name} at "
              f"{shape[1]}x{shape[1]}, PyTorch-style export: {about}",
              export="pytorch", dense=True)
    for name, shape, images, batch, ci, about, kw in [
        ("lraspp_mobilenet_v3_large", (3, 96, 96), 3, 2, True,
         "LR-ASPP head, dilated depthwise convs, 2 resizes", {}),
        ("deeplabv3_mobilenet_v3_large", (3, 96, 96), 3, 2, True,
         "ASPP (dilations 12/24/36, pooled branch), dilated depthwise "
         "convs", {}),
        ("fcn_resnet50", (3, 64, 64), 2, 1, True,
         "dilated ResNet-50 (output stride 8), FCN head and the auxiliary "
         "head (two graph outputs)", {"aux_loss": True}),
        # The full set (and scripts/bench/vs_onnxruntime.py's segmentation
        # rows): 224x224.
        ("lraspp_mobilenet_v3_large", IMAGENET, 2, 1, False,
         "LR-ASPP head, dilated depthwise convs, 2 resizes", {}),
        ("deeplabv3_mobilenet_v3_large", IMAGENET, 2, 1, False,
         "ASPP (dilations 12/24/36, pooled branch), dilated depthwise "
         "convs", {}),
        ("fcn_resnet50", IMAGENET, 2, 1, False,
         "dilated ResNet-50 (output stride 8), FCN head", {}),
    ]
]



def _unet():
    """A small U-Net (segmentation, 4 classes): conv blocks (conv 3x3, batch
    norm, ReLU, twice), max-pool down, ConvTranspose up (k2 s2; then k3 s2
    with padding 1 and output_padding 1, FPN's way), skip concatenations,
    a 1x1 classifier."""
    import torch
    import torch.nn as nn

    def block(cin, cout):
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1, self.enc2 = block(3, 16), block(16, 32)
            self.mid = block(32, 64)
            self.pool = nn.MaxPool2d(2)
            self.up2 = nn.ConvTranspose2d(64, 32, 2, stride=2)
            self.dec2 = block(64, 32)
            self.up1 = nn.ConvTranspose2d(32, 16, 3, stride=2, padding=1,
                                          output_padding=1)
            self.dec1 = block(32, 16)
            self.head = nn.Conv2d(16, 4, 1)

        def forward(self, x):
            e1 = self.enc1(x)
            e2 = self.enc2(self.pool(e1))
            m = self.mid(self.pool(e2))
            d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
            d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
            return self.head(d1)

    return UNet()


MODELS += [
    ModelSpec(f"unet_{shape[1]}", _unet, shape, 13, images, batch, ci=ci,
              about=f"a small U-Net at {shape[1]}x{shape[1]}, PyTorch-style "
              f"export: ConvTranspose (k2 s2, and k3 s2 with output "
              f"padding), skip concatenations, per-pixel classes",
              export="pytorch", dense=True)
    for shape, images, batch, ci in [(SMALL, 3, 2, True),
                                     (IMAGENET, 2, 1, False)]
]


def _token_block(d):
    """B x T x D tokens through a Linear and a pre-norm transformer block
    (LayerNorm, 4-head self-attention, LayerNorm, GELU MLP, residuals)."""
    import torch.nn as nn

    class TokenBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(d, d)
            self.norm1 = nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
            self.norm2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                     nn.Linear(2 * d, d))

        def forward(self, t):
            t = self.proj(t)
            h = self.norm1(t)
            t = t + self.attn(h, h, h, need_weights=False)[0]
            return t + self.mlp(self.norm2(t))

    return TokenBlock()


def _crnn():
    """A CRNN-style text recogniser (1 x 32 x 128 line images): a conv
    backbone pooled to one row of 32 columns, the columns as tokens
    (Squeeze, Transpose to B x T x D), a Linear, a pre-norm transformer
    block (LayerNorm, self-attention, LayerNorm, GELU MLP, residuals) and
    per-column class log-probabilities (Linear, LogSoftmax over the last
    axis: CTC's input)."""
    import torch.nn as nn

    def block(cin, cout, pool):
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(pool)]

    class CRNN(nn.Module):
        def __init__(self, classes=12, d=64):
            super().__init__()
            self.cnn = nn.Sequential(*block(1, 16, 2), *block(16, 32, 2),
                                     *block(32, d, (2, 1)),
                                     *block(d, d, (4, 1)))
            self.tokens = _token_block(d)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            t = self.tokens(self.cnn(x).squeeze(2).permute(0, 2, 1))
            return self.head(t).log_softmax(-1)

    return CRNN()


def _nhwc_net():
    """A model as tf2onnx converts a Keras one: an NHWC input (N x H x W x
    C) transposed to NCHW for the convs (a dilated one, bicubic
    upsampling), and an NHWC output (per-pixel class scores, transposed
    back)."""
    import torch.nn as nn

    class Nhwc(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
                nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                nn.Conv2d(32, 32, 3, padding=2, dilation=2), nn.ReLU(),
                nn.Upsample(scale_factor=2, mode="bicubic"),
                nn.Conv2d(32, 6, 1))

        def forward(self, x):
            return self.net(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)

    return Nhwc()


def _speech_cnn():
    """A keyword-spotting CNN on a 3-D input (N x 40 mel bands x 64
    frames: a spectrogram, as audio models take it), read three ways:
    Unsqueeze(1) into the conv stack, Unsqueeze(-1) and a permute (the
    NHWC view of one channel) into a strided side conv, Flatten into a
    linear skip; 12 classes."""
    import torch
    import torch.nn as nn

    class Speech(nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = nn.Sequential(
                nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                nn.AdaptiveAvgPool2d(1), nn.Flatten())
            self.side = nn.Sequential(
                nn.Conv2d(1, 8, 5, stride=4, padding=2), nn.ReLU(),
                nn.AdaptiveAvgPool2d(1), nn.Flatten())
            self.head = nn.Linear(40, 12)
            self.skip = nn.Linear(40 * 64, 12)

        def forward(self, x):
            a = self.convs(x.unsqueeze(1))
            b = self.side(x.unsqueeze(-1).permute(0, 3, 1, 2))
            return self.head(torch.cat([a, b], 1)) + self.skip(x.flatten(1))

    return Speech()


def _sequence_transformer():
    """A transformer classifier on a 3-D input of 16 tokens of 32 features
    (N x T x D: a sequence of feature vectors, as a speech or sensor model
    takes it): Linear, a pre-norm transformer block (LayerNorm,
    self-attention, LayerNorm, GELU MLP, residuals), the mean over the
    tokens, a Linear to 10 classes."""
    import torch.nn as nn

    class SequenceTransformer(nn.Module):
        def __init__(self, d=32, classes=10):
            super().__init__()
            self.tokens = _token_block(d)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            return self.head(self.tokens(x).mean(1))

    return SequenceTransformer()


def _patch_tokens_classifier(blocks, d, classes=10):
    """3 x 32 x 32 images to 4 x 4 patches embedded by a strided conv, the
    64 patches as B x T x d tokens through \p blocks, LayerNorm, the mean
    over the tokens, a Linear to \p classes."""
    import torch.nn as nn

    class PatchTokens(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 4, stride=4)
            self.blocks = blocks
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            t = self.patch(x).flatten(2).transpose(1, 2)
            return self.head(self.norm(self.blocks(t)).mean(1))

    return PatchTokens()


def _flipped_token_means():
    """Tokens (as in _patch_tokens_classifier, one transformer block of
    _token_block) leaving as the official Swin's `avgpool(x.transpose(1,
    2))` (AdaptiveAvgPool1d(1) of B x D x T, flattened) and as
    `x.transpose(1, 2).mean(-1)`, the two summed into a Linear."""
    import torch.nn as nn

    class FlippedMeans(nn.Module):
        def __init__(self, d=32, classes=10):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 4, stride=4)
            self.block = _token_block(d)
            self.norm = nn.LayerNorm(d)
            self.avgpool = nn.AdaptiveAvgPool1d(1)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            t = self.norm(self.block(self.patch(x).flatten(2).transpose(1, 2)))
            pooled = self.avgpool(t.transpose(1, 2)).flatten(1)
            return self.head(pooled + 0.5 * t.transpose(1, 2).mean(-1))

    return FlippedMeans()


def _transformer_encoder(batch_first):
    """Patch tokens (as in _patch_tokens_classifier, 64 of 32 features)
    through torch's nn.TransformerEncoder (2 layers, 4 heads): batch first
    with pre-norm layers and GELU, or as older code writes it, the tokens
    permuted to sequence-first T x B x D (batch_first=False, post-norm,
    ReLU) and the mean taken over axis 0; a Linear to 10 classes."""
    import torch.nn as nn

    class Encoder(nn.Module):
        def __init__(self, d=32, classes=10):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 4, stride=4)
            layer = nn.TransformerEncoderLayer(
                d, 4, 2 * d, dropout=0.0, batch_first=batch_first,
                norm_first=batch_first,
                activation="gelu" if batch_first else "relu")
            self.encoder = nn.TransformerEncoder(layer, 2)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            t = self.patch(x).flatten(2).transpose(1, 2)
            if batch_first:
                return self.head(self.encoder(t).mean(1))
            return self.head(self.encoder(t.permute(1, 0, 2)).mean(0))

    return Encoder()


def _mlp_mixer():
    """A small MLP-Mixer (3 x 32 x 32 images): 4 x 4 patches embedded by a
    strided conv to 64 tokens of 48 features, two mixer blocks (LayerNorm,
    the tokens transposed to B x D x T for a GELU MLP across the tokens and
    back, a residual; LayerNorm, a GELU MLP across the features, a
    residual), LayerNorm, the mean over the tokens, a Linear to 10
    classes."""
    import torch.nn as nn

    def mlp(n, hidden):
        return nn.Sequential(nn.Linear(n, hidden), nn.GELU(),
                             nn.Linear(hidden, n))

    class MixerBlock(nn.Module):
        def __init__(self, tokens, d):
            super().__init__()
            self.norm1 = nn.LayerNorm(d)
            self.tokens = mlp(tokens, 2 * tokens)
            self.norm2 = nn.LayerNorm(d)
            self.features = mlp(d, 2 * d)

        def forward(self, x):
            x = x + self.tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
            return x + self.features(self.norm2(x))

    return _patch_tokens_classifier(
        nn.Sequential(MixerBlock(64, 48), MixerBlock(64, 48)), 48)


def _token_products():
    """Token products (3 x 32 x 32 images): 4 x 4 patches embedded by a
    strided conv to 64 tokens of 32 features; a block with a single-head
    attention written out as a user writes it (LayerNorm, queries, keys,
    values, softmax(q @ k^T / sqrt(d)) @ v, a projection, a residual),
    then the features mixed across the tokens by the attention's weights
    from the transposed tokens ((t^T @ a)^T, a residual); LayerNorm, the
    mean over the tokens, a Linear to 10 classes."""
    import math

    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.q, self.k, self.v, self.proj = (nn.Linear(d, d)
                                                 for _ in range(4))
            self.scale = 1 / math.sqrt(d)

        def forward(self, x):
            h = self.norm(x)
            a = torch.softmax(
                self.q(h) @ self.k(h).transpose(1, 2) * self.scale, -1)
            x = x + self.proj(a @ self.v(h))
            return x + (x.transpose(1, 2) @ a).transpose(1, 2)

    return _patch_tokens_classifier(Block(32), 32)


def _pre_norm_block(attention, d):
    """A pre-norm transformer block on B x T x d tokens: x + attention(
    LayerNorm(x)), then x + MLP(LayerNorm(x)) (2d hidden, GELU)."""
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attention = attention
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                     nn.Linear(2 * d, d))

        def forward(self, x):
            x = x + self.attention(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    return Block()


def _multihead_tokens(scales=(None, None, None)):
    """Multi-head attention written out by hand (3 x 32 x 32 images): 4 x 4
    patches embedded by a strided conv to 64 tokens of 32 features; a
    block whose attention is timm's (one Linear to queries, keys and
    values, Reshape to B x T x 3 x heads x d, permute(2, 0, 3, 1, 4),
    unbind, the queries scaled, softmax(q @ k^T) @ v, transpose(1, 2) and
    Reshape back, a projection); the same in timm's older form (no qkv
    bias, qkv[0], qkv[1], qkv[2], the scores scaled); a block whose
    attention is the
    per-projection form of BERT-style code (a Linear each, view as B x T x
    heads x d, permute(0, 2, 1, 3), the scores divided by sqrt(d)); each
    block with a GELU MLP and residuals; LayerNorm, the mean over the
    tokens, a Linear to 10 classes. `scales`: each block's scale of the
    scores (the third one's a divisor) where not the usual d^-0.5; 1: no
    Mul at all."""
    import torch
    import torch.nn as nn

    class Fused(nn.Module):
        def __init__(self, d, heads, unbind, scale=None):
            super().__init__()
            self.heads = heads
            self.scale = (d // heads) ** -0.5 if scale is None else scale
            self.unbind = unbind
            self.qkv = nn.Linear(d, 3 * d, bias=unbind)
            self.proj = nn.Linear(d, d)

        def forward(self, x):
            b, t, d = x.shape
            qkv = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads)
            qkv = qkv.permute(2, 0, 3, 1, 4)
            if self.unbind:
                q, k, v = qkv.unbind(0)
                q = q if self.scale == 1 else q * self.scale
                a = q @ k.transpose(-2, -1)
            else:
                q, k, v = qkv[0], qkv[1], qkv[2]
                a = q @ k.transpose(-2, -1)
                a = a if self.scale == 1 else a * self.scale
            return self.proj((a.softmax(dim=-1) @ v).transpose(1, 2)
                             .reshape(b, t, d))

    class Separate(nn.Module):
        def __init__(self, d, heads, divisor=None):
            super().__init__()
            self.heads = heads
            self.divisor = (d // heads) ** 0.5 if divisor is None else divisor
            self.q, self.k, self.v, self.out = (nn.Linear(d, d)
                                                for _ in range(4))

        def split(self, x):
            b, t, d = x.shape
            return x.view(b, t, self.heads, d // self.heads).permute(0, 2, 1, 3)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), \
                self.split(self.v(x))
            a = torch.softmax(q @ k.transpose(-1, -2) / self.divisor, -1)
            return self.out((a @ v).permute(0, 2, 1, 3).reshape(b, t, d))

    return _patch_tokens_classifier(
        nn.Sequential(_pre_norm_block(Fused(32, 4, True, scales[0]), 32),
                      _pre_norm_block(Fused(32, 4, False, scales[1]), 32),
                      _pre_norm_block(Separate(32, 4, scales[2]), 32)), 32)


def _attention_biases():
    """Multi-head attention written out (as in _multihead_tokens, 64 tokens
    of 32 features on an 8 x 8 grid, 4 heads) with a constant added to the
    scores before the softmax: BEiT's relative position bias (a table of
    15 x 15 offsets by 4 heads, indexed by each pair's offset, permuted to
    heads x T x T; the queries scaled first), a local mask shared by the
    heads (-inf beyond 2 rows or columns; the scores divided by sqrt(d)
    first; BERT-style heads) and LeViT's attention biases (4 x T x T, after
    the scores' scale)."""
    import torch
    import torch.nn as nn

    side, d, heads = 8, 32, 4
    ys, xs = torch.meshgrid(torch.arange(side), torch.arange(side),
                            indexing="ij")
    ys, xs = ys.flatten(), xs.flatten()
    dy = ys[:, None] - ys[None, :]
    dx = xs[:, None] - xs[None, :]

    class Biased(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.kind = kind
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            t = side * side
            if kind == "beit":
                self.table = nn.Parameter(torch.randn((2 * side - 1) ** 2,
                                                      heads))
                self.register_buffer(
                    "index", (dy + side - 1) * (2 * side - 1) + dx + side - 1)
            elif kind == "local":
                far = (dy.abs() > 2) | (dx.abs() > 2)
                self.register_buffer(
                    "mask", torch.zeros(t, t).masked_fill(far, float("-inf")))
            else:
                self.ab = nn.Parameter(torch.randn(heads, t, t))

        def forward(self, x):
            b, t, _ = x.shape
            qkv = self.qkv(x).reshape(b, t, 3, heads, d // heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
            scale = (d // heads) ** -0.5
            if self.kind == "beit":
                bias = self.table[self.index.view(-1)].view(t, t, heads)
                a = (q * scale) @ k.transpose(-2, -1) + \
                    bias.permute(2, 0, 1).unsqueeze(0)
            elif self.kind == "local":
                a = q @ k.transpose(-2, -1) / (d // heads) ** 0.5 + self.mask
            else:
                a = q @ k.transpose(-2, -1) * scale + self.ab
            return self.proj((a.softmax(dim=-1) @ v).transpose(1, 2)
                             .reshape(b, t, d))

    return _patch_tokens_classifier(
        nn.Sequential(*(_pre_norm_block(Biased(kind), d)
                        for kind in ("beit", "local", "levit"))), d)


def _timm_vit():
    """A ViT as timm (0.9) writes one, at 32 x 32 (patches of 4: 64 tokens
    of 48 features, 3 heads): the patch conv flattened and transposed, the
    class token expanded and concatenated, the position embedding added;
    two blocks of LayerNorm, timm's attention (one qkv Linear, 5-D
    Reshape, permute, unbind, q * scale), LayerScale, residual, LayerNorm,
    GELU MLP, LayerScale, residual; LayerNorm, the class token, a Linear
    to 10 classes."""
    import torch
    import torch.nn as nn

    class Attention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads, self.scale = heads, (d // heads) ** -0.5
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(self, x):
            b, n, c = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, -1).permute(
                2, 0, 3, 1, 4).unbind(0)
            x = (q * self.scale @ k.transpose(-2, -1)).softmax(-1) @ v
            return self.proj(x.transpose(1, 2).reshape(b, n, c))

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = Attention(d, heads)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                     nn.Linear(4 * d, d))
            self.ls1 = nn.Parameter(torch.full((d,), 0.5))
            self.ls2 = nn.Parameter(torch.full((d,), 0.5))

        def forward(self, x):
            x = x + self.ls1 * self.attn(self.norm1(x))
            return x + self.ls2 * self.mlp(self.norm2(x))

    class VisionTransformer(nn.Module):
        def __init__(self, d=48, heads=3, depth=2, classes=10):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 4, stride=4)
            self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
            self.pos_embed = nn.Parameter(torch.randn(1, 65, d) * 0.02)
            self.blocks = nn.Sequential(*(Block(d, heads)
                                          for _ in range(depth)))
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            x = self.patch(x).flatten(2).transpose(1, 2)
            x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), 1)
            x = self.norm(self.blocks(x + self.pos_embed))
            return self.head(x[:, 0])

    return VisionTransformer()


def _non_local():
    """A small CNN with a non-local block (Wang et al.; the embedded
    Gaussian form, as SAGAN and DANet's position attention write it) on 3
    x 32 x 32 images: two conv stages to 32 x 8 x 8, then queries, keys and
    values by 1x1 convs, the keys viewed as B x C x H*W, the queries and
    values also transposed to B x H*W x C, softmax(q @ k) @ v, transposed
    and viewed back as B x C x H x W, a 1x1 conv and the residual; a conv,
    global mean, Linear to 10 classes."""
    import torch
    import torch.nn as nn

    class NonLocal(nn.Module):
        def __init__(self, c, inner):
            super().__init__()
            self.theta = nn.Conv2d(c, inner, 1)
            self.phi = nn.Conv2d(c, inner, 1)
            self.g = nn.Conv2d(c, inner, 1)
            self.out = nn.Conv2d(inner, c, 1)

        def forward(self, x):
            b, _, h, w = x.shape
            q = self.theta(x).view(b, -1, h * w).permute(0, 2, 1)
            k = self.phi(x).view(b, -1, h * w)
            v = self.g(x).view(b, -1, h * w).permute(0, 2, 1)
            y = torch.softmax(q @ k, -1) @ v
            y = y.permute(0, 2, 1).contiguous().view(b, -1, h, w)
            return x + self.out(y)

    class Net(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                nn.MaxPool2d(2))
            self.block = NonLocal(32, 16)
            self.tail = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1),
                                      nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                      nn.Flatten(), nn.Linear(32, classes))

        def forward(self, x):
            return self.tail(self.block(self.stem(x)))

    return Net()


MODELS += [
    ModelSpec("sequence_transformer_16x32", _sequence_transformer, (16, 32),
              13, 10, 4, ci=True,
              about="a transformer classifier on a 3-D input read as tokens "
              "(N x 16 x 32, held as N x 1 x 16 x 32, channels_first to N x "
              "32 x 1 x 16): Linear, LayerNorm, self-attention, GELU MLP, the "
              "mean over the tokens", export="pytorch"),
    ModelSpec("mlp_mixer_32", _mlp_mixer, (3, 32, 32), 13, 4, 2, ci=True,
              about="a small MLP-Mixer: patch conv, 64 tokens of 48 "
              "features, token mixing across the tokens (Transpose of the "
              "last two axes: token_transpose, a Linear over the tokens, "
              "back), feature MLPs, residuals, mean over the tokens",
              export="pytorch"),
    ModelSpec("flipped_token_means_32", _flipped_token_means, (3, 32, 32),
              13, 4, 2, ci=True,
              about="tokens leaving as the mean over them taken after a "
              "Transpose to B x D x T: AdaptiveAvgPool1d then Flatten (the "
              "official Swin's avgpool), and mean(-1)",
              export="pytorch"),
    ModelSpec("transformer_encoder_32", lambda: _transformer_encoder(True),
              (3, 32, 32), 13, 4, 2, ci=True,
              about="torch's nn.TransformerEncoder, batch first (pre-norm, "
              "GELU): each layer's nn.MultiheadAttention an attention op",
              export="pytorch"),
    ModelSpec("transformer_encoder_seq_first_32",
              lambda: _transformer_encoder(False), (3, 32, 32), 13, 4, 2,
              ci=True, about="the same sequence-first (tokens permuted to T "
              "x B x D, batch_first=False, post-norm, ReLU), the mean over "
              "axis 0: put batch first (make-tokens-batch-first)",
              export="pytorch"),
    ModelSpec("token_products_32", _token_products, (3, 32, 32), 13, 4, 2,
              ci=True,
              about="a single-head attention written out on 64 tokens of 32 "
              "features: q @ k^T and a @ v as token_matmul (two token "
              "activations), then (t^T @ a)^T, a product of the transposed "
              "tokens; mean over the tokens", export="pytorch"),
    ModelSpec("multihead_tokens_32", _multihead_tokens, (3, 32, 32), 13, 4,
              2, ci=True,
              about="multi-head attention written out on 64 tokens of 32 "
              "features, 4 heads: timm's (one qkv Linear, Reshape to 5-D, "
              "permute, unbind or qkv[i]) and BERT-style (a Linear each, view "
              "as heads, permute); each an attention op", export="pytorch"),
    ModelSpec("attention_scales_32",
              lambda: _multihead_tokens((0.1, 1, 8.0)), (3, 32, 32), 13, 4, 2,
              ci=True, about="multihead_tokens_32 with other scales of the "
              "scores than d^-0.5 (the attention op's own): the queries "
              "times 0.1 (timm's qk_scale), no scale, the scores divided by "
              "8: the queries multiplied by the rest first",
              export="pytorch"),
    ModelSpec("attention_biases_32", _attention_biases, (3, 32, 32), 13, 4,
              2, ci=True,
              about="written-out multi-head attention with a constant added "
              "to the scores: BEiT's relative position bias, a local -inf "
              "mask shared by the heads, LeViT's attention biases; each a "
              "window_attention of one window of all 64 tokens",
              export="pytorch"),
    ModelSpec("timm_vit_32", _timm_vit, (3, 32, 32), 13, 4, 2, ci=True,
              about="a ViT as timm writes one: class token and position "
              "embedding (class_token), timm's attention (5-D qkv cut, "
              "unbind: attention), LayerScale, the class token to the head",
              export="pytorch"),
    ModelSpec("non_local_32", _non_local, (3, 32, 32), 13, 4, 2, ci=True,
              about="a CNN with a non-local block: queries, keys and values "
              "by 1x1 convs viewed as 64 tokens (the keys B x C x H*W: a "
              "token_transpose), softmax(q @ k) @ v by token_matmul, viewed "
              "back as B x C x H x W (as held: nothing), a 1x1 conv, the "
              "residual", export="pytorch"),
    ModelSpec("speech_cnn_40x64", _speech_cnn, (40, 64), 13, 12, 5, ci=True,
              about="a keyword-spotting CNN on a 3-D input (N x 40 x 64, "
              "held as N x 1 x 40 x 64): Unsqueeze(1) into convs, "
              "Unsqueeze(-1) and a permute into a side conv, Flatten into "
              "a linear skip", export="pytorch"),
    ModelSpec("crnn_32x128", _crnn, (1, 32, 128), 13, 3, 2, ci=True,
              about="a CRNN-style recogniser: conv backbone to one row, the "
              "32 columns as B x T x D tokens (Squeeze, Transpose), Linear, "
              "a transformer block (LayerNorm, self-attention, GELU MLP), "
              "LogSoftmax over the last axis; output N x 32 x 12",
              export="pytorch", dense=True, class_axis=-1),
    ModelSpec("fpn_detector_128", detection.fpn_detector, (3, 128, 128), 13,
              2, 1,
              ci=True, about="a RetinaNet-style detector's raw outputs: "
              "ResNet-18, FPN (nearest upsampling to the finer level's "
              "size, P6/P7), class and box towers on 5 levels: 10 outputs",
              export="pytorch", dense=True),
    ModelSpec("yolov8_128", detection.yolov8, (3, 128, 128), 17, 4, 2,
              ci=True, about="YOLOv8 (yolov8n's layout, narrower): C2f, "
              "SPPF, PAN neck, and the Detect head as exported: the scales' "
              "maps flattened to B x 67 x H*W sequences (held B x 67 x 1 x "
              "H*W) and concatenated along the anchors (concat_width), DFL "
              "as group_softmax and a grouped 1x1 conv, dist2bbox with the "
              "anchor points and strides as broadcast constants; output N x "
              "7 x 336", export="pytorch", dense=True),
    ModelSpec("yolov5_128", detection.yolov5, (3, 128, 128), 17, 4, 2,
              ci=True, about="YOLOv5 (v7.0, yolov5n's layout, narrower): C3, "
              "SPPF, PAN neck, and the Detect head as exported: each scale's "
              "B x 3 x 8 x H x W view permuted to B x 3 x H x W x 8 "
              "(channel_shuffle and a reshape: held B x 8 x 3*H x W), "
              "sigmoid, split, xy around the grid and wh by the anchor "
              "sizes (5-D constants), viewed as B x 3*H*W x 8 boxes and "
              "concatenated (concat_width, channels_last); output N x 1008 "
              "x 8", export="pytorch", dense=True, class_axis=-1),
    ModelSpec("yolov8_320", detection.yolov8, (3, 320, 320), 17, 2, 1,
              ci=False, about="yolov8_128 at 320x320 (the benchmark's): "
              "output N x 7 x 2100", export="pytorch", dense=True),
    ModelSpec("yolov5_320", detection.yolov5, (3, 320, 320), 17, 2, 1,
              ci=False, about="yolov5_128 at 320x320 (the benchmark's): "
              "output N x 6300 x 8", export="pytorch", dense=True,
              class_axis=-1),
    ModelSpec("unet_symbolic_64", _unet, SMALL, 13, 3, 2, ci=True,
              about="the small U-Net exported with symbolic batch, H and W "
              "(N x 3 x H x W), fixed by --input-shape input:1x3x64x64",
              export="pytorch", dense=True, symbolic_hw="option"),
    ModelSpec("unet_symbolic_npy_64", _unet, SMALL, 13, 3, 2, ci=True,
              about="the same with its tune and test sets as .npy arrays "
              "(N x 3 x 64 x 64): the tune set fixes H and W, no "
              "--input-shape", export="pytorch", dense=True,
              symbolic_hw="npy"),
    ModelSpec("nhwc_tf2onnx_32", _nhwc_net, (32, 32, 3), 13, 3, 2, ci=True,
              about="an NHWC model as tf2onnx writes it: input N x 32 x 32 "
              "x 3 transposed to NCHW (channels_first), convs (a dilated "
              "one), bicubic upsampling, NHWC output N x 32 x 32 x 6 "
              "(channels_last)", export="pytorch", dense=True, class_axis=-1),
]

# Models exported with a symbolic batch, as torch.onnx users export them for
# serving (dynamic_axes={"input": {0: "batch"}}): shape computations through
# Shape (ViT's class token expanded to the batch, attention's head cuts and
# unbind) must fold as in a batch-1 export (the batch is read as 1), and the
# program runs at any batch.
MODELS += [
    replace(model(base), name=name, ci=ci, dynamic_batch=True,
            about=model(base).about + "; exported with a symbolic batch")
    for base, name, ci in [
        ("timm_vit_32", "timm_vit_dynamic_batch_32", True),
        ("yolov8_128", "yolov8_dynamic_batch_128", True),
        ("yolov5_128", "yolov5_dynamic_batch_128", True),
        ("sequence_transformer_16x32", "sequence_transformer_dynamic_batch_16x32",
         True),
        ("multihead_tokens_32", "multihead_tokens_dynamic_batch_32", False),
        ("pt_vit_b_16_64", "pt_vit_b_16_dynamic_batch_64", False),
        ("pt_swin_t_64", "pt_swin_t_dynamic_batch_64", False)]
]
