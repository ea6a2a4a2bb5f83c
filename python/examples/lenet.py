"""lenet - the Fashion-MNIST LeNet shipped as datasets/example/
lenet_fashion.onnx, as a torch.nn.Module (the architecture of
scripts/train_lenet_fashion.py), and its trained weights as a state dict
read from that ONNX file, so that the examples can start where a PyTorch
user starts: a Module and a weights.pth."""
import torch
import torch.nn.functional as F
from torch import nn


class LeNet(nn.Module):
    """conv5x5(16)+tanh+maxpool, conv5x5(32)+tanh+maxpool, FC(128)+tanh,
    FC(10), softmax; input 1 x 28 x 28."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 5, padding=2)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.tanh(self.conv1(x)), 2, 2)
        x = F.max_pool2d(torch.tanh(self.conv2(x)), 2, 2)
        x = torch.flatten(x, 1)
        x = torch.tanh(self.fc1(x))
        return F.softmax(self.fc2(x), dim=1)


def state_dict_from_onnx(path):
    """LeNet's state dict from the initializers of the shipped ONNX export
    (named as the Module's parameters)."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(path))
    return {init.name: torch.from_numpy(numpy_helper.to_array(init).copy())
            for init in model.graph.initializer}
