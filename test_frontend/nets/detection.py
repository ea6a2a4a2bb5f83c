"""detection - the one-stage detectors of the end-to-end tests, written
from their published architectures (no weights are downloaded)."""


def fpn_detector():
    """A RetinaNet-style one-stage detector without its box decoding and
    NMS: a ResNet-18 backbone, torchvision's FeaturePyramidNetwork (1x1
    lateral convs, nearest upsampling to the finer level's size, 3x3 output
    convs) with P6/P7 (LastLevelP6P7), and a head shared by the 5 levels
    (a 2-conv tower, then class logits and box deltas): 10 outputs, the
    raw maps of every level."""
    import torch.nn as nn
    import torchvision
    from torchvision.models.detection.backbone_utils import BackboneWithFPN
    from torchvision.ops.feature_pyramid_network import LastLevelP6P7

    class Detector(nn.Module):
        def __init__(self, anchors=3, classes=5, width=64):
            super().__init__()
            self.body = BackboneWithFPN(
                torchvision.models.resnet18(weights=None),
                {"layer2": "p3", "layer3": "p4", "layer4": "p5"},
                [128, 256, 512], width,
                extra_blocks=LastLevelP6P7(width, width))

            def tower(out):
                return nn.Sequential(
                    nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
                    nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
                    nn.Conv2d(width, out, 3, padding=1))
            self.cls = tower(anchors * classes)
            self.box = tower(anchors * 4)

        def forward(self, x):
            levels = list(self.body(x).values())
            return tuple([self.cls(p) for p in levels] +
                         [self.box(p) for p in levels])

    return Detector()


def _ultralytics_blocks():
    """Ultralytics' common blocks: Conv (conv, batch norm, SiLU; `p` pads,
    k // 2 by default), Bottleneck (a k1 x k1 then a 3x3 Conv, the residual
    when `shortcut`) and SPPF (three 5x5 stride-1 max pools of a 1x1 Conv,
    all concatenated, a 1x1 Conv)."""
    import torch
    import torch.nn as nn

    class Conv(nn.Module):
        def __init__(self, c1, c2, k=1, s=1, p=None):
            super().__init__()
            self.conv = nn.Conv2d(c1, c2, k, s, k // 2 if p is None else p,
                                  bias=False)
            self.bn = nn.BatchNorm2d(c2)
            self.act = nn.SiLU()

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    class Bottleneck(nn.Module):
        def __init__(self, c, shortcut, k1):
            super().__init__()
            self.cv1, self.cv2 = Conv(c, c, k1), Conv(c, c, 3)
            self.add = shortcut

        def forward(self, x):
            y = self.cv2(self.cv1(x))
            return x + y if self.add else y

    class SPPF(nn.Module):
        def __init__(self, c1, c2, k=5):
            super().__init__()
            self.cv1 = Conv(c1, c1 // 2, 1)
            self.cv2 = Conv(c1 // 2 * 4, c2, 1)
            self.m = nn.MaxPool2d(k, 1, k // 2)

        def forward(self, x):
            y = [self.cv1(x)]
            y.extend(self.m(y[-1]) for _ in range(3))
            return self.cv2(torch.cat(y, 1))

    return Conv, Bottleneck, SPPF


def yolov8(classes=3, reg_max=16):
    """YOLOv8 as Ultralytics' yolov8n.yaml lays it out, at a smaller width:
    Conv (conv, batch norm, SiLU) and C2f blocks (a 1x1 conv chunked in
    two, bottlenecks on the second half, all concatenated), SPPF (three 5x5
    max pools), a PAN neck (nearest upsampling, concatenations, strided
    convs) and the Detect head in its exported form: each scale's box
    (4 x reg_max bins) and class maps concatenated and flattened to
    B x (4 * reg_max + classes) x H*W, the scales concatenated along the
    anchors, the box bins decoded by DFL (softmax over the bins of each
    side, their expectation by a fixed 1x1 conv), distances to boxes
    around the anchor points (dist2bbox, xywh) times the strides, and the
    class sigmoids: one output B x (4 + classes) x anchors."""
    import torch
    import torch.nn as nn
    Conv, Bottleneck, SPPF = _ultralytics_blocks()

    class C2f(nn.Module):
        def __init__(self, c1, c2, n=1, shortcut=False):
            super().__init__()
            self.c = c2 // 2
            self.cv1 = Conv(c1, 2 * self.c, 1)
            self.cv2 = Conv((2 + n) * self.c, c2, 1)
            self.m = nn.ModuleList(Bottleneck(self.c, shortcut, 3)
                                   for _ in range(n))

        def forward(self, x):
            y = list(self.cv1(x).chunk(2, 1))
            y.extend(m(y[-1]) for m in self.m)
            return self.cv2(torch.cat(y, 1))

    class DFL(nn.Module):
        def __init__(self, c1):
            super().__init__()
            self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
            self.conv.weight.data[:] = torch.arange(
                c1, dtype=torch.float).view(1, c1, 1, 1)
            self.c1 = c1

        def forward(self, x):
            b, _, a = x.shape
            return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1)
                             .softmax(1)).view(b, 4, a)

    class Detect(nn.Module):
        def __init__(self, ch, strides):
            super().__init__()
            self.no = classes + 4 * reg_max
            c2 = max(16, ch[0] // 4, reg_max * 4)
            c3 = max(ch[0], min(classes, 100))
            self.cv2 = nn.ModuleList(nn.Sequential(
                Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1))
                for x in ch)
            self.cv3 = nn.ModuleList(nn.Sequential(
                Conv(x, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, classes, 1))
                for x in ch)
            self.dfl = DFL(reg_max)
            self.strides = strides

        def anchors(self, feats):
            points, strides = [], []
            for f, s in zip(feats, self.strides):
                h, w = f.shape[2:]
                sx = torch.arange(w, dtype=torch.float32) + 0.5
                sy = torch.arange(h, dtype=torch.float32) + 0.5
                sy, sx = torch.meshgrid(sy, sx, indexing="ij")
                points.append(torch.stack((sx, sy), -1).view(-1, 2))
                strides.append(torch.full((h * w, 1), s))
            return (torch.cat(points).transpose(0, 1),
                    torch.cat(strides).transpose(0, 1))

        def forward(self, feats):
            x = [torch.cat((self.cv2[i](f), self.cv3[i](f)), 1)
                 for i, f in enumerate(feats)]
            b = x[0].shape[0]
            points, strides = self.anchors(x)
            x_cat = torch.cat([xi.view(b, self.no, -1) for xi in x], 2)
            box, cls = x_cat.split((reg_max * 4, classes), 1)
            lt, rb = self.dfl(box).chunk(2, 1)
            a = points.unsqueeze(0)
            x1y1, x2y2 = a - lt, a + rb
            xywh = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1)
            return torch.cat((xywh * strides, cls.sigmoid()), 1)

    class YOLOv8(nn.Module):
        def __init__(self):
            super().__init__()
            self.p3 = nn.Sequential(Conv(3, 16, 3, 2), Conv(16, 32, 3, 2),
                                    C2f(32, 32, 1, True), Conv(32, 64, 3, 2),
                                    C2f(64, 64, 1, True))
            self.p4 = nn.Sequential(Conv(64, 64, 3, 2), C2f(64, 64, 1, True))
            self.p5 = nn.Sequential(Conv(64, 128, 3, 2),
                                    C2f(128, 128, 1, True), SPPF(128, 128))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.top4 = C2f(192, 64)
            self.out3 = C2f(128, 32)
            self.down3 = Conv(32, 32, 3, 2)
            self.out4 = C2f(96, 64)
            self.down4 = Conv(64, 64, 3, 2)
            self.out5 = C2f(192, 128)
            self.detect = Detect((32, 64, 128), (8.0, 16.0, 32.0))

        def forward(self, x):
            p3 = self.p3(x)
            p4 = self.p4(p3)
            p5 = self.p5(p4)
            t4 = self.top4(torch.cat((self.up(p5), p4), 1))
            o3 = self.out3(torch.cat((self.up(t4), p3), 1))
            o4 = self.out4(torch.cat((self.down3(o3), t4), 1))
            o5 = self.out5(torch.cat((self.down4(o4), p5), 1))
            return self.detect([o3, o4, o5])

    return YOLOv8()


def yolov5(classes=3):
    """YOLOv5 (v7.0) as Ultralytics' yolov5n.yaml lays it out, at a smaller
    width: a 6x6 stride-2 stem, C3 blocks (two 1x1 branches, bottlenecks on
    one, concatenated), SPPF, a PAN neck, and the Detect head in its
    exported form: each scale's 1x1 conv viewed as B x 3 x (5 + classes) x
    H x W, permuted to B x 3 x H x W x (5 + classes), its sigmoid split
    into xy, wh and scores, xy decoded around the grid cells and wh by the
    anchors (5-D constants of batch 1), concatenated back and viewed as
    B x 3*H*W x (5 + classes); the scales concatenated along the boxes:
    one output B x boxes x (5 + classes)."""
    import torch
    import torch.nn as nn
    Conv, Bottleneck, SPPF = _ultralytics_blocks()

    class C3(nn.Module):
        def __init__(self, c1, c2, n=1, shortcut=True):
            super().__init__()
            c = c2 // 2
            self.cv1, self.cv2 = Conv(c1, c, 1), Conv(c1, c, 1)
            self.cv3 = Conv(2 * c, c2, 1)
            self.m = nn.Sequential(*(Bottleneck(c, shortcut, 1)
                                     for _ in range(n)))

        def forward(self, x):
            return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))

    anchors = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119),
               (116, 90, 156, 198, 373, 326))

    class Detect(nn.Module):
        def __init__(self, ch, strides):
            super().__init__()
            self.no, self.na = classes + 5, 3
            self.m = nn.ModuleList(nn.Conv2d(c, self.no * self.na, 1)
                                   for c in ch)
            self.strides = strides

        def grids(self, nx, ny, i):
            shape = 1, self.na, ny, nx, 2
            yv, xv = torch.meshgrid(torch.arange(ny, dtype=torch.float32),
                                    torch.arange(nx, dtype=torch.float32),
                                    indexing="ij")
            grid = torch.stack((xv, yv), 2).expand(shape) - 0.5
            wh = torch.tensor(anchors[i], dtype=torch.float32)
            return grid, wh.view(1, self.na, 1, 1, 2).expand(shape)

        def forward(self, feats):
            z = []
            for i, f in enumerate(feats):
                x = self.m[i](f)
                bs, _, ny, nx = x.shape
                x = x.view(bs, self.na, self.no, ny, nx).permute(
                    0, 1, 3, 4, 2).contiguous()
                grid, anchor_grid = self.grids(nx, ny, i)
                xy, wh, conf = x.sigmoid().split((2, 2, classes + 1), 4)
                xy = (xy * 2 + grid) * self.strides[i]
                wh = (wh * 2) ** 2 * anchor_grid
                y = torch.cat((xy, wh, conf), 4)
                z.append(y.view(bs, self.na * nx * ny, self.no))
            return torch.cat(z, 1)

    class YOLOv5(nn.Module):
        def __init__(self):
            super().__init__()
            self.p3 = nn.Sequential(Conv(3, 16, 6, 2, 2), Conv(16, 32, 3, 2),
                                    C3(32, 32, 1), Conv(32, 48, 3, 2),
                                    C3(48, 48, 2))
            self.p4 = nn.Sequential(Conv(48, 64, 3, 2), C3(64, 64, 2))
            self.p5 = nn.Sequential(Conv(64, 96, 3, 2), C3(96, 96, 1),
                                    SPPF(96, 96))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.lat5 = Conv(96, 64, 1)
            self.top4 = C3(128, 64, 1, False)
            self.lat4 = Conv(64, 48, 1)
            self.out3 = C3(96, 48, 1, False)
            self.down3 = Conv(48, 48, 3, 2)
            self.out4 = C3(96, 64, 1, False)
            self.down4 = Conv(64, 64, 3, 2)
            self.out5 = C3(128, 96, 1, False)
            self.detect = Detect((48, 64, 96), (8.0, 16.0, 32.0))

        def forward(self, x):
            p3 = self.p3(x)
            p4 = self.p4(p3)
            h10 = self.lat5(self.p5(p4))
            h14 = self.lat4(self.top4(torch.cat((self.up(h10), p4), 1)))
            o3 = self.out3(torch.cat((self.up(h14), p3), 1))
            o4 = self.out4(torch.cat((self.down3(o3), h14), 1))
            o5 = self.out5(torch.cat((self.down4(o4), h10), 1))
            return self.detect([o3, o4, o5])

    return YOLOv5()
