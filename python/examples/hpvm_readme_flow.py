"""hpvm_readme_flow - the example of HPVM's torch2hpvm README, re-created
on the Fashion-MNIST LeNet: only the paths, the model class and the shape
differ from HPVM's (AlexNet2 on CIFAR-10 there).

Usage: hpvm_readme_flow.py DATA_DIR OUTPUT_DIR CONF_FILE
  DATA_DIR holds tune_input.bin, tune_labels.bin, test_input.bin,
  test_labels.bin (5000 images each: torch2hpvm-dataset convert
  t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz --split
  tune=5000,test=5000 --scale 1/255 --normalize 0.5,0.5 -o DATA_DIR) and
  weights.pth (the LeNet's state dict; lenet.state_dict_from_onnx() makes
  it from datasets/example/lenet_fashion.onnx); OUTPUT_DIR must not exist.
"""
import sys
from pathlib import Path

import torch
from torch.nn import Module

from lenet import LeNet

# --- HPVM's README example from here on (paths and model changed) ---------
from torch2hpvm import BinDataset, ModelExporter

data_dir = Path(sys.argv[1])
dataset_shape = 5000, 1, 28, 28
tuneset = BinDataset(data_dir / "tune_input.bin", data_dir / "tune_labels.bin", dataset_shape)
testset = BinDataset(data_dir / "test_input.bin", data_dir / "test_labels.bin", dataset_shape)
model: Module = LeNet()
model.load_state_dict(torch.load(data_dir / "weights.pth"))

output_dir = Path(sys.argv[2])
build_dir = output_dir / "build"
target_binary = build_dir / "lenet_fashion"
batch_size = 500
conf_file = sys.argv[3]
exporter = ModelExporter(model, tuneset, testset, output_dir, config_file=conf_file)
exporter.generate(batch_size=batch_size).compile(target_binary, build_dir)
