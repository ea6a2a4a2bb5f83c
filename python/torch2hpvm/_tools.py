"""_tools - finding and running torch2hpvm's C++ tools (torch2hpvm-export,
torch2hpvm-tune, torch2hpvm-dataset) for the Python package.

Where a tool is looked for, first match wins:
  1. the `tools` argument of the call (a directory holding the tools, or a
     torch2hpvm build tree);
  2. the environment variable TORCH2HPVM_BUILD (the same);
  3. where the package was installed or built with them (_location.py,
     written by CMake next to an installed or build-tree copy);
  4. PATH.
"""
import os
import shutil
import subprocess
from pathlib import Path

# Where each tool sits in a build tree, relative to its top.
_BUILD_TREE = {
    "torch2hpvm-export": "frontend",
    "torch2hpvm-tune": "frontend",
    "torch2hpvm-dataset": "datasets",
}

ENV_VAR = "TORCH2HPVM_BUILD"


class ToolError(RuntimeError):
    """A torch2hpvm tool failed. `tool` is its name, `command` the argument
    list it ran with, `returncode` its exit status (1: bad model, options or
    datasets; 2: toolchain failure; 3: a regeneration left conflicts) and
    `stderr`/`stdout` what it printed. str() is the tool's own message."""

    def __init__(self, tool, command, returncode, stderr, stdout=""):
        self.tool = tool
        self.command = list(command)
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout
        message = stderr.strip() or stdout.strip() or "(no message)"
        super().__init__(f"{tool} failed (exit status {returncode}):\n"
                         f"{message}")


def _packaged_dirs():
    """The tool directories recorded in _location.py (install or build
    tree), absolute; empty when the package runs from its source tree."""
    try:
        from . import _location
    except ImportError:
        return []
    here = Path(__file__).resolve().parent
    return [str((here / d).resolve()) for d in _location.TOOL_DIRS]


def _candidates(name, directory):
    sub = _BUILD_TREE.get(name)
    yield os.path.join(directory, name)
    if sub:
        yield os.path.join(directory, sub, name)


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_tool(name, tools=None):
    """The path of C++ tool `name` (see the module's docstring for the
    order). Raises FileNotFoundError saying where it looked."""
    tried = []
    explicit = [("the tools argument", tools)] if tools is not None else []
    env = os.environ.get(ENV_VAR)
    if env:
        explicit.append((f"${ENV_VAR}", env))
    for origin, directory in explicit:
        directory = os.fspath(directory)
        for path in _candidates(name, directory):
            if _executable(path):
                return os.path.abspath(path)
        # An explicit place that lacks the tool is an error, not a reason
        # to run some other build's tool.
        raise FileNotFoundError(
            f"{name} is not in {directory} ({origin}): give a torch2hpvm "
            f"build tree (with {_BUILD_TREE.get(name, '.')}/{name}) or a "
            f"directory holding the tools")
    for directory in _packaged_dirs():
        for path in _candidates(name, directory):
            if _executable(path):
                return path
        tried.append(f"{directory} (where the package was installed)")
    found = shutil.which(name)
    if found:
        return found
    tried.append("PATH")
    raise FileNotFoundError(
        f"{name} was not found; looked in: {', '.join(tried)}. Install "
        f"torch2hpvm (cmake --install), or set {ENV_VAR} to its build tree")


def run_tool(name, args, tools=None, verbose=False, cwd=None):
    """Runs tool `name` with `args`; returns its CompletedProcess. A nonzero
    exit raises ToolError with the tool's message. With `verbose`, the
    command and the tool's output are printed."""
    command = [find_tool(name, tools)] + [os.fspath(a) for a in args]
    if verbose:
        print("$ " + " ".join(_quote(c) for c in command), flush=True)
    proc = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          errors="replace", check=False)
    if verbose:
        if proc.stdout:
            print(proc.stdout, end="", flush=True)
        if proc.stderr:
            print(proc.stderr, end="", flush=True)
    if proc.returncode != 0:
        raise ToolError(name, command, proc.returncode, proc.stderr,
                        proc.stdout)
    return proc


def _quote(word):
    import shlex
    return shlex.quote(word)
