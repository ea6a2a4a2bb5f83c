"""runtime - torch2hpvm.load(): a built program as a torch.nn.Module that
TorchScript can script, trace, save and load (in Python and C++).

The module holds a torch.classes.torch2hpvm.Program (libtorch2hpvm_torch.so,
built with torch2hpvm against Debian's libtorch): the program's shared
library, its weights, its configuration file and int8 calibration, loaded
into this process from memory. Its forward() calls the class's forward()
(scripted) or the operator torch2hpvm::run(images, program) (traced), so
scripted and traced graphs hold the program itself; called from Python, it
runs the program through torch2hpvm._direct (a few C calls, against
several microseconds for TorchScript's dispatch of a method); torch.jit.save writes it into the saved file, which loads
again (torch.jit.load, or torch::jit::load from C++ with the library
loaded) with nothing else, after the export directory is gone. Outputs are
the program's, bit for bit, at any batch size.

Where libtorch2hpvm_torch.so is not built, load() falls back to a module
that calls the program through ctypes (torch2hpvm._ctypes_module), which
cannot be scripted, saved or pickled, and warns once.
"""
import os
import threading
import warnings
from pathlib import Path
from typing import List

import torch

from ._errors import LibraryError, check_configure, default_threads

EXTENSION_NAME = "libtorch2hpvm_torch.so"
# Set (to anything but 0) to leave the TorchScript class unloaded: load()
# then returns the ctypes module.
NO_EXTENSION_VAR = "TORCH2HPVM_NO_EXTENSION"

_EXTENSION = {"loaded": None, "error": None}
_EXTENSION_LOCK = threading.Lock()


def extension_path():
    """The TorchScript class's library beside the package (a build tree's
    or an installation's), or None when it was not built."""
    path = Path(__file__).resolve().parent / EXTENSION_NAME
    return path if path.is_file() else None


def load_extension():
    """Registers torch.classes.torch2hpvm.Program and torch2hpvm::run in
    this process (once; `import torch2hpvm` does it). Returns True, or
    False when the library is not built or does not load (the reason is
    extension_error())."""
    with _EXTENSION_LOCK:
        if _EXTENSION["loaded"] is None:
            path = extension_path()
            if os.environ.get(NO_EXTENSION_VAR, "") not in ("", "0"):
                _EXTENSION["loaded"] = False
                _EXTENSION["error"] = f"${NO_EXTENSION_VAR} is set"
            elif path is None:
                _EXTENSION["loaded"] = False
                _EXTENSION["error"] = (f"{EXTENSION_NAME} is not beside the "
                                       f"package (build torch2hpvm with "
                                       f"HPVM_TORCH_EXT=ON)")
            else:
                try:
                    torch.ops.load_library(str(path))
                    _EXTENSION["loaded"] = True
                except (OSError, RuntimeError) as e:
                    _EXTENSION["loaded"] = False
                    _EXTENSION["error"] = f"{path} does not load: {e}"
        return _EXTENSION["loaded"]


def extension_error():
    """Why the TorchScript class is not available ("" when it is)."""
    load_extension()
    return _EXTENSION["error"] or ""


_DIRECT = []


def _direct_module():
    """torch2hpvm._direct (DirectCall.cpp, built with the class), or None
    where it is not (the class's methods are called then)."""
    if not _DIRECT:
        try:
            from . import _direct
            # (What nn.Module's call tests before running forward(); where
            # this torch has other names, HPVMModule keeps nn.Module's
            # call.)
            from torch.nn.modules.module import (_global_backward_hooks,
                                                 _global_forward_hooks,
                                                 _global_forward_pre_hooks)
            _direct.set_up(torch.nn.Module, (_global_forward_pre_hooks,
                                             _global_forward_hooks,
                                             _global_backward_hooks))
            HPVMModule.__call__ = _direct.module_call
            _DIRECT.append(_direct)
        except ImportError:
            _DIRECT.append(None)
    return _DIRECT[0]


def _library_error(error):
    """hpvm_rt's message out of TorchScript's wrapping of it."""
    text = str(error)
    return LibraryError(text.split("\nException raised from ")[0])


@torch.jit.unused
def _check_input(x):
    """Python's own message for what TorchScript's types would refuse."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(x).__name__}")


class HPVMModule(torch.nn.Module):
    """A program built by torch2hpvm, run by hpvm_rt in this process (made
    by torch2hpvm.load()). forward(x) takes float32 images N x C x H x W
    (or one C x H x W image) on the CPU and returns the program's output
    with the shape the model declares, images first (N x classes for a
    classifier, N x C x H x W for a segmentation map); a model with several
    graph outputs is an HPVMMultiOutputModule, whose forward returns a list
    of them in the model's order (output_names). It has no parameters and
    no gradient.

    torch.jit.script and torch.jit.trace work on it and on modules holding
    it; torch.jit.save writes the program, its weights and its chosen
    configuration into the saved file; copy.deepcopy and pickle copy it.
    A saved file runs the code of the library it carries: load one only
    from a source you trust as you would a program."""

    __jit_unused_properties__ = ["name", "input_shape", "num_classes",
                                 "output_shapes", "output_names",
                                 "config_description", "threads"]
    # (Python's own: a scripted or saved module has no use for it.)
    __jit_ignored_attributes__ = ["_direct"]
    _ONE = True  # forward returns the one output (not a list)

    def __init__(self, program):
        super().__init__()
        self.program = program
        self._bind()

    def _bind(self):
        """(handle, one output) of the program for torch2hpvm._direct (None
        without it), taken again whenever the program is a new one (copy,
        pickle)."""
        direct = _direct_module()
        self._direct = (None if direct is None else
                        (self.program.handle(), self._ONE))

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_direct", None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._bind()

    # (Where torch2hpvm._direct is built, HPVMModule.__call__ becomes its
    # module_call, which runs the program straight away where nn.Module's
    # call has nothing to do: a plain tensor, no hooks, not tracing. Its
    # Python costs microseconds per call, as much as the rest of a call at
    # batch 1. Anything else, torch.fx's proxies too, goes through it.)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_scripting():
            return self.program.forward_one(x)
        return self._eager(x)

    @torch.jit.unused
    def _eager(self, x):
        """forward() from Python: the output, or the list of outputs."""
        if torch.jit.is_tracing():
            # (The operator, which a trace records: about 15 microseconds
            # more than a method.)
            outs = torch.ops.torch2hpvm.run(x, self.program)
            return outs[0] if self._ONE else outs
        if self._direct is not None:
            direct = _DIRECT[0]
            handle, one = self._direct
            return direct.run_one(handle, x) if one else direct.run(handle, x)
        _check_input(x)
        return (self.program.forward_one(x) if self._ONE else
                self.program.forward(x))

    @torch.jit.export
    def set_threads(self, threads: int) -> None:
        """Runs the model with `threads` threads (0: all cores)."""
        self.program.set_threads(threads)

    @torch.jit.export
    def configuration(self) -> str:
        """What runs: "exact FP32 (no configuration)" or "configuration
        'NAME' of FILE"."""
        return self.program.description()

    @torch.jit.export
    def use_configuration(self, config: str) -> None:
        """Runs configuration block `config` (a name, or a 0-based index as
        text) of the configuration file the module holds."""
        self.program.configure(None, config, None, None, False)

    @torch.jit.export
    def use_qos_loss(self, qos_loss: float) -> None:
        """Runs the fastest configuration recorded within `qos_loss` of the
        file the module holds (exact FP32 when none is)."""
        self.program.configure(None, None, qos_loss, None, False)

    @torch.jit.export
    def last_run_ms(self) -> float:
        """The program's own time of the last batch, in milliseconds: the
        span its --json batch_times_ms reports per batch (the launch and the
        output request), without this call's checks, output tensors and
        freeing. -1 before the first batch."""
        return self.program.last_run_ms()

    # --- Python only ------------------------------------------------------

    @property
    def name(self):
        """The program's name (the exported model's file stem)."""
        return self.program.name()

    @property
    def input_shape(self):
        """Per-image input shape (C, H, W)."""
        return tuple(self.program.input_shape())

    @property
    def output_shapes(self):
        """Per-image shape of each graph output."""
        return [tuple(s) for s in self.program.output_shapes()]

    @property
    def output_names(self):
        """Each graph output's ONNX name."""
        return list(self.program.output_names())

    @property
    def num_classes(self):
        """Values per image of the first output."""
        count = 1
        for d in self.output_shapes[0]:
            count *= d
        return count

    def configure(self, config=None, config_file=None, qos_loss=None,
                  exact=False, calibration=None):
        """Chooses the configuration, as the program's options do:
        config_file (-c; default: the one baked in at export, or the one a
        saved module holds), config (--config: a block's name or 0-based
        index; default the first), qos_loss (--qos-loss: the fastest block
        recorded within that loss, exact FP32 when none is), exact=True (no
        configuration: exact FP32), calibration (--calibration: an int8
        calibration file; default: the configuration file's companion
        <stem>.calib.txt). The files are read now and kept in the module
        (torch.jit.save writes them)."""
        check_configure(config, config_file, qos_loss, exact)
        try:
            self.program.configure(
                None if config_file is None else os.fspath(config_file),
                None if config is None else str(config),
                None if qos_loss is None else float(qos_loss),
                None if calibration is None else os.fspath(calibration),
                bool(exact))
        except RuntimeError as e:
            raise _library_error(e) from None

    @property
    def config_description(self):
        """What runs: "exact FP32 (no configuration)" or "configuration
        'NAME' of FILE"."""
        return self.program.description()

    @property
    def threads(self):
        """Threads the model runs with (0: all cores)."""
        return self.program.threads()

    @threads.setter
    def threads(self, n):
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"threads must be an int, got "
                            f"{type(n).__name__}")
        try:
            self.program.set_threads(n)
        except RuntimeError as e:
            raise _library_error(e) from None

    def extra_repr(self):
        c, h, w = self.input_shape
        shapes = self.output_shapes
        outputs = (f"classes={self.num_classes}"
                   if len(shapes) == 1 and len(shapes[0]) == 1 else
                   "outputs=" + ", ".join(
                       f"{name}: (N, {', '.join(map(str, shape))})"
                       for name, shape in zip(self.output_names, shapes)))
        return (f"name={self.name!r}, input=(N, {c}, {h}, {w}), "
                f"{outputs}, threads={self.threads}, "
                f"{self.config_description}")


class HPVMMultiOutputModule(HPVMModule):
    """An HPVMModule of a model with several graph outputs: forward returns
    the list of them, in the model's order (output_names)."""

    _ONE = False

    def forward(self, x: torch.Tensor) -> List[torch.Tensor]:
        if torch.jit.is_scripting():
            return self.program.forward(x)
        return self._eager(x)


def _program_files(out_dir):
    """The export's directory and its program's shared library."""
    import json
    out = Path(out_dir)
    manifest_path = out / "manifest.json"
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{out} is not a torch2hpvm output directory "
                                f"(no manifest.json)")
    manifest = json.loads(manifest_path.read_text())
    binary = manifest.get("binary") or ""
    if not binary:
        raise FileNotFoundError(f"{out} holds no built program (it was "
                                f"generated without building: compile() it, "
                                f"or run torch2hpvm-export without "
                                f"--no-build)")
    binary = out / binary
    library = binary.parent / f"lib{binary.name}.so"
    if not library.is_file():
        if manifest.get("toolchain") == "hpvm":
            raise FileNotFoundError(f"{library} not found: the program was "
                                    f"built with toolchain 'hpvm' "
                                    f"(hpvm-clang), which makes no shared "
                                    f"library; export with toolchain "
                                    f"'clang'")
        raise FileNotFoundError(f"{library} not found (re-export the model "
                                f"with this torch2hpvm to build it)")
    return out.absolute(), library


_WARNED = []


def load(out_dir, config=None, *, config_file=None, qos_loss=None,
         exact=False, threads=None, calibration=None):
    """The program exported and built in `out_dir` (by ModelExporter or
    torch2hpvm-export) as an HPVMModule run by hpvm_rt (an
    HPVMMultiOutputModule for a model with several outputs).

    config: a configuration block (name or 0-based index) of config_file
    (default: the configuration file baked in at export; without one, exact
    FP32), as the program's --config; qos_loss, exact, calibration: see
    HPVMModule.configure(). threads: 0 for all cores (default:
    $HPVM_NUM_THREADS, else all cores); settable later as
    module.threads."""
    out, library = _program_files(out_dir)
    threads = default_threads(threads)
    if not load_extension():
        if not _WARNED:
            _WARNED.append(True)
            warnings.warn(f"torch2hpvm: the TorchScript class is not "
                          f"available ({extension_error()}); load() returns "
                          f"a module that runs through ctypes and cannot be "
                          f"scripted, saved or pickled", stacklevel=2)
        from ._ctypes_module import CtypesModule
        return CtypesModule(out, library, config=config,
                            config_file=config_file, qos_loss=qos_loss,
                            exact=exact, threads=threads,
                            calibration=calibration)
    try:
        program = torch.classes.torch2hpvm.Program(str(out), str(library))
    except RuntimeError as e:
        raise _library_error(e) from None
    kind = (HPVMModule if len(program.output_shapes()) == 1 else
            HPVMMultiOutputModule)
    module = kind(program)
    if (config is not None or config_file is not None or
            qos_loss is not None or exact or calibration is not None):
        module.configure(config=config, config_file=config_file,
                         qos_loss=qos_loss, exact=exact,
                         calibration=calibration)
    module.threads = threads
    return module
