"""torch2hpvm - HPVM's Python API over torch2hpvm's C++ tools, and the
compiled model back in PyTorch.

    from torch2hpvm import BinDataset, ModelExporter
    tuneset = BinDataset(data / "tune_input.bin", data / "tune_labels.bin",
                         (5000, 1, 28, 28))
    testset = BinDataset(data / "test_input.bin", data / "test_labels.bin",
                         (5000, 1, 28, 28))
    exporter = ModelExporter(model, tuneset, testset, out_dir,
                             config_file=conf_file)
    exporter.generate(batch_size=500).compile(out_dir / "build" / "lenet")

    net = torch2hpvm.load(out_dir)          # a torch.nn.Module
    with torch.no_grad():
        scores = net(images)                # run by hpvm_rt

The C++ tools are found as torch2hpvm.find_tool() says: an explicit
`tools=` directory, $TORCH2HPVM_BUILD, the installation the package belongs
to, then PATH.
"""
from ._tools import ENV_VAR, ToolError, find_tool, run_tool
from .datasets import BinDataset
from .exporter import ModelExporter
from ._errors import LibraryError
from .compile import compile
from .runtime import (HPVMModule, HPVMMultiOutputModule, extension_error,
                      load, load_extension)

__all__ = ["BinDataset", "ModelExporter", "load", "HPVMModule",
           "HPVMMultiOutputModule", "ToolError", "LibraryError", "find_tool",
           "run_tool", "ENV_VAR", "load_extension", "extension_error",
           "compile"]
__version__ = "0.1.0"

# torch.classes.torch2hpvm.Program, so that torch.jit.load() of a saved
# module works once the package is imported.
load_extension()
