"""torch2hpvm.load(): the built LeNet as a torch.nn.Module, against the
program's own outputs (bit for bit) at batch sizes 1, odd and 64, under
every configuration of datasets/example/tuner_confs.txt, thread counts,
in a DataLoader accuracy loop, under torch.jit.trace, and its errors.

Outputs are compared batch for batch: the program run with --batch-size B
and the module called on the same B images. (oneDNN chooses its kernels
by batch size, so both the program's and the module's last bits change
with B.)"""
import os
import subprocess
import sys
import textwrap
import unittest
from unittest import mock

import numpy as np
import torch
from torch.utils.data import DataLoader

import common
import torch2hpvm
from torch2hpvm import BinDataset, LibraryError, ModelExporter


def setUpModule():
    global OUT, DATA, IMAGES, LABELS, REFERENCE
    OUT, DATA, IMAGES = common.export_lenet(common.fresh_dir("load"))
    LABELS = np.fromfile(DATA / "test_labels.bin", np.int32)
    # The program's outputs under its default (the first configuration),
    # at its default batch size (64).
    REFERENCE, _ = common.run_program(OUT)


def reference(batch, *args):
    """The program's outputs with --batch-size `batch` and `args`."""
    return common.run_program(OUT, "--batch-size", str(batch), *args)[0]


def batched(net, batch, images=None):
    """`net` on `images` (default: the test set), `batch` at a time."""
    images = IMAGES if images is None else images
    return torch.cat([net(images[s:s + batch])
                      for s in range(0, len(images), batch)]).numpy()


class Outputs(unittest.TestCase):
    """The module's outputs are the program's, whatever the batch."""

    @classmethod
    def setUpClass(cls):
        cls.net = torch2hpvm.load(OUT)

    def test_describes_the_model(self):
        self.assertEqual(self.net.input_shape, (1, 28, 28))
        self.assertEqual(self.net.num_classes, 10)
        self.assertEqual(self.net.name, "lenet")
        self.assertEqual(self.net.config_description,
                         f"configuration 'fp32' of {OUT}/tuner_confs.txt")
        self.assertEqual(list(self.net.parameters()), [])

    def test_batch_sizes(self):
        for batch in (1, 7, 64, common.TEST):
            with self.subTest(batch=batch), torch.no_grad():
                got = batched(self.net, batch)
                self.assertEqual(got.dtype, np.float32)
                self.assertEqual(got.shape, (common.TEST, 10))
                np.testing.assert_array_equal(got, reference(batch))

    def test_one_image_without_batch_dimension(self):
        got = self.net(IMAGES[0])
        self.assertEqual(tuple(got.shape), (10,))
        np.testing.assert_array_equal(got.numpy(), reference(1)[0])

    def test_empty_batch(self):
        self.assertEqual(tuple(self.net(IMAGES[:0]).shape), (0, 10))

    def test_non_contiguous_and_double_inputs(self):
        strided = IMAGES[:128].as_strided((64, 1, 28, 28),
                                          (2 * 784, 784, 28, 1))
        self.assertFalse(strided.is_contiguous())
        np.testing.assert_array_equal(self.net(strided).numpy(),
                                      self.net(IMAGES[:128:2].clone()).numpy())
        np.testing.assert_array_equal(self.net(IMAGES[:64].double()).numpy(),
                                      REFERENCE[:64])

    def test_input_left_unchanged_and_no_gradient(self):
        x = IMAGES[:16].clone().requires_grad_(True)
        before = x.detach().clone()
        out = self.net(x)
        self.assertTrue(torch.equal(x.detach(), before))
        self.assertFalse(out.requires_grad)

    def test_program_time_of_the_last_batch(self):
        """last_run_ms(): the program's own time of the last batch (what
        its --json batch_times_ms records), within the call's wall time;
        -1 before the first batch; also scripted."""
        import time
        net = torch2hpvm.load(OUT)
        self.assertEqual(net.last_run_ms(), -1.0)
        for module in (net, torch.jit.script(net)):
            start = time.perf_counter()
            module(IMAGES[:64])
            wall_ms = (time.perf_counter() - start) * 1e3
            with self.subTest(module=type(module).__name__):
                self.assertGreater(module.last_run_ms(), 0.0)
                self.assertLess(module.last_run_ms(), wall_ms)

    def test_close_to_pytorch(self):
        with torch.no_grad():
            torch_out = common.lenet()(IMAGES).numpy()
        ours = self.net(IMAGES).numpy()
        self.assertLessEqual(np.abs(ours - torch_out).max(),
                             1e-4 * np.abs(torch_out).max())
        np.testing.assert_array_equal(ours.argmax(1), torch_out.argmax(1))


class Configurations(unittest.TestCase):
    """Every configuration, chosen by name, index or loss, runs as the
    program runs it."""

    def test_every_configuration_by_name_and_index(self):
        net = torch2hpvm.load(OUT)
        for index, name in enumerate(common.config_names()):
            want = reference(64, "--config", name)
            for selector in (name, index):
                with self.subTest(config=selector):
                    net.configure(config=selector)
                    self.assertEqual(net.config_description,
                                     f"configuration '{name}' of "
                                     f"{OUT}/tuner_confs.txt")
                    np.testing.assert_array_equal(batched(net, 64), want)

    def test_load_config_argument_and_config_file(self):
        want = reference(1, "-c", common.CONFIGS, "--config",
                         "conv2_perf121")
        net = torch2hpvm.load(OUT, "conv2_perf121",
                              config_file=common.CONFIGS)
        self.assertEqual(net.config_description,
                         f"configuration 'conv2_perf121' of "
                         f"{common.CONFIGS}")
        np.testing.assert_array_equal(batched(net, 1), want)

    def test_qos_loss(self):
        want = reference(64, "--qos-loss", "1")
        net = torch2hpvm.load(OUT, qos_loss=1)
        np.testing.assert_array_equal(batched(net, 64), want)
        self.assertIn("'conv1_perf123'", net.config_description)
        # Within 0 points: fp16, recorded 1.5x at no loss.
        net.configure(qos_loss=0.0)
        self.assertIn("'fp16'", net.config_description)

    def test_exact(self):
        net = torch2hpvm.load(OUT, exact=True)
        self.assertEqual(net.config_description,
                         "exact FP32 (no configuration)")
        # The file's first block is fp32 everywhere: the same numbers.
        np.testing.assert_array_equal(batched(net, 64), REFERENCE)

    def test_two_modules_of_one_program_keep_their_configurations(self):
        a = torch2hpvm.load(OUT, config="conv1_samp231")
        b = torch2hpvm.load(OUT, config="fp32")
        want_a = reference(50, "--config", "conv1_samp231")
        want_b = reference(50, "--config", "fp32")
        for s in range(0, common.TEST, 50):
            np.testing.assert_array_equal(a(IMAGES[s:s + 50]).numpy(),
                                          want_a[s:s + 50])
            np.testing.assert_array_equal(b(IMAGES[s:s + 50]).numpy(),
                                          want_b[s:s + 50])


class Threads(unittest.TestCase):

    def test_thread_counts(self):
        net = torch2hpvm.load(OUT, threads=1)
        self.assertEqual(net.threads, 1)
        for threads in (1, 2):
            want = reference(64, "--threads", str(threads))
            net.threads = threads
            self.assertEqual(net.threads, threads)
            np.testing.assert_array_equal(batched(net, 64), want)

    def test_torch_threads_are_left_as_they_were(self):
        # The module sets the process's OpenMP runtime (torch's) to its own
        # count for a run, then gives torch's setting back.
        before = torch.get_num_threads()
        try:
            for torch_threads, threads in ((1, 2), (2, 1)):
                torch.set_num_threads(torch_threads)
                net = torch2hpvm.load(OUT, threads=threads)
                net(IMAGES[:8])
                self.assertEqual(torch.get_num_threads(), torch_threads)
        finally:
            torch.set_num_threads(before)

    def test_one_openmp_runtime_in_the_process(self):
        # hpvm_rt is compiled by g++ and the library links the OpenMP
        # runtime it was compiled for: torch's libgomp. Nothing brings in
        # LLVM's libomp, whose second thread team would take turns with
        # libgomp's on the cores.
        net = torch2hpvm.load(OUT, threads=2)
        np.testing.assert_array_equal(batched(net, 64),
                                      reference(64, "--threads", "2"))
        with open("/proc/self/maps") as maps:
            loaded = {line.split()[-1] for line in maps if "/" in line}
        self.assertEqual(
            sorted(os.path.basename(p) for p in loaded if "libomp" in p), [])
        self.assertTrue(any("libgomp" in p for p in loaded))

    def test_threads_from_the_environment(self):
        with mock.patch.dict(os.environ, {"HPVM_NUM_THREADS": "1"}):
            self.assertEqual(torch2hpvm.load(OUT).threads, 1)
        with mock.patch.dict(os.environ, {"HPVM_NUM_THREADS": "x"}):
            with self.assertRaises(ValueError) as e:
                torch2hpvm.load(OUT)
            self.assertEqual(str(e.exception), "HPVM_NUM_THREADS='x': "
                             "expected an integer from 0 to 1024")

    def test_bad_thread_counts(self):
        net = torch2hpvm.load(OUT)
        with self.assertRaises(LibraryError) as e:
            net.threads = -1
        self.assertEqual(str(e.exception),
                         "threads must be from 0 (all cores) to 1024, got -1")
        with self.assertRaises(TypeError) as e:
            net.threads = "2"
        self.assertEqual(str(e.exception), "threads must be an int, got str")


class DataLoaderAccuracy(unittest.TestCase):
    """Accuracy measured from Python on a plain PyTorch Dataset (no file
    exported for it) equals the program's on the same images."""

    def accuracy(self, net, dataset, batch_size, workers=0):
        correct = total = 0
        loader = DataLoader(dataset, batch_size=batch_size,
                            num_workers=workers)
        with torch.no_grad():
            for images, labels in loader:
                correct += (net(images).argmax(1) == labels).sum().item()
                total += len(labels)
        return 100.0 * correct / total

    def test_exact_and_approximated(self):
        dataset = common.FashionPairs(common.TUNE, common.TEST)
        net = torch2hpvm.load(OUT)
        for name in ("fp32", "conv1_samp231", "conv2_perf121"):
            with self.subTest(config=name):
                _, want = common.run_program(OUT, "--config", name)
                net.configure(config=name)
                self.assertAlmostEqual(self.accuracy(net, dataset, 64), want,
                                       places=4)
        self.assertAlmostEqual(
            self.accuracy(net, dataset, 33, workers=2),
            common.run_program(OUT, "--config", "conv2_perf121")[1],
            places=4)

    def test_bin_dataset_feeds_a_data_loader(self):
        test = BinDataset(DATA / "test_input.bin", DATA / "test_labels.bin",
                          (common.TEST, 1, 28, 28))
        net = torch2hpvm.load(OUT)
        _, want = common.run_program(OUT)
        self.assertAlmostEqual(self.accuracy(net, test, 64), want, places=4)


class Jit(unittest.TestCase):

    @staticmethod
    def reference9():
        return torch2hpvm.load(OUT)(IMAGES[20:29])

    def test_trace_around_the_module(self):
        net = torch2hpvm.load(OUT)

        class Around(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x * 1.0).log()

        traced = torch.jit.trace(Around(net), IMAGES[:4])
        # Traced on 4 images, run on 9 others: the graph calls hpvm_rt.
        got = traced(IMAGES[20:29])
        np.testing.assert_array_equal(got.numpy(),
                                      self.reference9().log().numpy())
        self.assertIn("torch2hpvm::run", str(traced.inner.graph))

    def test_trace_the_module(self):
        net = torch2hpvm.load(OUT)
        traced = torch.jit.trace(net, IMAGES[:2])
        np.testing.assert_array_equal(traced(IMAGES[:64]).numpy(),
                                      REFERENCE[:64])


class Errors(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.net = torch2hpvm.load(OUT)

    def test_wrong_image_shape(self):
        with self.assertRaises(ValueError) as e:
            self.net(torch.zeros(2, 3, 28, 28))
        self.assertEqual(str(e.exception),
                         "expected images of shape (N, 1, 28, 28) or "
                         "(1, 28, 28), got (2, 3, 28, 28)")
        with self.assertRaises(ValueError):
            self.net(torch.zeros(28, 28))
        # The module still works afterwards.
        np.testing.assert_array_equal(self.net(IMAGES[:64]).numpy(),
                                      REFERENCE[:64])

    def test_wrong_types(self):
        with self.assertRaises(TypeError) as e:
            self.net(torch.zeros(1, 1, 28, 28, dtype=torch.int32))
        self.assertEqual(str(e.exception), "expected floating-point images, "
                         "got dtype torch.int32")
        with self.assertRaises(TypeError) as e:
            self.net(np.zeros((1, 1, 28, 28), np.float32))
        self.assertEqual(str(e.exception),
                         "expected a torch.Tensor, got ndarray")

    def test_unknown_configuration(self):
        net = torch2hpvm.load(OUT)
        with self.assertRaises(LibraryError) as e:
            net.configure(config="nope")
        self.assertTrue(str(e.exception).startswith(
            f"{OUT}/tuner_confs.txt: no configuration named 'nope'"),
            str(e.exception))
        # The previous choice stays.
        np.testing.assert_array_equal(net(IMAGES[:64]).numpy(),
                                      REFERENCE[:64])
        with self.assertRaises(LibraryError):
            torch2hpvm.load(OUT, config=99)

    def test_configuration_of_another_model(self):
        bad = common.WORK / "other_confs.txt"
        bad.write_text("100.0\n+++++\nconf1 1.0 1.0 90.0 0.0\n"
                       "1 gpu conv fp32 11 add fp32 1\n-----\n")
        with self.assertRaises(LibraryError) as e:
            torch2hpvm.load(OUT, config_file=bad)
        self.assertEqual(str(e.exception), f"{bad}:3:1: configuration "
                         f"'conf1' covers 2 ops but the program has 14")

    def test_missing_configuration_file(self):
        with self.assertRaises(LibraryError) as e:
            torch2hpvm.load(OUT, config_file=common.WORK / "missing.txt")
        self.assertIn("missing.txt", str(e.exception))

    def test_conflicting_choices(self):
        with self.assertRaises(ValueError) as e:
            torch2hpvm.load(OUT, exact=True, config="fp32")
        self.assertEqual(str(e.exception), "exact=True excludes config, "
                         "config_file and qos_loss")
        with self.assertRaises(ValueError) as e:
            torch2hpvm.load(OUT, config="fp32", qos_loss=1)
        self.assertEqual(str(e.exception),
                         "config and qos_loss exclude each other")

    def test_not_an_output_directory(self):
        with self.assertRaises(FileNotFoundError) as e:
            torch2hpvm.load(DATA)
        self.assertEqual(str(e.exception), f"{DATA} is not a torch2hpvm "
                         f"output directory (no manifest.json)")

    def test_generated_but_not_built(self):
        out = common.WORK / "not_built"
        tune = BinDataset(DATA / "tune_input.bin", DATA / "tune_labels.bin",
                          (common.TUNE, 1, 28, 28))
        ModelExporter(common.ONNX_LENET, tune, tune, out).generate()
        with self.assertRaises(FileNotFoundError) as e:
            torch2hpvm.load(out)
        self.assertEqual(str(e.exception), f"{out} holds no built program "
                         f"(it was generated without building: compile() "
                         f"it, or run torch2hpvm-export without --no-build)")

    def test_ctypes_fallback(self):
        """Without the TorchScript class, load() warns once and returns the
        ctypes module, whose outputs are the same."""
        np.save(common.WORK / "load" / "images.npy", IMAGES[:64].numpy())
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent("""
            import sys, warnings, numpy as np, torch, torch2hpvm
            warnings.simplefilter("always")
            nets = [torch2hpvm.load(sys.argv[1]) for _ in range(2)]
            print(type(nets[0]).__name__)
            x = torch.from_numpy(np.load(sys.argv[2]))
            print(nets[1].last_run_ms())
            np.save(sys.argv[3], nets[1](x).numpy())
            print(nets[1].last_run_ms() > 0)
            """), str(OUT), str(common.WORK / "load" / "images.npy"),
            str(common.WORK / "load" / "ctypes.npy")],
            env=dict(os.environ, TORCH2HPVM_NO_EXTENSION="1"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, "CtypesModule\n-1.0\nTrue\n")
        self.assertEqual(proc.stderr.count("UserWarning"), 1, proc.stderr)
        self.assertIn("torch2hpvm: the TorchScript class is not available "
                      "($TORCH2HPVM_NO_EXTENSION is set); load() returns a "
                      "module that runs through ctypes and cannot be "
                      "scripted, saved or pickled", proc.stderr)
        np.testing.assert_array_equal(
            np.load(common.WORK / "load" / "ctypes.npy"), REFERENCE[:64])

    def test_picklable(self):
        import pickle
        back = pickle.loads(pickle.dumps(self.net))
        np.testing.assert_array_equal(back(IMAGES[:64]).numpy(),
                                      REFERENCE[:64])



class SeveralOutputs(unittest.TestCase):
    """A model with a segmentation map and an auxiliary head, exported
    without labels: load() returns both outputs with their shapes, equal
    to PyTorch's, and the program's --output .npz."""

    def test_map_and_auxiliary_head(self):
        class TwoHeads(torch.nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(3)
                self.body = torch.nn.Conv2d(1, 8, 3, padding=1)
                self.seg = torch.nn.Conv2d(8, 4, 1)
                self.aux = torch.nn.Linear(8, 3)

            def forward(self, x):
                y = torch.relu(self.body(x))
                return self.seg(y), self.aux(y.mean((2, 3)))

        model = TwoHeads().eval()
        work = common.fresh_dir("two_heads")
        onnx_path = work / "two_heads.onnx"
        torch.onnx.export(model, torch.zeros(1, 1, 28, 28), onnx_path,
                          input_names=["input"],
                          output_names=["map", "aux"], opset_version=13)
        images = IMAGES[:40]
        pairs = common.FashionPairs(0, 40)
        out = work / "out"
        ModelExporter(onnx_path, common.BareImages(pairs, 1),
                      common.BareImages(pairs, 1), out).generate(
                          batch_size=16).compile(out / "two_heads")
        net = torch2hpvm.load(out)
        self.assertEqual(net.output_names, ["map", "aux"])
        self.assertEqual(net.output_shapes, [(4, 28, 28), (3,)])
        self.assertIn("outputs=map: (N, 4, 28, 28), aux: (N, 3)", repr(net))
        seg, aux = net(images)
        with torch.no_grad():
            want_seg, want_aux = model(images)
        self.assertEqual(tuple(seg.shape), (40, 4, 28, 28))
        self.assertEqual(tuple(aux.shape), (40, 3))
        for got, want in ((seg, want_seg), (aux, want_aux)):
            err = (got - want).abs().max() / want.abs().max()
            self.assertLessEqual(float(err), 1e-5)
        one_seg, one_aux = net(images[0])
        self.assertEqual(tuple(one_seg.shape), (4, 28, 28))
        self.assertTrue(torch.equal(one_aux, net(images[:1])[1][0]))
        with self.assertRaises(RuntimeError) as e:
            net.program.forward_one(images)
        self.assertIn(f"{net.name} has 2 graph outputs: call forward() for "
                      f"the list", str(e.exception))
        traced = torch.jit.trace(net, images[:16], check_trace=False)
        t_seg, t_aux = traced(images[16:32])
        self.assertTrue(torch.equal(t_seg, net(images[16:32])[0]))
        self.assertTrue(torch.equal(t_aux, net(images[16:32])[1]))


class DirectCalls(unittest.TestCase):
    """From Python, the module calls its program through torch2hpvm._direct
    (not nn.Module's call nor TorchScript's method dispatch) wherever
    nn.Module's call has nothing to do, with the same outputs and errors;
    hooks, keyword arguments and traces go through nn.Module's call, whose
    forward() calls _direct too."""

    def counted(self, net):
        """Counts net's forward() calls in self.calls."""
        self.calls = 0
        forward = net.forward

        def counting(*args, **kwargs):
            self.calls += 1
            return forward(*args, **kwargs)
        net.forward = counting

    def test_taken_with_the_program_outputs(self):
        from torch2hpvm import _direct, runtime
        self.assertIs(runtime._direct_module(), _direct)
        self.assertIs(runtime.HPVMModule.__call__, _direct.module_call)
        net = torch2hpvm.load(OUT)
        self.counted(net)
        for batch in (1, 7, 64):
            with self.subTest(batch=batch):
                got = net(IMAGES[:batch])
                self.assertTrue(torch.equal(
                    got, net.program.forward(IMAGES[:batch])[0]))
        self.assertTrue(torch.equal(net.__call__(IMAGES[:7]),
                                    net(IMAGES[:7])))
        self.assertEqual(self.calls, 0)
        self.assertFalse(
            torch.jit.script(torch2hpvm.load(OUT))._c.hasattr("_direct"))

    def test_hooks_and_keywords_go_through_nn_module(self):
        net = torch2hpvm.load(OUT)
        self.counted(net)
        zeros = net(torch.zeros(4, 1, 28, 28))
        seen = []
        pre = net.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
        post = net.register_forward_hook(
            lambda m, args, out: seen.append(tuple(out.shape)))
        self.assertTrue(torch.equal(net(IMAGES[:4]), zeros))
        self.assertEqual(seen, [(4, 10)])
        pre.remove()
        post.remove()
        from torch.nn.modules.module import register_module_forward_hook
        handle = register_module_forward_hook(
            lambda m, args, out: out + 1 if m is net else None)
        try:
            self.assertTrue(torch.equal(net(IMAGES[:4]),
                                        net.program.forward(IMAGES[:4])[0]
                                        + 1))
        finally:
            handle.remove()
        self.assertTrue(torch.equal(net(x=IMAGES[:4]), net(IMAGES[:4])))

        class Sub(torch.Tensor):
            pass
        self.assertTrue(torch.equal(net(IMAGES[:4].as_subclass(Sub)),
                                    net(IMAGES[:4])))
        # forward() ran for the two hooked calls, the keyword and the
        # tensor subclass, not for the plain ones.
        self.assertEqual(self.calls, 4)

    def test_torch_fx_sees_the_module_call(self):
        """torch.fx patches nn.Module's call: a tracer that keeps the
        module whole records it, and the traced graph runs it."""
        import torch.fx
        net = torch2hpvm.load(OUT)

        class Around(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = net

            def forward(self, x):
                return self.net(x * 2.0).argmax(1)

        class Tracer(torch.fx.Tracer):
            def is_leaf_module(self, m, name):
                return m is net or super().is_leaf_module(m, name)

        around = Around()
        graph = Tracer().trace(around)
        self.assertIn("call_module", [n.op for n in graph.nodes])
        traced = torch.fx.GraphModule(around, graph)
        self.assertTrue(torch.equal(traced(IMAGES[:64]),
                                    net(IMAGES[:64] * 2.0).argmax(1)))

    def test_copies_call_their_own_program(self):
        import copy
        import gc
        import pickle
        from torch2hpvm import _direct
        net = torch2hpvm.load(OUT, config="fp32")
        twin = copy.deepcopy(net)
        back = pickle.loads(pickle.dumps(net))
        self.assertNotIn("_direct", net.__getstate__())
        handles = {m._direct[0] for m in (net, twin, back)}
        self.assertEqual(len(handles), 3)
        twin.configure(config="conv1_samp231")
        handle = net._direct[0]
        del net
        gc.collect()
        np.testing.assert_array_equal(
            twin(IMAGES[:50]).numpy(),
            reference(50, "--config", "conv1_samp231")[:50])
        np.testing.assert_array_equal(back(IMAGES[:64]).numpy(),
                                      REFERENCE[:64])
        with self.assertRaises(RuntimeError) as e:
            _direct.run_one(handle, IMAGES[:1])
        self.assertEqual(str(e.exception), f"no torch2hpvm Program has "
                         f"handle {handle} (it was freed)")
        with self.assertRaises(TypeError) as e:
            _direct.run_one(handle)
        self.assertEqual(str(e.exception),
                         "run_one() takes 2 arguments (1 given)")

    def test_threads_run_while_the_program_does(self):
        """The GIL is released during a run: other Python threads go on,
        and calls from several threads are each right."""
        import threading
        net = torch2hpvm.load(OUT, threads=1)
        many = IMAGES.repeat(10, 1, 1, 1)
        done = threading.Event()
        result = []

        def run():
            result.append(net(many))
            done.set()
        worker = threading.Thread(target=run)
        count = 0
        worker.start()
        while not done.is_set():
            count += 1
        worker.join()
        # (With the GIL held for the run, this thread would not count.)
        self.assertGreater(count, 1000)
        self.assertTrue(torch.equal(result[0], net.program.forward(many)[0]))
        outs = {}

        def slices(k):
            outs[k] = [net(IMAGES[s:s + 64]) for _ in range(5)
                       for s in range(0, common.TEST, 64)]
        threads = [threading.Thread(target=slices, args=(k,))
                   for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        want = np.tile(reference(64, "--threads", "1"), (5, 1))
        for k in range(3):
            np.testing.assert_array_equal(torch.cat(outs[k]).numpy(), want)


if __name__ == "__main__":
    unittest.main()
