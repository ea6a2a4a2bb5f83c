"""ModelExporter and BinDataset: every argument of HPVM's API (model as a
Module, a ModelProto or a file; BinDatasets and generic datasets of
(image, label) pairs or bare images; output_dir, target, opset,
config_file; generate's output_code_file and batch_size; compile's
output_binary and working_dir), our tool's options, and the errors."""
import json
import shutil
import subprocess
import unittest
from pathlib import Path

import numpy as np
import onnx
import torch
from torch.utils.data import Dataset

import common
from torch2hpvm import BinDataset, ModelExporter, ToolError


def setUpModule():
    global WORK, DATA, TUNE, TEST
    WORK = common.fresh_dir("exporter")
    DATA = common.fashion_bins(WORK / "data")
    TUNE = BinDataset(DATA / "tune_input.bin", DATA / "tune_labels.bin",
                      (common.TUNE, 1, 28, 28))
    TEST = BinDataset(DATA / "test_input.bin", DATA / "test_labels.bin",
                      (common.TEST, 1, 28, 28))


def manifest(out):
    return json.loads((Path(out) / "manifest.json").read_text())


def out_dir(name):
    path = WORK / name
    shutil.rmtree(path, ignore_errors=True)
    return path


class BinDatasets(unittest.TestCase):

    def test_reads_the_files(self):
        self.assertEqual(len(TEST), common.TEST)
        self.assertEqual(TEST.shape, (common.TEST, 1, 28, 28))
        self.assertEqual(TEST.dataset_size, common.TEST)
        pairs = common.FashionPairs(common.TUNE, common.TEST)
        image, label = TEST[7]
        self.assertTrue(torch.equal(image, pairs[7][0]))
        self.assertEqual(label, int(pairs[7][1]))
        self.assertEqual(TEST[-1][1], int(pairs[common.TEST - 1][1]))
        with self.assertRaises(IndexError):
            TEST[common.TEST]

    def test_paths_as_strings(self):
        ds = BinDataset(str(DATA / "tune_input.bin"),
                        str(DATA / "tune_labels.bin"), [common.TUNE, 1, 28, 28])
        self.assertEqual(ds.shape, (common.TUNE, 1, 28, 28))

    def test_errors(self):
        with self.assertRaises(ValueError) as e:
            BinDataset(DATA / "tune_input.bin", DATA / "tune_labels.bin",
                       (common.TUNE, 784))
        self.assertEqual(str(e.exception), "Dataset shape must be 4 positive "
                         "integers (N, C, H, W), got (100, 784)")
        with self.assertRaises(FileNotFoundError) as e:
            BinDataset(DATA / "nope.bin", DATA / "tune_labels.bin",
                       (common.TUNE, 1, 28, 28))
        self.assertEqual(str(e.exception),
                         f"Input file {DATA}/nope.bin not found")
        with self.assertRaises(FileNotFoundError) as e:
            BinDataset(DATA / "tune_input.bin", DATA / "nope.bin",
                       (common.TUNE, 1, 28, 28))
        self.assertEqual(str(e.exception),
                         f"Labels file {DATA}/nope.bin not found")
        with self.assertRaises(RuntimeError) as e:
            BinDataset(DATA / "tune_input.bin", DATA / "tune_labels.bin",
                       (common.TUNE + 1, 1, 28, 28))
        self.assertEqual(str(e.exception),
                         f"{DATA}/tune_input.bin has 313600 bytes; shape "
                         f"(101, 1, 28, 28) needs 101 x 1 x 28 x 28 float32 "
                         f"= 316736 bytes")


class TheFlow(unittest.TestCase):
    """A Module with BinDatasets, a configuration, a batch size, a source
    copy, a binary path and a working directory: HPVM's whole API."""

    @classmethod
    def setUpClass(cls):
        cls.out = out_dir("flow")
        cls.code = WORK / "elsewhere" / "lenet.cpp"
        cls.binary = WORK / "bin" / "lenet_fashion"
        cls.workdir = WORK / "intermediates"
        exporter = ModelExporter(common.lenet(), TUNE, TEST, cls.out,
                                 config_file=common.CONFIGS)
        cls.returned = exporter.generate(output_code_file=cls.code,
                                         batch_size=50)
        cls.generated = sorted(p.name for p in cls.out.iterdir())
        cls.compiled = exporter.compile(cls.binary, cls.workdir)
        cls.exporter = exporter

    def test_generate_writes_the_program_and_returns_self(self):
        self.assertIs(self.returned, self.exporter)
        self.assertEqual(self.generated, [
            ".torch2hpvm", "CMakeLists.txt", "hpvm_c.cpp", "manifest.json",
            "ops.json", "test_input.bin", "test_labels.bin",
            "tune_input.bin", "tune_labels.bin", "tuner_confs.txt",
            "weights"])
        self.assertEqual(self.code.read_text(),
                         (self.out / "hpvm_c.cpp").read_text())
        self.assertEqual(self.exporter.output_code_file, self.code)
        m = manifest(self.out)
        self.assertEqual(m["batch_size"], 50)
        self.assertEqual(m["target"], "hpvm_tensor")
        self.assertEqual(m["model"]["opset"], 13)
        self.assertEqual((self.out / "tuner_confs.txt").read_bytes(),
                         common.CONFIGS.read_bytes())
        for name in ("test_input.bin", "test_labels.bin", "tune_input.bin",
                     "tune_labels.bin"):
            self.assertEqual((self.out / name).read_bytes(),
                             (DATA / name).read_bytes(), name)

    def test_compile_builds_and_links_the_binary(self):
        self.assertIs(self.compiled, self.exporter)
        built = self.out / "build" / "flow"
        self.assertTrue(built.is_file())
        self.assertTrue((self.out / "build" / "libflow.so").is_file())
        self.assertTrue(self.binary.is_symlink())
        self.assertEqual(self.binary.resolve(), built)
        self.assertTrue(self.workdir.is_dir())

    def test_the_program_computes_the_module(self):
        ours, accuracy = common.run_program(self.out, "--batch-size", "64")
        images = torch.from_numpy(np.fromfile(
            DATA / "test_input.bin", np.float32).reshape(-1, 1, 28, 28))
        with torch.no_grad():
            ref = common.lenet()(images).numpy()
        self.assertLessEqual(np.abs(ours - ref).max(),
                             1e-4 * np.abs(ref).max())
        labels = np.fromfile(DATA / "test_labels.bin", np.int32)
        self.assertAlmostEqual(accuracy,
                               100.0 * (ref.argmax(1) == labels).mean(), 4)
        # Run through the link, from elsewhere: it finds its files.
        proc = subprocess.run([str(self.binary), "test", "-q"], cwd=WORK,
                              stdout=subprocess.PIPE, text=True, check=True)
        self.assertIn(f"Accuracy: {accuracy:.6f}%", proc.stdout)


class GenericDatasets(unittest.TestCase):
    """Datasets that are not BinDatasets are written in HPVM's format: the
    images as float32, the labels as int32 (not the images, as HPVM's
    exporter writes them)."""

    def export(self, name, tune, test):
        out = out_dir(name)
        ModelExporter(common.ONNX_LENET, tune, test, out).generate()
        return out

    def test_image_label_pairs(self):
        out = self.export("pairs",
                          common.FashionPairs(0, common.TUNE),
                          common.FashionPairs(common.TUNE, common.TEST))
        # Byte for byte what torch2hpvm-dataset wrote for the same images.
        for name in ("tune_input.bin", "tune_labels.bin", "test_input.bin",
                     "test_labels.bin"):
            self.assertEqual((out / name).read_bytes(),
                             (DATA / name).read_bytes(), name)
        self.assertEqual(manifest(out)["datasets"]["test"]["images"],
                         common.TEST)

    def test_bare_images(self):
        pairs = common.FashionPairs(0, common.TUNE)
        out = self.export("bare", common.BareImages(pairs, 7),
                          common.BareImages(pairs, 1))
        self.assertEqual((out / "tune_input.bin").read_bytes(),
                         (DATA / "tune_input.bin").read_bytes())
        self.assertEqual((out / "test_input.bin").read_bytes(),
                         (DATA / "tune_input.bin").read_bytes())
        # No labels: none written, none looked for, no accuracy.
        self.assertFalse((out / "tune_labels.bin").exists())
        self.assertFalse((out / "test_labels.bin").exists())
        self.assertIn("--no-labels", manifest(out)["command_line"])

    def test_bin_dataset_without_labels(self):
        ds = BinDataset(DATA / "tune_input.bin", None,
                        (common.TUNE, 1, 28, 28))
        pairs = common.FashionPairs(0, common.TUNE)
        self.assertTrue(torch.equal(ds[3], pairs[3][0]))
        self.assertEqual(repr(ds), f"BinDataset('{DATA}/tune_input.bin', "
                         f"None, ({common.TUNE}, 1, 28, 28))")
        out = out_dir("bin_no_labels")
        ModelExporter(common.ONNX_LENET, ds, ds, out).generate().compile(
            out / "lenet")
        self.assertFalse((out / "tune_labels.bin").exists())
        run = subprocess.run([str(out / "lenet"), "test"], cwd=out,
                             capture_output=True, text=True, check=True)
        self.assertNotIn("Accuracy", run.stdout)
        self.assertFalse((out / "final_accuracy").exists())

    def test_numpy_samples_and_plain_int_labels(self):
        class Numpy(Dataset):
            def __len__(self):
                return 3

            def __getitem__(self, i):
                return np.full((1, 28, 28), i, np.float64), i

        out = self.export("numpy", Numpy(), Numpy())
        x = np.fromfile(out / "tune_input.bin", np.float32)
        np.testing.assert_array_equal(x, np.repeat([0, 1, 2], 784))
        np.testing.assert_array_equal(
            np.fromfile(out / "tune_labels.bin", np.int32), [0, 1, 2])

    def test_bad_samples(self):
        class Bad(Dataset):
            def __init__(self, sample):
                self.sample = sample

            def __len__(self):
                return 1

            def __getitem__(self, i):
                return self.sample

        cases = [
            ((torch.zeros(1, 28, 28), 1.5), ValueError,
             "sample 0: the label must be an integer class index, got 1.5"),
            ((torch.zeros(1, 28, 28), torch.tensor([1, 2])), ValueError,
             "sample 0: the label must be one class index, got a tensor of "
             "shape (2,)"),
            ((torch.zeros(1, 28, 28), 1, 2), ValueError,
             "sample 0: expected an (image, label) pair or an image, got a "
             "sequence of 3 items"),
            (torch.zeros(28, 28), ValueError,
             "sample 0: an image sample must be C x H x W or K x C x H x W, "
             "got shape (28, 28)"),
            (("image", 1), TypeError, "sample 0: the image must be a "
             "torch.Tensor or numpy array, got str"),
        ]
        for sample, error, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(error) as e:
                    self.export("bad_sample", Bad(sample), TEST)
                self.assertEqual(str(e.exception), message)


class ModelsAndOptions(unittest.TestCase):

    def test_model_proto_file_and_opsets(self):
        proto = onnx.load(str(common.ONNX_LENET))
        for name, model, opset, want in (
                ("proto", proto, None, 13),
                ("proto14", proto, 14, 14),  # converted by the tool
                ("file", common.ONNX_LENET, None, 13),
                ("file_str", str(common.ONNX_LENET), None, 13),
                ("module10", common.lenet(), 10, 10)):  # exported at 10
            with self.subTest(model=name):
                out = out_dir(name)
                ModelExporter(model, TUNE, TEST, out, opset=opset).generate()
                self.assertEqual(manifest(out)["model"]["opset"], want)
                self.assertIn(f"opset {want}\n",
                              (out / "hpvm_c.cpp").read_text())
                self.assertEqual(manifest(out)["batch_size"], 0)

    def test_targets(self):
        for target, want in (("hpvm_tensor", "hpvm_tensor"),
                             ("hpvm_tensor_inspect", "hpvm_tensor_inspect"),
                             ("hpvm_cudnn", "hpvm_tensor"),
                             ("tensor", "tensor")):
            with self.subTest(target=target):
                out = out_dir(target)
                ModelExporter(common.ONNX_LENET, TUNE, TEST, out,
                              target=target).generate()
                self.assertEqual(manifest(out)["target"], want)
        # The tensor target (direct runtime calls) builds and runs too, and
        # computes what the HPVM-C program computes.
        built = {}
        for target in ("tensor", "hpvm_tensor"):
            out = out_dir(f"{target}_built")
            ModelExporter(common.ONNX_LENET, TUNE, TEST, out,
                          target=target).generate(batch_size=64).compile(
                              out / "build" / "program")
            built[target] = common.run_program(out)
        self.assertEqual(built["tensor"][1], built["hpvm_tensor"][1])
        ours, ref = built["tensor"][0], built["hpvm_tensor"][0]
        self.assertLessEqual(np.abs(ours - ref).max(),
                             1e-4 * np.abs(ref).max())

    def test_regenerates_its_own_output(self):
        out = out_dir("again")
        ModelExporter(common.ONNX_LENET, TUNE, TEST, out).generate()
        (out / "hpvm_c.cpp").write_text(
            "// my note\n" + (out / "hpvm_c.cpp").read_text())
        ModelExporter(common.ONNX_LENET, TUNE, TEST, out).generate(
            batch_size=10)
        self.assertTrue((out / "hpvm_c.cpp").read_text().startswith(
            "// my note\n"))
        self.assertEqual(manifest(out)["batch_size"], 10)

    def test_tune(self):
        out = out_dir("tuned")
        exporter = ModelExporter(common.ONNX_LENET, TUNE, TEST, out)
        written = exporter.generate().compile(out / "build" / "tuned").tune(
            qos_loss=[1, 2], budget=40, batch_size=50, threads=1,
            profile_images=50)
        self.assertEqual(written, out / "tuner_confs.txt")
        text = written.read_text()
        self.assertGreater(float(text.split("\n")[0]), 0.0)
        self.assertIn("\n+++++\n", text)
        self.assertTrue((out / "tuning.json").is_file())


class Errors(unittest.TestCase):

    def check(self, error, message, *args, **kwargs):
        with self.assertRaises(error) as e:
            ModelExporter(*args, **kwargs)
        self.assertEqual(str(e.exception), message)

    def test_argument_errors(self):
        out = out_dir("errors")
        lenet = common.ONNX_LENET
        self.check(ValueError, "Target cuda not recognized (use one of "
                   "hpvm_tensor, hpvm_tensor_inspect, hpvm_cudnn, tensor)",
                   lenet, TUNE, TEST, out, target="cuda")
        self.check(ValueError, "toolchain must be 'clang' or 'hpvm', got "
                   "'gcc'", lenet, TUNE, TEST, out, toolchain="gcc")
        self.check(ValueError, "opset must be a positive integer, got 0",
                   lenet, TUNE, TEST, out, opset=0)
        self.check(ValueError, f"Config file {WORK} is a directory",
                   lenet, TUNE, TEST, out, config_file=WORK)
        self.check(ValueError, "Cannot accept model of type <class 'int'>",
                   3, TUNE, TEST, out)
        self.check(ValueError, f"Cannot accept model file {DATA}/"
                   f"tune_input.bin: expected .onnx or .onnxtxt",
                   DATA / "tune_input.bin", TUNE, TEST, out)
        self.check(TypeError, "Cannot accept tune dataset of type list (a "
                   "BinDataset or a torch.utils.data.Dataset)",
                   lenet, [1, 2], TEST, out)
        other = BinDataset(DATA / "tune_input.bin", DATA / "tune_labels.bin",
                           (common.TUNE, 1, 784, 1))
        self.check(ValueError, "Tune and test images differ in shape: "
                   "(1, 784, 1) and (1, 28, 28)", lenet, other, TEST, out)
        self.check(ValueError, "target hpvm_cudnn with toolchain 'hpvm' "
                   "needs hpvm-clang -t cudnn, which torch2hpvm-export does "
                   "not run; use toolchain 'clang' (hpvm_rt runs the program "
                   "on the CPU)", lenet, TUNE, TEST, out, target="hpvm_cudnn",
                   toolchain="hpvm")
        taken = WORK / "taken"
        taken.mkdir(exist_ok=True)
        (taken / "notes.txt").write_text("mine")
        self.check(FileExistsError, f"{taken} exists and is not a torch2hpvm "
                   f"output directory (it has no manifest.json); give a new "
                   f"or empty directory", lenet, TUNE, TEST, taken)
        exporter = ModelExporter(lenet, TUNE, TEST, out)
        with self.assertRaises(ValueError) as e:
            exporter.generate(batch_size=0)
        self.assertEqual(str(e.exception),
                         "batch_size must be a positive integer, got 0")
        with self.assertRaises(RuntimeError) as e:
            exporter.compile(out / "build" / "x")
        self.assertEqual(str(e.exception), "compile() needs generate() first")

    def test_tool_errors_carry_the_tools_message(self):
        class Unsupported(torch.nn.Module):
            def forward(self, x):
                return torch.cumsum(x, 2).flatten(1)[:, :10]

        cases = [
            ("unsupported", Unsupported(), {}, 1,
             "node '/CumSum' (CumSum, #1): operator CumSum is not supported"),
            ("too_big", common.ONNX_LENET, {"max_size": "1KB"}, 1,
             "is 843 KiB, more than the 1.0 KiB limit (raise it with "
             "--max-size)"),
            ("down", onnx.load(str(common.ONNX_LENET)), {"opset": 11}, 1,
             "cannot convert from opset 13 to 11"),
        ]
        for name, model, kwargs, status, message in cases:
            with self.subTest(case=name):
                exporter = ModelExporter(model, TUNE, TEST, out_dir(name),
                                         **kwargs)
                with self.assertRaises(ToolError) as e:
                    exporter.generate()
                self.assertIsInstance(e.exception, RuntimeError)
                self.assertEqual(e.exception.returncode, status)
                self.assertEqual(e.exception.tool, "torch2hpvm-export")
                self.assertIn(message, e.exception.stderr)
                self.assertTrue(str(e.exception).startswith(
                    f"torch2hpvm-export failed (exit status {status}):\n"
                    f"torch2hpvm-export: error: "), str(e.exception))
                self.assertIn(message, str(e.exception))
        # A toolchain failure: exit status 2, the build's log in the message.
        exporter = ModelExporter(common.ONNX_LENET, TUNE, TEST,
                                 out_dir("no_compiler"), cxx="/bin/false")
        exporter.generate()
        with self.assertRaises(ToolError) as e:
            exporter.compile(WORK / "no_compiler" / "build" / "x")
        self.assertEqual(e.exception.returncode, 2)
        self.assertIn("build command failed", str(e.exception))
        self.assertIn("-DCMAKE_CXX_COMPILER=/bin/false", str(e.exception))


if __name__ == "__main__":
    unittest.main()
