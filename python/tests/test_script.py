"""torch2hpvm's TorchScript class: the loaded LeNet scripted inside a
pipeline, saved with torch.jit.save, and loaded again in a fresh Python
process and in a C++ program with no Python, after the export directory is
gone, against the program's own outputs bit for bit under the saved
configuration; deepcopy and pickle; two saved modules with different
configurations in one process; damaged saved files."""
import copy
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import unittest
from pathlib import Path

import numpy as np
import torch

import common
import torch2hpvm

# The configurations compared: the approximated ones change the outputs.
CONFIG_A, CONFIG_B = "conv2_perf121", "conv1_samp231"
BATCH = 64


def setUpModule():
    global WORK, OUT, IMAGES, RAW, REFERENCE
    if not torch2hpvm.load_extension():
        raise RuntimeError(f"the TorchScript class is not available: "
                           f"{torch2hpvm.extension_error()}")
    WORK = common.fresh_dir("script")
    OUT, _, IMAGES = common.export_lenet(WORK, BATCH)
    # The pipeline's input: the images before normalization.
    RAW = common.FashionPairs(common.TUNE, common.TEST)
    REFERENCE = {name: common.run_program(OUT, "--config", name)[0]
                 for name in (CONFIG_A, CONFIG_B)}


def unnormalized():
    """The test images as the pipeline takes them: x / 255 in [0, 1]."""
    return torch.from_numpy(RAW.images * np.float32(0.5) + np.float32(0.5))


class Pipeline(torch.nn.Module):
    """Normalization, the compiled model and argmax, as a user writes
    it."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor):
        scores = self.net((x - 0.5) / 0.5)
        return scores, scores.argmax(1)


def export_copy(name):
    """A copy of the export, to be deleted after loading."""
    target = WORK / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(OUT, target, symlinks=True)
    return target


def run_python(script, *args):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script),
                           *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=WORK,
                          timeout=300)


class SavedPipeline(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        copied = export_copy("lenet-copy")
        net = torch2hpvm.load(copied, config=CONFIG_A)
        cls.scripted = torch.jit.script(Pipeline(net))
        cls.path = WORK / "pipeline.pt"
        torch.jit.save(cls.scripted, str(cls.path))
        shutil.rmtree(copied)
        # The pipeline's input normalizes back to the program's exactly.
        np.testing.assert_array_equal(
            ((unnormalized() - 0.5) / 0.5).numpy(), IMAGES.numpy())

    def test_scripted_in_this_process(self):
        scores, labels = self.scripted(unnormalized()[:BATCH])
        np.testing.assert_array_equal(scores.numpy(),
                                      REFERENCE[CONFIG_A][:BATCH])
        np.testing.assert_array_equal(
            labels.numpy(), REFERENCE[CONFIG_A][:BATCH].argmax(1))

    def test_loaded_in_a_fresh_python_process(self):
        np.save(WORK / "raw.npy", unnormalized()[:BATCH].numpy())
        proc = run_python("""
            import sys, numpy as np, torch, torch2hpvm
            m = torch.jit.load(sys.argv[1])
            scores, labels = m(torch.from_numpy(np.load(sys.argv[2])))
            np.save(sys.argv[3], scores.numpy())
            print(m.net.configuration())
            """, self.path, WORK / "raw.npy", WORK / "py_scores.npy")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        np.testing.assert_array_equal(np.load(WORK / "py_scores.npy"),
                                      REFERENCE[CONFIG_A][:BATCH])
        # (The file named is where the configuration was read from.)
        self.assertEqual(proc.stdout, f"configuration '{CONFIG_A}' of "
                                      f"{WORK}/lenet-copy/tuner_confs.txt\n")

    def test_loaded_from_cpp_without_python(self):
        tool = os.environ["T2H_LOAD_SAVED"]
        raw = WORK / "raw.bin"
        unnormalized()[:BATCH].numpy().tofile(raw)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        proc = subprocess.run([tool, self.path, raw, "64", "1", "28", "28",
                               WORK / "cpp"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env,
                              timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        scores = np.fromfile(WORK / "cpp.0.bin", np.float32).reshape(BATCH,
                                                                     -1)
        labels = np.fromfile(WORK / "cpp.1.bin", np.int64)
        np.testing.assert_array_equal(scores, REFERENCE[CONFIG_A][:BATCH])
        np.testing.assert_array_equal(labels,
                                      REFERENCE[CONFIG_A][:BATCH].argmax(1))
        # Another configuration of the saved file, chosen from C++ (the
        # module alone: it takes normalized images).
        images = WORK / "images.bin"
        IMAGES[:BATCH].numpy().tofile(images)
        proc = subprocess.run([tool, WORK / "net_a.pt", images, "64", "1",
                               "28", "28", WORK / "cpp_b", CONFIG_B],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        np.testing.assert_array_equal(
            np.fromfile(WORK / "cpp_b.0.bin", np.float32).reshape(BATCH, -1),
            REFERENCE[CONFIG_B][:BATCH])

    def test_timed_calls_from_cpp(self):
        """load_saved --time (scripts/bench/load_overhead.py): each call's
        wall time, then the program's own time of it, which is positive
        and within the wall time."""
        tool = os.environ["T2H_LOAD_SAVED"]
        images = WORK / "images.bin"
        IMAGES[:BATCH].numpy().tofile(images)
        proc = subprocess.run([tool, "--time", "4", "1", WORK / "net_a.pt",
                               images, "16", "1", "28", "28"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        walls, runs = [[float(t) for t in line.split()]
                       for line in proc.stdout.split("\n")[:2]]
        self.assertEqual((len(walls), len(runs)), (4, 4))
        for wall, run in zip(walls, runs):
            self.assertGreater(run, 0.0)
            self.assertLess(run, wall)

    def setUp(self):
        if not (WORK / "net_a.pt").exists():
            net = torch2hpvm.load(OUT, config=CONFIG_A)
            torch.jit.save(torch.jit.script(net), str(WORK / "net_a.pt"))


class Copies(unittest.TestCase):

    def test_two_saved_configurations_in_one_process(self):
        for name in (CONFIG_A, CONFIG_B):
            net = torch2hpvm.load(OUT, config=name)
            torch.jit.save(torch.jit.script(net), str(WORK / f"{name}.pt"))
        np.save(WORK / "images.npy", IMAGES[:BATCH].numpy())
        proc = run_python("""
            import sys, numpy as np, torch, torch2hpvm
            a = torch.jit.load(sys.argv[1])
            b = torch.jit.load(sys.argv[2])
            x = torch.from_numpy(np.load(sys.argv[3]))
            for i in range(2):  # interleaved
                np.save(sys.argv[4] + f"a{i}.npy", a(x).numpy())
                np.save(sys.argv[4] + f"b{i}.npy", b(x).numpy())
            """, WORK / f"{CONFIG_A}.pt", WORK / f"{CONFIG_B}.pt",
                          WORK / "images.npy", WORK / "two_")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for i in range(2):
            np.testing.assert_array_equal(np.load(WORK / f"two_a{i}.npy"),
                                          REFERENCE[CONFIG_A][:BATCH])
            np.testing.assert_array_equal(np.load(WORK / f"two_b{i}.npy"),
                                          REFERENCE[CONFIG_B][:BATCH])

    def test_deepcopy_keeps_the_configuration_and_is_independent(self):
        net = torch2hpvm.load(OUT, config=CONFIG_A)
        twin = copy.deepcopy(net)
        net.configure(config=CONFIG_B)
        np.testing.assert_array_equal(twin(IMAGES[:BATCH]).numpy(),
                                      REFERENCE[CONFIG_A][:BATCH])
        np.testing.assert_array_equal(net(IMAGES[:BATCH]).numpy(),
                                      REFERENCE[CONFIG_B][:BATCH])
        scripted = copy.deepcopy(torch.jit.script(twin))
        np.testing.assert_array_equal(scripted(IMAGES[:BATCH]).numpy(),
                                      REFERENCE[CONFIG_A][:BATCH])

    def test_pickle(self):
        net = torch2hpvm.load(OUT, config=CONFIG_B)
        back = pickle.loads(pickle.dumps(net))
        np.testing.assert_array_equal(back(IMAGES[:BATCH]).numpy(),
                                      REFERENCE[CONFIG_B][:BATCH])
        self.assertEqual(back.config_description, net.config_description)

    def test_trace_records_the_program(self):
        net = torch2hpvm.load(OUT, config=CONFIG_A)
        traced = torch.jit.trace(Pipeline(net), unnormalized()[:2])
        path = WORK / "traced.pt"
        torch.jit.save(traced, str(path))
        loaded = torch.jit.load(str(path))
        np.testing.assert_array_equal(
            loaded(unnormalized()[:BATCH])[0].numpy(),
            REFERENCE[CONFIG_A][:BATCH])


class Damaged(unittest.TestCase):
    """A damaged saved file is refused with a message, in a process that
    then exits normally."""

    @classmethod
    def setUpClass(cls):
        net = torch2hpvm.load(OUT)
        cls.path = WORK / "good.pt"
        torch.jit.save(torch.jit.script(net), str(cls.path))
        cls.bytes = cls.path.read_bytes()

    def load_in_subprocess(self, data):
        bad = WORK / "bad.pt"
        bad.write_bytes(data)
        return run_python("""
            import sys, torch, torch2hpvm
            try:
                torch.jit.load(sys.argv[1])
            except RuntimeError as e:
                print(str(e).splitlines()[0] if str(e) else "?")
                sys.exit(1)
            print("loaded")
            """, bad)

    def test_truncated(self):
        for size in (0, 10, len(self.bytes) // 3, len(self.bytes) // 2,
                     len(self.bytes) - 100):
            with self.subTest(size=size):
                proc = self.load_in_subprocess(self.bytes[:size])
                self.assertEqual(proc.returncode, 1, proc.stdout +
                                 proc.stderr)
                self.assertTrue(proc.stdout.strip(), proc.stderr)

    def test_changed_library_bytes(self):
        # A byte inside the stored library changed (PyTorch's zip reader
        # does not check the records' CRCs): refused by the Program's own
        # digest, before the library is loaded.
        data = bytearray(self.bytes)
        at = data.find(b"\x7fELF")
        self.assertGreater(at, 0)
        data[at + 5000] ^= 0xFF
        proc = self.load_in_subprocess(bytes(data))
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(proc.stdout,
                         "the saved Program is damaged: its content does not "
                         "match its SHA-256 digest (the file was changed or "
                         "truncated)\n")

    def test_library_built_for_another_cpu(self):
        # The saved CPU features name one this CPU lacks (same length:
        # the stored records keep their offsets): refused before the
        # library is loaded, where its code could die of SIGILL.
        data = self.bytes
        at = data.find(b"avx2 fma", data.find(b"cpu_features"))
        self.assertGreater(at, 0)
        proc = self.load_in_subprocess(data[:at] + b"avx2 fmx" +
                                       data[at + 8:])
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertTrue(proc.stdout.startswith(
            "the saved Program's library was built for a CPU with avx2 fmx "),
            proc.stdout)
        self.assertTrue(proc.stdout.endswith(
            "; this CPU lacks fmx: export the model again on this machine "
            "(or with hpvm_rt built portable, -DHPVM_PORTABLE=ON)\n"),
            proc.stdout)


class Compile(unittest.TestCase):
    """torch2hpvm.compile(): export, build, tune and load in one call."""

    def test_exact_without_a_tune_set(self):
        import tempfile
        temp = Path(tempfile.gettempdir())
        before = set(temp.glob("torch2hpvm-compile-*"))
        net = torch2hpvm.compile(common.lenet(), IMAGES[:8])
        self.assertEqual(net.config_description,
                         "exact FP32 (no configuration)")
        want = torch2hpvm.load(OUT, exact=True)(IMAGES[:BATCH])
        np.testing.assert_array_equal(net(IMAGES[:BATCH]).numpy(),
                                      want.numpy())
        # The export was temporary: the module holds the program.
        self.assertEqual(set(temp.glob("torch2hpvm-compile-*")), before)
        scripted = torch.jit.script(Pipeline(net))
        np.testing.assert_array_equal(
            scripted(unnormalized()[:BATCH])[0].numpy(), want.numpy())

    def test_tuned_within_a_loss(self):
        out = WORK / "compiled"
        shutil.rmtree(out, ignore_errors=True)
        net = torch2hpvm.compile(
            common.lenet(), IMAGES[:8],
            tune=common.FashionPairs(0, common.TUNE),
            test=common.FashionPairs(common.TUNE, common.TEST),
            qos_loss=3.0, budget=50, output_dir=out, batch_size=BATCH,
            time_limit="5s", validate=4, calibrate=4, no_plot=True,
            quiet=True)
        confs = out / "tuner_confs.txt"
        self.assertTrue(confs.is_file())
        self.assertIn(f" of {confs}", net.config_description)
        want = common.run_program(out, "-c", str(confs), "--qos-loss", "3")
        np.testing.assert_array_equal(net(IMAGES[:BATCH]).numpy(),
                                      want[0][:BATCH])
        with self.assertRaises(ValueError) as e:
            torch2hpvm.compile(common.lenet(), IMAGES[:8], budget=10)
        self.assertEqual(str(e.exception), "budget and tuning options need "
                         "a tune set (tune=)")


if __name__ == "__main__":
    unittest.main()
