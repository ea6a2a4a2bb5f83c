"""_ctypes_module - the fallback of torch2hpvm.load() where the TorchScript
class (libtorch2hpvm_torch.so) is not built: a built program as a
torch.nn.Module that calls its shared library through ctypes.

The module runs the generated HPVM-C through hpvm_rt, in this process: the
program's shared library (OUT/build/lib<program>.so, built with the
program) is loaded with ctypes and called through the C entry points of
hpvm_rt/Library.h. Its outputs are the program's, bit for bit, at any
batch size. Unlike torch2hpvm.HPVMModule, it cannot be scripted, saved or
pickled.
"""
import ctypes
import json
import os
import shutil
import tempfile
import threading
import weakref
from pathlib import Path

import torch

from ._errors import LibraryError, check_configure, default_threads

# The versions of hpvm_rt/Library.h this module speaks (3 added a function
# it does not call).
LIBRARY_VERSIONS = (2, 3)


def _bind(lib):
    c_model = ctypes.c_void_p
    signatures = {
        "hpvm_rt_library_version": (ctypes.c_int, []),
        "hpvm_rt_model_name": (ctypes.c_char_p, []),
        "hpvm_rt_model_shape": (None, [ctypes.POINTER(ctypes.c_int64)] * 4),
        "hpvm_rt_model_outputs": (ctypes.c_int, []),
        "hpvm_rt_model_output": (ctypes.c_int, [
            ctypes.c_int, ctypes.POINTER(ctypes.c_int64)]),
        "hpvm_rt_model_output_name": (ctypes.c_char_p, [ctypes.c_int]),
        "hpvm_rt_run_outputs": (ctypes.c_int, [c_model, ctypes.c_void_p,
                                               ctypes.c_int64,
                                               ctypes.c_void_p]),
        "hpvm_rt_open": (c_model, [ctypes.c_char_p]),
        "hpvm_rt_set_config": (ctypes.c_int, [c_model, ctypes.c_char_p,
                                              ctypes.c_char_p,
                                              ctypes.c_double,
                                              ctypes.c_char_p]),
        "hpvm_rt_config_description": (ctypes.c_char_p, [c_model]),
        "hpvm_rt_set_threads": (ctypes.c_int, [c_model, ctypes.c_int]),
        "hpvm_rt_run": (ctypes.c_int, [c_model, ctypes.c_void_p,
                                       ctypes.c_int64, ctypes.c_void_p]),
        "hpvm_rt_close": (None, [c_model]),
        "hpvm_rt_last_error": (ctypes.c_char_p, []),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    # (Libraries built before it was added lack it.)
    if hasattr(lib, "hpvm_rt_last_run_seconds"):
        lib.hpvm_rt_last_run_seconds.restype = ctypes.c_double
        lib.hpvm_rt_last_run_seconds.argtypes = [c_model]
    return lib


def _open_private(path):
    """Loads the library at `path` through a private copy, so that every
    load() gets a runtime of its own (its weights, configuration, threads)
    and a rebuilt library is never mistaken for one already loaded. The
    copy is unlinked at once; the mapping stays. Falls back to `path` when
    the temporary directory does not allow executable mappings."""
    fd, copy = tempfile.mkstemp(prefix="torch2hpvm-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
            shutil.copyfileobj(src, out)
        try:
            return ctypes.CDLL(copy)
        except OSError:
            return ctypes.CDLL(str(path))
    finally:
        os.unlink(copy)


def _text(value):
    return None if value is None else os.fsencode(os.fspath(value))


class CtypesModule(torch.nn.Module):
    """A program built by torch2hpvm, run by hpvm_rt in this process (made
    by torch2hpvm.load() where the TorchScript class is not built).
    forward(x) takes float32 images N x C x H x W
    (or one C x H x W image) on the CPU and returns the program's output
    with the shape the model declares, images first (N x classes for a
    classifier, N x C x H x W for a segmentation map); a model with several
    graph outputs returns a tuple of them, in the model's order
    (output_names). It has no parameters and no gradient."""

    def __init__(self, out_dir, library, config=None, config_file=None,
                 qos_loss=None, exact=False, threads=None, calibration=None):
        super().__init__()
        self.out_dir = Path(out_dir).absolute()
        self.library_path = Path(library)
        self._lib = _bind(_open_private(self.library_path))
        version = self._lib.hpvm_rt_library_version()
        if version not in LIBRARY_VERSIONS:
            raise LibraryError(f"{library}: hpvm_rt library version "
                               f"{version}; this torch2hpvm speaks "
                               f"{LIBRARY_VERSIONS[-1]} (re-export the "
                               f"model)")
        dims = [ctypes.c_int64() for _ in range(4)]
        self._lib.hpvm_rt_model_shape(*[ctypes.byref(d) for d in dims])
        self.input_shape = tuple(d.value for d in dims[:3])
        self.num_classes = dims[3].value
        self.output_shapes = []
        self.output_names = []
        for k in range(self._lib.hpvm_rt_model_outputs()):
            out_dims = (ctypes.c_int64 * 3)()
            rank = self._lib.hpvm_rt_model_output(k, out_dims)
            self.output_shapes.append(tuple(out_dims[:rank]))
            self.output_names.append(
                self._lib.hpvm_rt_model_output_name(k).decode())
        self.name = self._lib.hpvm_rt_model_name().decode()
        self._lock = threading.Lock()
        self._handle = None
        handle = self._lib.hpvm_rt_open(_text(self.out_dir))
        if not handle:
            raise LibraryError(self._error())
        self._handle = handle
        self._threads = None
        self.configure(config=config, config_file=config_file,
                       qos_loss=qos_loss, exact=exact,
                       calibration=calibration)
        self.threads = default_threads(threads)

    def _error(self):
        return self._lib.hpvm_rt_last_error().decode(errors="replace")

    def _check(self, status):
        if status != 0:
            raise LibraryError(self._error())

    def configure(self, config=None, config_file=None, qos_loss=None,
                  exact=False, calibration=None):
        """Chooses the configuration, as the program's options do:
        config_file (-c; default: the one baked in at export), config
        (--config: a block's name or 0-based index; default the first),
        qos_loss (--qos-loss: the fastest block recorded within that loss,
        exact FP32 when none is), exact=True (no configuration: exact
        FP32), calibration (--calibration: an int8 calibration file;
        default: the configuration file's companion <stem>.calib.txt)."""
        check_configure(config, config_file, qos_loss, exact)
        file_arg = b"" if exact else _text(config_file)
        selector = None if config is None else str(config).encode()
        loss = -1.0 if qos_loss is None else float(qos_loss)
        with self._lock:
            self._check(self._lib.hpvm_rt_set_config(
                self._handle, file_arg, selector, loss, _text(calibration)))

    @property
    def config_description(self):
        """What runs: "exact FP32 (no configuration)" or "configuration
        'NAME' of FILE"."""
        return self._lib.hpvm_rt_config_description(self._handle).decode()

    @property
    def threads(self):
        """Threads the model runs with (0: all cores)."""
        return self._threads

    @threads.setter
    def threads(self, n):
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"threads must be an int, got "
                            f"{type(n).__name__}")
        with self._lock:
            self._check(self._lib.hpvm_rt_set_threads(self._handle, n))
        self._threads = n

    def forward(self, x):
        if torch.jit.is_tracing():
            return _traced_run(self, x)
        return self._run(x)

    def _run(self, x):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"expected a torch.Tensor, got "
                            f"{type(x).__name__}")
        if x.device.type != "cpu":
            raise ValueError(f"expected a CPU tensor, got one on {x.device} "
                             f"(hpvm_rt runs on the CPU)")
        if not x.is_floating_point():
            raise TypeError(f"expected floating-point images, got dtype "
                            f"{x.dtype}")
        single = x.dim() == 3
        images = x.unsqueeze(0) if single else x
        if images.dim() != 4 or tuple(images.shape[1:]) != self.input_shape:
            c, h, w = self.input_shape
            raise ValueError(f"expected images of shape (N, {c}, {h}, {w}) "
                             f"or ({c}, {h}, {w}), got {tuple(x.shape)}")
        images = images.detach().to(torch.float32).contiguous()
        n = images.shape[0]
        outs = [torch.empty((n,) + shape, dtype=torch.float32)
                for shape in self.output_shapes]
        if n:
            pointers = (ctypes.c_void_p * len(outs))(
                *[o.data_ptr() for o in outs])
            with self._lock:
                status = self._lib.hpvm_rt_run_outputs(
                    self._handle, images.data_ptr(), n, pointers)
            self._check(status)
        if single:
            outs = [o[0] for o in outs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def last_run_ms(self):
        """The program's own time of the last batch, in milliseconds (the
        span of its --json batch_times_ms); -1 before the first batch or
        with a library too old to say."""
        if not hasattr(self._lib, "hpvm_rt_last_run_seconds"):
            return -1.0
        seconds = self._lib.hpvm_rt_last_run_seconds(self._handle)
        return seconds * 1e3 if seconds >= 0 else -1.0

    def extra_repr(self):
        c, h, w = self.input_shape
        outputs = (f"classes={self.num_classes}"
                   if len(self.output_shapes) == 1 and
                   len(self.output_shapes[0]) == 1 else
                   "outputs=" + ", ".join(
                       f"{name}: (N, {', '.join(map(str, shape))})"
                       for name, shape in zip(self.output_names,
                                              self.output_shapes)))
        return (f"name={self.name!r}, input=(N, {c}, {h}, {w}), "
                f"{outputs}, threads={self.threads}, "
                f"{self.config_description}")

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.hpvm_rt_close(handle)
            self._handle = None

    def __getstate__(self):
        raise TypeError("a CtypesModule holds a loaded native library and "
                        "cannot be pickled (build torch2hpvm's TorchScript "
                        "class for a module that can); call "
                        "torch2hpvm.load() again "
                        "in the other process")


# torch.jit.trace records torch operators only: the run is one operator,
# torch2hpvm_ctypes::run(images, module id), so that a traced graph calls hpvm_rt
# on its real input instead of freezing one output as a constant.
_MODULES = weakref.WeakValueDictionary()
_MODULES_LOCK = threading.Lock()
_LIBRARY = None


def _register_op():
    global _LIBRARY
    if _LIBRARY is not None:
        return
    lib = torch.library.Library("torch2hpvm_ctypes", "DEF")
    lib.define("run(Tensor images, int module) -> Tensor")
    lib.define("run_outputs(Tensor images, int module) -> Tensor[]")

    def target(op, module):
        with _MODULES_LOCK:
            found = _MODULES.get(module)
        if found is None:
            raise RuntimeError(f"torch2hpvm_ctypes::{op}: module {module} is not "
                               f"loaded in this process")
        return found

    lib.impl("run", lambda images, module:
             target("run", module)._run(images), "CPU")
    lib.impl("run_outputs", lambda images, module:
             list(target("run_outputs", module)._run(images)), "CPU")
    _LIBRARY = lib


def _traced_run(module, x):
    _register_op()
    key = id(module)
    with _MODULES_LOCK:
        _MODULES[key] = module
    if len(module.output_shapes) == 1:
        return torch.ops.torch2hpvm_ctypes.run(x, key)
    return tuple(torch.ops.torch2hpvm_ctypes.run_outputs(x, key))
