"""compile - torch2hpvm.compile(): a torch.nn.Module to a scriptable
HPVMModule in one call (export, build, optionally tune, load).

    net = torch2hpvm.compile(model, example, tune=tuneset, test=testset,
                             qos_loss=1.0, budget=500)
    scripted = torch.jit.script(net)     # or inside a pipeline
    torch.jit.save(scripted, "model.pt")
"""
import shutil
import tempfile
from pathlib import Path

import torch
from torch.utils.data import Dataset

from .exporter import ModelExporter
from .runtime import extension_error, load, load_extension


class _Images(Dataset):
    """The images of a tensor N x C x H x W, without labels."""

    def __init__(self, images):
        self.images = images

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i]


def compile(module, example_input, *, tune=None, test=None, qos_loss=1.0,
            budget=None, output_dir=None, batch_size=None, threads=None,
            tools=None, verbose=False, **tune_options):
    """Exports `module` (a torch.nn.Module taking images N x C x H x W),
    builds it against hpvm_rt and returns it as an HPVMModule (scriptable,
    savable) running the fastest configuration within `qos_loss`.

    example_input: images (N x C x H x W, float) of the shape the program
    takes. tune, test: datasets of (image, label) pairs (a BinDataset or any
    torch Dataset); with `tune`, the program is tuned on this machine
    (torch2hpvm-tune, `budget` configurations evaluated, further keywords
    as ModelExporter.tune()'s) and the module runs the fastest
    configuration whose accuracy loss on the tune set is at most `qos_loss`
    percentage points (exact FP32 when none is). Without `tune`, the module
    runs exact FP32. `test` defaults to `tune` (or to the example).

    output_dir: where the export is written and kept (default: a temporary
    directory, removed once the module holds the program). batch_size: the
    program's batch for tuning (default: the export's). threads: the
    module's thread count (default as torch2hpvm.load())."""
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"compile() takes a torch.nn.Module, got "
                        f"{type(module).__name__}")
    if not isinstance(example_input, torch.Tensor) or \
            example_input.dim() != 4 or not example_input.is_floating_point():
        raise ValueError("example_input must be float images N x C x H x W")
    if qos_loss is not None and (isinstance(qos_loss, bool) or not
                                 isinstance(qos_loss, (int, float)) or
                                 not qos_loss >= 0):
        raise ValueError(f"qos_loss must be a number >= 0, got {qos_loss!r}")
    if tune is None and (budget is not None or tune_options):
        raise ValueError("budget and tuning options need a tune set "
                         "(tune=)")
    temporary = output_dir is None
    if temporary and not load_extension():
        raise RuntimeError(f"compile() without output_dir needs torch2hpvm's "
                           f"TorchScript class, which holds the program "
                           f"once its export is removed ("
                           f"{extension_error()}); give output_dir")
    example = _Images(example_input.detach().to(torch.float32).cpu())
    tune_set = tune if tune is not None else example
    test_set = test if test is not None else tune_set
    out = Path(tempfile.mkdtemp(prefix="torch2hpvm-compile-")) / "model" \
        if temporary else Path(output_dir)
    try:
        exporter = ModelExporter(module, tune_set, test_set, out,
                                 tools=tools, verbose=verbose)
        exporter.generate(batch_size=batch_size)
        exporter.compile(out / "build" / exporter.name)
        if tune is None:
            return load(out, exact=True, threads=threads)
        options = dict(tune_options)
        options.setdefault("qos_loss", qos_loss)
        if budget is not None:
            options["budget"] = budget
        if batch_size is not None:
            options.setdefault("batch_size", batch_size)
        confs = exporter.tune(**options)
        return load(out, config_file=confs, qos_loss=qos_loss,
                    threads=threads)
    finally:
        if temporary:
            shutil.rmtree(out.parent, ignore_errors=True)
