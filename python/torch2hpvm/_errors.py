"""_errors - the package's own exception type, and the argument checks
both kinds of loaded module (runtime.HPVMModule, the ctypes fallback)
share."""
import os


class LibraryError(RuntimeError):
    """hpvm_rt refused or failed a call; str() is its message."""


def check_configure(config, config_file, qos_loss, exact):
    """Raises for configure() arguments that contradict each other or have
    the wrong type."""
    if exact and (config is not None or config_file is not None or
                  qos_loss is not None):
        raise ValueError("exact=True excludes config, config_file and "
                         "qos_loss")
    if config is not None and qos_loss is not None:
        raise ValueError("config and qos_loss exclude each other")
    if isinstance(config, bool) or (
            config is not None and not isinstance(config, (str, int))):
        raise TypeError(f"config must be a configuration's name (str) or "
                        f"index (int), got {type(config).__name__}")
    if isinstance(config, int) and config < 0:
        raise ValueError(f"config index must be >= 0, got {config}")
    if qos_loss is not None and (
            isinstance(qos_loss, bool) or
            not isinstance(qos_loss, (int, float)) or not qos_loss >= 0):
        raise ValueError(f"qos_loss must be a number >= 0, got "
                         f"{qos_loss!r}")


def default_threads(threads):
    """`threads`, or without one $HPVM_NUM_THREADS, else 0 (all cores)."""
    if threads is None:
        env = os.environ.get("HPVM_NUM_THREADS", "")
        if env and not env.isdigit():
            raise ValueError(f"HPVM_NUM_THREADS='{env}': expected an "
                             f"integer from 0 to 1024")
        threads = int(env) if env else 0
    return threads
