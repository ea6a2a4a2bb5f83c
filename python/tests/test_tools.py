"""Where the package finds the C++ tools (explicit directory,
$TORCH2HPVM_BUILD, its build-tree or installed location, PATH), and the
package installed by cmake --install, moved, doing the whole flow."""
import os
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

import common
import torch2hpvm
from torch2hpvm import find_tool

EXPORT = common.BUILD / "frontend" / "torch2hpvm-export"
DATASET = common.BUILD / "datasets" / "torch2hpvm-dataset"


class FindTool(unittest.TestCase):

    def setUp(self):
        self.saved = dict(os.environ)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)

    def test_build_tree_location(self):
        # The build tree's copy of the package knows its tools.
        self.assertEqual(Path(torch2hpvm.__file__).parent,
                         common.BUILD / "python" / "torch2hpvm")
        self.assertEqual(find_tool("torch2hpvm-export"), str(EXPORT))
        self.assertEqual(find_tool("torch2hpvm-dataset"), str(DATASET))

    def test_explicit_directory_and_environment(self):
        self.assertEqual(find_tool("torch2hpvm-dataset", common.BUILD),
                         str(DATASET))
        self.assertEqual(find_tool("torch2hpvm-export", EXPORT.parent),
                         str(EXPORT))
        os.environ["TORCH2HPVM_BUILD"] = str(common.BUILD)
        self.assertEqual(find_tool("torch2hpvm-tune"),
                         str(common.BUILD / "frontend" / "torch2hpvm-tune"))
        os.environ["TORCH2HPVM_BUILD"] = str(common.WORK)
        with self.assertRaises(FileNotFoundError) as e:
            find_tool("torch2hpvm-export")
        self.assertEqual(str(e.exception),
                         f"torch2hpvm-export is not in {common.WORK} "
                         f"($TORCH2HPVM_BUILD): give a torch2hpvm build tree "
                         f"(with frontend/torch2hpvm-export) or a directory "
                         f"holding the tools")

    def test_path(self):
        env = dict(os.environ, PATH=f"{EXPORT.parent}:/usr/bin:/bin",
                   PYTHONPATH=str(common.SOURCE / "python"))
        env.pop("TORCH2HPVM_BUILD", None)
        code = ("import torch2hpvm; print(torch2hpvm.find_tool("
                "'torch2hpvm-export'))")
        proc = subprocess.run([sys.executable, "-c", code], env=env,
                              stdout=subprocess.PIPE, text=True, check=True)
        self.assertEqual(proc.stdout.strip(), str(EXPORT))
        env["PATH"] = "/usr/bin:/bin"
        proc = subprocess.run([sys.executable, "-c", code], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("FileNotFoundError: torch2hpvm-export was not found; "
                      "looked in: PATH. Install torch2hpvm (cmake --install), "
                      "or set TORCH2HPVM_BUILD to its build tree",
                      proc.stderr)


class Installed(unittest.TestCase):
    """cmake --install, the prefix moved: the installed package finds the
    installed tools and runs the whole flow with nothing of the build."""

    def test_installed_package(self):
        work = common.fresh_dir("install")
        subprocess.run(["cmake", "--install", str(common.BUILD), "--prefix",
                        str(work / "installed")], check=True,
                       stdout=subprocess.DEVNULL)
        prefix = work / "moved"
        (work / "installed").rename(prefix)
        version = "%d.%d" % sys.version_info[:2]
        site = prefix / "lib" / f"python{version}" / "dist-packages"
        self.assertTrue((site / "torch2hpvm" / "__init__.py").is_file())
        # Under /usr/local, /usr/bin/python3 finds it with no PYTHONPATH.
        self.assertIn(f"/usr/local/lib/python{version}/dist-packages",
                      subprocess.run(
                          ["/usr/bin/python3", "-c",
                           "import sys; print(sys.path)"],
                          stdout=subprocess.PIPE, text=True).stdout)
        data = common.fashion_bins(work / "data")
        script = f"""
import sys, torch
import torch2hpvm
from torch2hpvm import BinDataset, ModelExporter
print(torch2hpvm.find_tool("torch2hpvm-export"))
d = "{data}"
tune = BinDataset(d + "/tune_input.bin", d + "/tune_labels.bin", ({common.TUNE}, 1, 28, 28))
test = BinDataset(d + "/test_input.bin", d + "/test_labels.bin", ({common.TEST}, 1, 28, 28))
out = "{work}/lenet"
ModelExporter("{common.ONNX_LENET}", tune, test, out).generate(batch_size=64).compile(out + "/build/lenet")
x = torch.from_numpy(__import__("numpy").fromfile(d + "/test_input.bin", "float32").reshape(-1, 1, 28, 28))
print(torch2hpvm.load(out)(x[:64]).argmax(1).tolist())
"""
        env = dict(os.environ, PYTHONPATH=str(site),
                   PATH="/usr/bin:/bin")
        env.pop("TORCH2HPVM_BUILD", None)
        proc = subprocess.run([sys.executable, "-c", script], env=env,
                              cwd=work, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.strip().split("\n")
        self.assertEqual(lines[0], str(prefix / "bin" / "torch2hpvm-export"))
        log = (work / "lenet" / "build.log").read_text()
        self.assertIn(f"-Dhpvm_rt_DIR={prefix}/lib", log)
        self.assertNotIn(f"{common.BUILD}/hpvm_rt", log)
        ref, _ = common.run_program(work / "lenet")
        self.assertEqual(lines[1], str(ref[:64].argmax(1).tolist()))
        shutil.rmtree(work)


if __name__ == "__main__":
    unittest.main()
