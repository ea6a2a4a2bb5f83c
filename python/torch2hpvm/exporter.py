"""exporter - ModelExporter: HPVM's Python API for torch2hpvm-export.

ModelExporter(model, tune_dataset, test_dataset, output_dir, target,
opset, config_file) checks its arguments and exports a torch.nn.Module to
ONNX, generate() writes the HPVM-C program, its weights, datasets and
metadata into output_dir, compile() builds it; both run torch2hpvm-export.
"""
import io
import json
import os
import shutil
import tempfile
import weakref
from pathlib import Path

import torch

from . import _tools
from .datasets import BinDataset, dataset_shape, is_dataset, write_bin

# HPVM's targets; hpvm_cudnn is HPVM's cuDNN backend of the same HPVM-C.
TARGETS = ("hpvm_tensor", "hpvm_tensor_inspect", "hpvm_cudnn", "tensor")
TOOLCHAINS = ("clang", "hpvm")

# The opset a torch.nn.Module is exported at when `opset` is not given.
DEFAULT_TORCH_OPSET = 13


class ModelExporter:
    """Exports `model` (a torch.nn.Module, an onnx.ModelProto or the path of
    an .onnx/.onnxtxt file) with its tune and test sets (BinDatasets, or
    any torch Dataset of (image, label) pairs or of bare images) to
    `output_dir`, as HPVM's ModelExporter does.

    target: "hpvm_tensor" (default), "hpvm_tensor_inspect" (a program that
    serves HPVM's tuner protocol), "hpvm_cudnn" (HPVM's cuDNN backend: the
    same HPVM-C, run here by hpvm_rt on the CPU) or "tensor" (direct
    runtime calls). opset: the ONNX opset (a Module is exported at it,
    default 13; an ONNX model is converted to it). config_file: the
    approximation configuration baked in as the program's default (HPVM's
    tuner_confs.txt format); optional here. As HPVM's, it is read when the
    program runs: a file that exists now is baked in (copied); an empty
    path (output_dir/tuner_confs.txt) or one that does not exist yet is
    recorded, and the program runs exact FP32 while it does not exist.

    torch2hpvm-export's options, as keywords: toolchain ("clang", default,
    or "hpvm"), max_size (bytes, or a string such as "2GB"), force
    (regenerate over hand edits, keeping them as FILE.orig), template_dir,
    cxx, cmake, name (the program's name; default: output_dir's name),
    tools (where the C++ tools are; see torch2hpvm.find_tool) and verbose
    (print the tools' commands and output).
    """

    tuneset_name = ("tune_input.bin", "tune_labels.bin")
    testset_name = ("test_input.bin", "test_labels.bin")
    weight_dir_name = "weights"
    source_file_name = "hpvm_c.cpp"
    metadata_file_name = "ops.json"
    config_file_name = "tuner_confs.txt"
    fifo_file_name_r = "hpvm_fifo_r"
    fifo_file_name_w = "hpvm_fifo_w"

    def __init__(self, model, tune_dataset, test_dataset, output_dir,
                 target="hpvm_tensor", opset=None, config_file=None, *,
                 toolchain="clang", max_size=None, force=False,
                 template_dir=None, cxx=None, cmake=None, name=None,
                 tools=None, verbose=False):
        if target not in TARGETS:
            raise ValueError(f"Target {target} not recognized (use one of "
                             f"{', '.join(TARGETS)})")
        if toolchain not in TOOLCHAINS:
            raise ValueError(f"toolchain must be 'clang' or 'hpvm', got "
                             f"{toolchain!r}")
        if target == "hpvm_cudnn" and toolchain == "hpvm":
            raise ValueError("target hpvm_cudnn with toolchain 'hpvm' needs "
                             "hpvm-clang -t cudnn, which torch2hpvm-export "
                             "does not run; use toolchain 'clang' (hpvm_rt "
                             "runs the program on the CPU)")
        if opset is not None and (not isinstance(opset, int) or
                                  isinstance(opset, bool) or opset < 1):
            raise ValueError(f"opset must be a positive integer, got "
                             f"{opset!r}")
        self.target = target
        self.opset = opset
        self.toolchain = toolchain
        self.max_size = max_size
        self.force = force
        self.template_dir = template_dir
        self.cxx = cxx
        self.cmake = cmake
        self.tools = tools
        self.verbose = verbose

        self.tune_dataset, self.test_dataset = tune_dataset, test_dataset
        self.dataset_shape = self._check_datasets(tune_dataset, test_dataset)
        self.dataset_size = self.dataset_shape[0]

        self.output_dir = Path(output_dir).absolute()
        self._check_output_dir(self.output_dir)
        self.name = name if name is not None else self.output_dir.name
        if not self.name:
            raise ValueError(f"cannot name the program after {output_dir}; "
                             f"give name=")

        # (hpvm_tensor_inspect without one: the program reads
        # output_dir/tuner_confs.txt, which HPVM's tuner writes.)
        # As HPVM's, config_file is read when the program runs: an existing
        # file is baked in now (copied to output_dir/tuner_confs.txt); an
        # empty path (the program's own output_dir/tuner_confs.txt) or one
        # that does not exist yet is recorded and read at run time.
        self.config_at_run = None
        if config_file is not None:
            if os.fspath(config_file) == "":
                self.config_at_run = self.output_dir / self.config_file_name
                config_file = None
            else:
                config_file = Path(config_file).absolute()
                if config_file.is_dir():
                    raise ValueError(f"Config file {config_file} is a "
                                     f"directory")
                if not config_file.exists():
                    self.config_at_run, config_file = config_file, None
        self.config_file = config_file

        self._from_torch = isinstance(model, torch.nn.Module)
        self._model_bytes, self._model_suffix = self._load_model(model)
        self._staging = None
        self._export_args = None
        self._batch_size = None
        self.output_code_file = self.output_dir / self.source_file_name
        self.binary = None

    # --- Checks -------------------------------------------------------------

    @staticmethod
    def _check_datasets(tune_dataset, test_dataset):
        for what, ds in (("tune", tune_dataset), ("test", test_dataset)):
            if not is_dataset(ds):
                raise TypeError(f"Cannot accept {what} dataset of type "
                                f"{type(ds).__name__} (a BinDataset or a "
                                f"torch.utils.data.Dataset)")
        tune_shape = dataset_shape(tune_dataset)
        test_shape = dataset_shape(test_dataset)
        if tune_shape[1:] != test_shape[1:]:
            raise ValueError(f"Tune and test images differ in shape: "
                             f"{tune_shape[1:]} and {test_shape[1:]}")
        return tune_shape

    @staticmethod
    def _check_output_dir(out):
        if out.exists():
            if not out.is_dir():
                raise FileExistsError(f"{out} exists and is not a directory")
            if any(out.iterdir()) and not (out / "manifest.json").is_file():
                raise FileExistsError(
                    f"{out} exists and is not a torch2hpvm output directory "
                    f"(it has no manifest.json); give a new or empty "
                    f"directory")

    def _load_model(self, model):
        """The ONNX bytes to export and their file suffix."""
        if isinstance(model, torch.nn.Module):
            return self._torch_to_onnx(model), ".onnx"
        try:
            import onnx
        except ImportError:  # pragma: no cover - onnx is a dependency
            onnx = None
        if onnx is not None and isinstance(model, onnx.ModelProto):
            return model.SerializeToString(), ".onnx"
        if isinstance(model, (str, os.PathLike)):
            path = Path(model)
            if path.suffix not in (".onnx", ".onnxtxt"):
                raise ValueError(f"Cannot accept model file {path}: expected "
                                 f".onnx or .onnxtxt")
            if not path.is_file():
                raise FileNotFoundError(f"Model file {path} not found")
            return path.read_bytes(), path.suffix
        raise ValueError(f"Cannot accept model of type {type(model)}")

    def _torch_to_onnx(self, model):
        """Exports `model` as HPVM does: a random 1 x C x H x W sample,
        input "input", output "output", eval mode (batch norm kept), no
        constant folding; at `opset` (default 13)."""
        sample = torch.rand((1,) + tuple(self.dataset_shape[1:]))
        buf = io.BytesIO()
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                torch.onnx.export(
                    model, (sample,), buf,
                    opset_version=self.opset or DEFAULT_TORCH_OPSET,
                    input_names=["input"], output_names=["output"],
                    training=torch.onnx.TrainingMode.PRESERVE,
                    do_constant_folding=False)
        finally:
            model.train(was_training)
        return buf.getvalue()

    # --- generate / compile -------------------------------------------------

    def _stage(self):
        """Writes the model and the non-BinDataset datasets to a private
        temporary directory (kept until the exporter is deleted); returns
        torch2hpvm-export's arguments."""
        if self._export_args is not None:
            return self._export_args
        self._staging = tempfile.mkdtemp(prefix="torch2hpvm-")
        weakref.finalize(self, shutil.rmtree, self._staging, True)
        staging = Path(self._staging)
        model_path = staging / (self.name + self._model_suffix)
        model_path.write_bytes(self._model_bytes)
        args = [model_path]
        chw = self.dataset_shape[1:]
        labelled = 0
        for option, ds, (input_name, labels_name) in (
                ("tune", self.tune_dataset, self.tuneset_name),
                ("test", self.test_dataset, self.testset_name)):
            if isinstance(ds, BinDataset):
                inputs, labels = ds.input_file, ds.labels_file
            else:
                inputs, labels = staging / input_name, staging / labels_name
                if not write_bin(ds, inputs, labels, chw)[1]:
                    labels = None
            args += [f"--{option}", Path(inputs).absolute()]
            if labels is not None:
                args += [f"--{option}-labels", Path(labels).absolute()]
                labelled += 1
        if not labelled:
            args.append("--no-labels")
        args += ["-o", self.output_dir]
        target = "hpvm_tensor" if self.target == "hpvm_cudnn" else self.target
        args += ["--target", target, "--toolchain", self.toolchain]
        if self.config_file is not None:
            args += ["--config", self.config_file]
        elif self.config_at_run is not None:
            args += ["--config-at-run", self.config_at_run]
        if self.opset is not None and not self._from_torch:
            args += ["--opset", str(self.opset)]
        if self.max_size is not None:
            args += ["--max-size", str(self.max_size)]
        if self.force:
            args.append("--force")
        if self.template_dir is not None:
            args += ["--template-dir", Path(self.template_dir).absolute()]
        if self.cxx is not None:
            args += ["--cxx", self.cxx]
        if self.cmake is not None:
            args += ["--cmake", self.cmake]
        self._export_args = args
        return args

    def _export(self, extra):
        args = self._stage() + extra
        if self._batch_size is not None:
            args += ["--batch-size", str(self._batch_size)]
        _tools.run_tool("torch2hpvm-export", args, tools=self.tools,
                        verbose=self.verbose)

    def generate(self, output_code_file=None, batch_size=None):
        """Writes the HPVM-C program (output_dir/hpvm_c.cpp, also copied to
        `output_code_file` when given), weights, datasets, ops.json and
        CMakeLists.txt; the program runs `batch_size` images per batch
        (default: the whole set in one batch, as HPVM). Returns self."""
        if batch_size is not None and (not isinstance(batch_size, int) or
                                       isinstance(batch_size, bool) or
                                       batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer, got "
                             f"{batch_size!r}")
        self._batch_size = batch_size
        self._export(["--no-build"])
        source = self.output_dir / self.source_file_name
        if output_code_file is not None:
            target = Path(output_code_file).absolute()
            if target != source:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
            self.output_code_file = target
        return self

    def compile(self, output_binary, working_dir=None):
        """Builds the program generated by generate() against hpvm_rt: the
        executable output_dir/build/<name> and its shared library (for
        torch2hpvm.load()). `output_binary` becomes a symbolic link to the
        executable when it names another path (the program finds its files
        relative to where it really is). `working_dir` (HPVM's directory
        for hpvm-clang's intermediate files) is created if missing; the
        build itself always runs in output_dir/build. Returns self."""
        if self._export_args is None:
            raise RuntimeError("compile() needs generate() first")
        if working_dir is not None:
            Path(working_dir).mkdir(parents=True, exist_ok=True)
        self._export([])
        manifest = json.loads(
            (self.output_dir / "manifest.json").read_text())
        built = self.output_dir / manifest["binary"]
        wanted = Path(output_binary).absolute()
        if wanted != built:
            wanted.parent.mkdir(parents=True, exist_ok=True)
            if wanted.is_symlink() or wanted.is_file():
                wanted.unlink()
            elif wanted.exists():
                raise FileExistsError(f"{wanted} exists and is not a file")
            wanted.symlink_to(built)
        self.binary = built
        return self

    # --- Beyond HPVM's API ----------------------------------------------------

    def tune(self, **options):
        """Tunes the compiled program on this machine (torch2hpvm-tune):
        writes output_dir/tuner_confs.txt, tuning.json and the plot.
        Keywords are tune-search's options with '_' for '-': qos_loss=[1,
        2, 3] (or "1,2,3"), budget=2000, batch_size=100, threads=2,
        empirical=True, ... (see `<program> tune-search --help`). Returns
        the path of the configuration file written."""
        if self.binary is None:
            raise RuntimeError("tune() needs compile() first")
        _tools.run_tool("torch2hpvm-tune",
                        [self.output_dir] + option_words(options),
                        tools=self.tools, verbose=self.verbose)
        return self.output_dir / self.config_file_name


def option_words(options):
    """Command-line words for keyword options: flag=True -> --flag, False or
    None -> nothing, a list -> comma-separated, anything else -> its str."""
    words = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            words.append(flag)
        elif isinstance(value, (list, tuple)):
            words += [flag, ",".join(str(v) for v in value)]
        else:
            words += [flag, os.fspath(value) if isinstance(
                value, os.PathLike) else str(value)]
    return words
