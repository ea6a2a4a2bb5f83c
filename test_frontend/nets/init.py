"""init.py - seeded random weights that keep every layer well scaled.

Plain random weights make deep networks useless as tests: activations vanish
or explode with depth, tanh saturates, the softmax collapses to one-hot or to
uniform, and top-1 then hinges on rounding noise. Instead, one forward pass
over a calibration batch draws every parameter at random and rescales it on
the fly (a one-pass variant of layer-sequential unit-variance init):

- Conv and Linear: weights ~ N(0, 1), scaled so that the layer's output
  has unit root mean square on the calibration batch. A bias, where the
  layer has one, then cancels the output's per-channel mean and adds
  U(-0.2, 0.2): without that, random networks map every input to nearly the
  same output, and all images would land in one class. The last layer is
  scaled so that its centred output (the class scores' spread between
  images) has standard deviation LOGIT_STD: clear winners, no saturation.
- BatchNorm: gamma ~ U(0.6, 1.4), beta ~ U(-0.3, 0.3), and *randomized*
  running statistics: the batch's per-channel mean plus 0.2 standard
  deviations of noise, and its variance times U(0.6, 1.6). The layer then
  really normalises (tests see its arithmetic), yet no two channels match.
  A BatchNorm marked `residual_branch_end` (the last of a residual branch)
  draws gamma ~ U(0.1, 0.3) instead, as trained ResNets have; otherwise a
  deep residual network is chaotic and float32 rounding noise grows to the
  size of the test's tolerance. torchvision's ResNet blocks (ResNet,
  ResNeXt, Wide ResNet) are marked here: BasicBlock.bn2, Bottleneck.bn3;
  so are EfficientNet's (v1 and v2) MBConv and FusedMBConv blocks with a
  residual connection: the last BatchNorm of the block.
- Squeeze-and-excitation (torchvision.ops.SqueezeExcitation: EfficientNet,
  RegNet Y, MobileNet v3): its two 1x1 convs are scaled as above, but their
  bias is only the U(-0.2, 0.2) draw. Their input is squeezed to 1x1, so a
  per-channel mean is a mean over the few calibration images: cancelling
  it fits the calibration batch (new images' activations then grow layer
  by layer) and cancels most of each output, which amplifies rounding
  noise. With both of these (the marked branch ends and the SE biases),
  float32 PyTorch on EfficientNet-B0 at 64x64 (e2e pt_efficientnet_b0_64)
  is 2.7e-6 of max|output| from float64 PyTorch, instead of 1.1e-4.
- LayerNorm (elementwise affine): gamma ~ U(0.6, 1.4), beta ~ U(-0.3, 0.3),
  so that the scale and shift are seen and no two channels match (the
  default ones and zeros would also make PyTorch's ONNX export share one
  initializer among all of them).

Forward hooks return the recomputed output, so later layers calibrate on the
final values of earlier ones. Everything is drawn from one torch.Generator.
"""
import torch
from torch import nn
import torch.nn.functional as F

LOGIT_STD = 2.0


def _std(t):
    s = float(t.double().std())
    return s if s > 1e-12 else 1.0


def mark_residual_branches(model):
    """Marks the last BatchNorm of each residual branch of torchvision's
    ResNet blocks and EfficientNet (v1, v2) blocks `residual_branch_end`
    (HPVM's own networks mark theirs)."""
    last = {"BasicBlock": "bn2", "Bottleneck": "bn3"}
    for m in model.modules():
        kind, name = type(m).__module__, type(m).__name__
        if kind == "torchvision.models.resnet" and name in last:
            bn = getattr(m, last[name], None)
            if isinstance(bn, nn.BatchNorm2d):
                bn.residual_branch_end = True
        elif kind == "torchvision.models.efficientnet" and \
                name in ("MBConv", "FusedMBConv") and m.use_res_connect:
            # The branch is m.block; its last BatchNorm is the projection's
            # (or, in a FusedMBConv without expansion, the fused conv's,
            # followed by SiLU).
            bns = [b for b in m.block.modules()
                   if isinstance(b, nn.BatchNorm2d)]
            if bns:
                bns[-1].residual_branch_end = True


def mark_squeeze_excitation(model):
    """Marks the two 1x1 convs of every squeeze-and-excitation block
    (torchvision.ops.SqueezeExcitation: EfficientNet, RegNet Y, MobileNet
    v3) `squeeze_excitation`."""
    for m in model.modules():
        if type(m).__name__ == "SqueezeExcitation" and \
                isinstance(getattr(m, "fc1", None), nn.Conv2d) and \
                isinstance(getattr(m, "fc2", None), nn.Conv2d):
            m.fc1.squeeze_excitation = m.fc2.squeeze_excitation = True


@torch.no_grad()
def randomize(model, calib, seed):
    """Draws every parameter of `model` (eval mode) calibrated on `calib`."""
    gen = torch.Generator().manual_seed(seed)

    def uniform(shape, lo, hi):
        return torch.rand(shape, generator=gen) * (hi - lo) + lo

    dense = [m for m in model.modules()
             if isinstance(m, (nn.Conv2d, nn.Linear))]
    last = dense[-1] if dense else None

    def dense_hook(m, inputs, out):
        m.weight.copy_(torch.randn(m.weight.shape, generator=gen))
        x = inputs[0]
        y = m._conv_forward(x, m.weight, None) if isinstance(
            m, nn.Conv2d) else F.linear(x, m.weight)
        # Per output channel: NCHW for Conv2d; the last axis for Linear,
        # whatever its rank (channel-last [N, H, W, C] in ConvNeXt,
        # [N, tokens, C] in ViT and Swin).
        dims = ([0, 2, 3] if isinstance(m, nn.Conv2d)
                else list(range(y.dim() - 1)))
        mean = y.mean(dim=dims, keepdim=True)
        if m is last:
            scale = LOGIT_STD / _std(y - mean)
        else:
            scale = 1.0 / float(y.double().pow(2).mean().sqrt())
        m.weight.mul_(scale)
        y = y * scale
        if m.bias is not None and getattr(m, "squeeze_excitation", False):
            # The squeezed input is 1x1: its per-channel mean over the
            # batch is a mean of only a few images, and cancelling it would
            # fit the calibration batch and cancel most of the output.
            m.bias.copy_(uniform(m.bias.shape, -0.2, 0.2))
            y = y + m.bias.view(mean.shape)
        elif m.bias is not None:
            shift = uniform(m.bias.shape, -0.2, 0.2)
            m.bias.copy_(shift - (mean * scale).flatten())
            y = y + m.bias.view(mean.shape)
        return y

    def bn_hook(m, inputs, out):
        x = inputs[0]
        dims = [0, 2, 3]
        mean = x.mean(dim=dims)
        var = x.var(dim=dims, unbiased=False)
        m.running_mean.copy_(
            mean + 0.2 * var.sqrt() * torch.randn(mean.shape, generator=gen))
        m.running_var.copy_(var * uniform(var.shape, 0.6, 1.6) + 1e-3)
        if getattr(m, "residual_branch_end", False):
            m.weight.copy_(uniform(m.weight.shape, 0.1, 0.3))
        else:
            m.weight.copy_(uniform(m.weight.shape, 0.6, 1.4))
        m.bias.copy_(uniform(m.bias.shape, -0.3, 0.3))
        return F.batch_norm(x, m.running_mean, m.running_var, m.weight, m.bias,
                            False, 0.0, m.eps)

    def ln_hook(m, inputs, out):
        if m.weight is not None:
            m.weight.copy_(uniform(m.weight.shape, 0.6, 1.4))
        if m.bias is not None:
            m.bias.copy_(uniform(m.bias.shape, -0.3, 0.3))
        return m.forward(*inputs)   # also LayerNorm2d (ConvNeXt's)

    mark_residual_branches(model)
    mark_squeeze_excitation(model)
    handles = []
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            handles.append(m.register_forward_hook(dense_hook))
        elif isinstance(m, nn.BatchNorm2d):
            handles.append(m.register_forward_hook(bn_hook))
        elif isinstance(m, nn.LayerNorm):
            handles.append(m.register_forward_hook(ln_hook))
    model.eval()
    model(calib)
    for h in handles:
        h.remove()
