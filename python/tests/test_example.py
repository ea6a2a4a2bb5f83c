"""The example of HPVM's torch2hpvm README, re-created on the Fashion-MNIST
LeNet (python/examples/hpvm_readme_flow.py: HPVM's lines unchanged but for
paths, model and shape), run as a user runs it, then its program back in
PyTorch (accuracy_from_python.py)."""
import shutil
import subprocess
import sys
import unittest

import torch

import common

FLOW = common.EXAMPLES / "hpvm_readme_flow.py"
ACCURACY = common.EXAMPLES / "accuracy_from_python.py"


class ReadmeFlow(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        work = common.fresh_dir("example")
        cls.data = work / "data"
        subprocess.run(
            [str(common.DATASET_TOOL), "convert",
             str(common.FASHION / "t10k-images-idx3-ubyte.gz"),
             str(common.FASHION / "t10k-labels-idx1-ubyte.gz"),
             "--split", "tune=5000,test=5000", "--scale", "1/255",
             "--normalize", "0.5,0.5", "-o", str(cls.data)],
            check=True, stdout=subprocess.DEVNULL)
        torch.save(common.state_dict_from_onnx(common.ONNX_LENET),
                   cls.data / "weights.pth")
        cls.out = work / "lenet_fashion"
        cls.flow = subprocess.run(
            [sys.executable, str(FLOW), str(cls.data), str(cls.out),
             str(common.CONFIGS)], cwd=work, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)

    def test_flow_builds_the_program(self):
        self.assertEqual(self.flow.returncode, 0, self.flow.stdout)
        binary = self.out / "build" / "lenet_fashion"
        self.assertTrue(binary.is_file())
        proc = subprocess.run([str(binary), "test", "-q"], cwd=common.WORK,
                              stdout=subprocess.PIPE, text=True, check=True)
        # The shipped LeNet's recorded test accuracy (tuner_confs.txt).
        self.assertEqual(proc.stdout.strip(),
                         "Accuracy: 90.320000% (4516 of 5000 images)")

    def test_accuracy_from_python(self):
        self.assertEqual(self.flow.returncode, 0, self.flow.stdout)
        proc = subprocess.run(
            [sys.executable, str(ACCURACY), str(self.out), "fp32",
             "conv1_perf121"], stdout=subprocess.PIPE, text=True, check=True)
        # The accuracies recorded for these blocks in tuner_confs.txt.
        self.assertEqual(proc.stdout, "exact FP32: 90.32%\nfp32: 90.32%\n"
                         "conv1_perf121: 88.94%\n")

    def test_flow_with_an_empty_config_file(self):
        """HPVM's README passes config_file="" before any tuning: the path
        is read when the program runs (output_dir/tuner_confs.txt, which
        HPVM's tuner writes), and while it does not exist the program runs
        exact FP32 and says so."""
        out = self.out.parent / "lenet_empty_config"
        flow = subprocess.run(
            [sys.executable, str(FLOW), str(self.data), str(out), ""],
            cwd=out.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        self.assertEqual(flow.returncode, 0, flow.stdout)
        binary = out / "build" / "lenet_fashion"
        proc = subprocess.run([str(binary), "test", "-q"], cwd=common.WORK,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, check=True)
        self.assertEqual(proc.stdout.strip(),
                         "Accuracy: 90.320000% (4516 of 5000 images)")
        self.assertEqual(proc.stderr,
                         f"note: {out}/tuner_confs.txt, the configuration "
                         f"file baked in at export, does not exist: running "
                         f"exact FP32\n")
        # Once the tuner's file is there, the program runs it.
        shutil.copyfile(common.CONFIGS, out / "tuner_confs.txt")
        proc = subprocess.run([str(binary), "test", "-q", "--config",
                               "conv1_perf121"], cwd=common.WORK,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, check=True)
        self.assertEqual(proc.stderr, "")
        self.assertEqual(proc.stdout.strip(),
                         "Accuracy: 88.940000% (4447 of 5000 images)")


if __name__ == "__main__":
    unittest.main()
