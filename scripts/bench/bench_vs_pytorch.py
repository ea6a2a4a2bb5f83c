#!/usr/bin/python3
"""bench_vs_pytorch.py - hpvm_rt against PyTorch on one model, same batch and
threads, in one run: images/s of torch2hpvm, PyTorch eager and PyTorch frozen
TorchScript (torch.jit.freeze + torch.jit.optimize_for_inference), and the
ratios, as a table and as JSON.

The torch2hpvm side is either
  --binary PATH   a built generated program (the binary, or the export folder
                  holding build/<name>), run as
                  `PATH test --batch-size B --repeat R --print-time --threads T
                  --quiet`; its images/s is read from the --print-time output;
  (default)       scripts/bench/kernel_bench.sh: the same network run layer by
                  layer through hpvm_rt's kernels (no executor), which measures
                  the kernels alone.
The PyTorch side is the end-to-end tests' model named by --net
(test_frontend/nets: HPVM's benchmark nets of reference section 9 and
torchvision nets) with the tests' seeded, well-scaled random weights.

Timing: every configuration runs --warmup batches, then --repeat batches; the
fastest batch gives images/s (as `tvmc run` reports min). The CPU time per
batch (process CPU time, all threads, mean over the timed batches; for a
binary, the difference between a run with and without the timed batches) is
compared too: on a shared machine it is the steadier figure, at 1 thread
above all. PyTorch runs in a child process with OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE removed from its environment (they halve PyTorch's speed on
this machine) and torch.set_num_threads(T) set explicitly (PyTorch 1.13 would
use 1 thread otherwise). Nothing else in the environment changes.

Examples:
  scripts/bench/bench_vs_pytorch.py --net vgg16_cifar10
  scripts/bench/bench_vs_pytorch.py --net resnet18_cifar10 --batch 64 \\
      --threads 1,2 --binary out/build/resnet18 --json result.json
"""

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# The nets kernel_bench.cpp builds (any test_frontend net works with
# --binary).
KERNEL_NETS = ["lenet_mnist", "alexnet_cifar10", "alexnet2_cifar10",
               "vgg16_cifar10", "vgg16_cifar100", "resnet18_cifar10",
               "mobilenet_cifar10", "alexnet_imagenet", "vgg16_imagenet",
               "resnet50_imagenet"]


# --- PyTorch side -------------------------------------------------------------

def build_torch_net(name):
    """The end-to-end tests' model `name` (test_frontend/nets: HPVM's
    benchmark nets and torchvision ones) with their seeded, well-scaled
    random weights. Returns (module, input shape without batch)."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "test_frontend"))
    import nets
    from nets.init import randomize
    try:
        spec = nets.model(name)
    except KeyError as e:
        sys.exit("bench_vs_pytorch: %s" % e.args[0])
    model = spec.build().eval()
    gen = torch.Generator().manual_seed(1)
    randomize(model, torch.randn(8, *spec.shape, generator=gen), 0)
    return model, spec.shape


def torch_worker(args):
    """Child process: times eager and frozen PyTorch, prints JSON."""
    import time
    import torch
    torch.set_num_threads(args.threads_one)
    torch.manual_seed(0)
    model, shape = build_torch_net(args.net)
    x = torch.randn(args.batch_one, *shape)

    def timeit(fn):
        with torch.no_grad():
            for _ in range(args.warmup + 2):
                fn(x)
            walls, cpus = [], []
            for _ in range(args.repeat):
                c0, t0 = time.process_time(), time.perf_counter()
                fn(x)
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
        best = min(range(len(walls)), key=walls.__getitem__)
        return {"min_s": walls[best], "cpu_s": sum(cpus) / len(cpus),
                "median_s": sorted(walls)[len(walls) // 2],
                "images_per_s": args.batch_one / walls[best]}

    out = {"eager": timeit(model)}
    with torch.no_grad():
        # Scripted where TorchScript compiles the model, else traced (the
        # detectors index ModuleLists by a loop variable).
        try:
            jit, how = torch.jit.script(model), "script"
        except Exception:  # noqa: BLE001 (any scripting failure)
            jit, how = torch.jit.trace(model, x), "trace"
        frozen = torch.jit.optimize_for_inference(torch.jit.freeze(jit))
    out["frozen"] = timeit(frozen)
    out["frozen"]["from"] = how
    print(json.dumps(out))


# --- torch2hpvm side ----------------------------------------------------------

def run_kernel_bench(net, batch, threads, repeat, warmup):
    cmd = [os.path.join(ROOT, "scripts", "bench", "kernel_bench.sh"),
           "--net", net, "--batch", str(batch), "--threads", str(threads),
           "--repeat", str(repeat), "--warmup", str(warmup), "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.exit("bench_vs_pytorch: %s failed (exit %d):\n%s"
                 % (" ".join(cmd), res.returncode, res.stderr))
    r = json.loads(res.stdout.strip().splitlines()[-1])
    return {"min_s": r["min_s"], "cpu_s": r["mean_cpu_s"],
            "median_s": r["median_s"], "images_per_s": r["images_per_s"]}


def find_binary(path):
    """(binary, export folder) for PATH: an export folder (its manifest.json
    names the binary) or the binary itself (inside <export>/build/)."""
    if os.path.isdir(path):
        folder = path
        manifest = os.path.join(folder, "manifest.json")
        try:
            with open(manifest) as f:
                binary = os.path.join(folder, json.load(f)["binary"])
        except (OSError, ValueError, KeyError) as e:
            sys.exit("bench_vs_pytorch: cannot read the binary's name from "
                     "%s: %s" % (manifest, e))
    else:
        binary = path
        folder = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        sys.exit("bench_vs_pytorch: no generated binary at %s (pass an "
                 "export folder or its build/<model>)" % binary)
    if not os.path.isdir(os.path.join(folder, "weights")):
        sys.exit("bench_vs_pytorch: %s has no weights/ folder; pass the "
                 "binary of an export folder" % folder)
    return os.path.abspath(binary), os.path.abspath(folder)


def export_facts(folder):
    """(input shape, test images) from the export's manifest.json."""
    with open(os.path.join(folder, "manifest.json")) as f:
        m = json.load(f)
    return tuple(m["input_shape"]), int(m["datasets"]["test"]["images"])


def run_binary(binary, folder, batch, threads, repeat, warmup, workdir):
    """Times batches of `batch` images, `repeat` times, through the
    generated program. A model folder in `workdir` links the export's
    weights and holds random images, as many as the export's test set (the
    program checks the count), so the export needs at least `batch`."""
    import numpy as np
    shape, images = export_facts(folder)
    if images < batch:
        sys.exit("bench_vs_pytorch: %s was exported with %d test images, "
                 "fewer than the batch of %d; export it with a larger --test "
                 "set" % (folder, images, batch))
    model_dir = os.path.join(workdir, "data")
    if not os.path.isdir(model_dir):
        os.makedirs(model_dir)
        os.symlink(os.path.join(folder, "weights"),
                   os.path.join(model_dir, "weights"))
        rng = np.random.default_rng(0)
        rng.standard_normal((images,) + shape, dtype=np.float32).tofile(
            os.path.join(model_dir, "test_input.bin"))
        np.zeros(images, dtype=np.int32).tofile(
            os.path.join(model_dir, "test_labels.bin"))
    def once(rep):
        cmd = [binary, "test", "--model-dir", model_dir, "--batch-size",
               str(batch), "--limit", str(batch), "--repeat", str(rep),
               "--print-time", "--threads", str(threads), "--quiet"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        res = subprocess.run(cmd, capture_output=True, text=True,
                             check=False, cwd=model_dir)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if res.returncode != 0:
            sys.exit("bench_vs_pytorch: %s failed (exit %d):\n%s%s"
                     % (" ".join(cmd), res.returncode, res.stdout,
                        res.stderr))
        cpu = (after.ru_utime + after.ru_stime -
               before.ru_utime - before.ru_stime)
        return cmd, res.stdout + res.stderr, cpu

    # The CPU time of `repeat` batches: a run of warmup + repeat batches
    # minus a run of the warmup alone (start-up, weight loading and the
    # first batch's weight reorders cancel out).
    cmd, text, cpu_all = once(warmup + repeat)
    _, _, cpu_warm = once(warmup)
    t = print_time_summary(text, cmd)
    best = t["min_s"]
    return {"images_per_s": batch / best if best > 0 else t["throughput"],
            "throughput_images_per_s": t["throughput"],
            "min_s": best, "median_s": t["median_s"],
            "cpu_s": max(cpu_all - cpu_warm, 0.0) / repeat}


def print_time_summary(text, cmd):
    """A generated program's --print-time summary in `text`: a header "mean
    (ms) median (ms) max (ms) min (ms) std (ms)", a row of numbers, and
    "Throughput: X images/s" (mean-based). Exits naming `cmd` without one."""
    m = re.search(r"Throughput:\s*([0-9.]+)\s*images/s", text)
    row = re.search(r"min \(ms\).*\n\s*([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)"
                    r"\s+([0-9.]+)", text)
    if not m or not row:
        sys.exit("bench_vs_pytorch: no --print-time summary in the output "
                 "of %s:\n%s" % (" ".join(cmd), text))
    return {"throughput": float(m.group(1)),
            "median_s": float(row.group(2)) / 1000.0,
            "min_s": float(row.group(4)) / 1000.0}


def run_torch(net, batch, threads, repeat, warmup):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    cmd = ["/usr/bin/python3", os.path.abspath(__file__), "--torch-worker",
           "--net", net, "--batch", str(batch), "--threads", str(threads),
           "--repeat", str(repeat), "--warmup", str(warmup)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env,
                         check=False)
    if res.returncode != 0:
        sys.exit("bench_vs_pytorch: PyTorch worker failed (exit %d):\n%s"
                 % (res.returncode, res.stderr))
    return json.loads(res.stdout.strip().splitlines()[-1])


def int_list(text):
    try:
        vals = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("expected integers like 64,500")
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError("expected positive integers")
    return vals


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--net", required=True,
                    help="model name of test_frontend/nets (without "
                    "--binary one of: %s)" % ", ".join(KERNEL_NETS))
    ap.add_argument("--batch", type=int_list, default=[64, 500],
                    help="batch sizes, comma separated (default 64,500)")
    ap.add_argument("--threads", type=int_list, default=[1, 2],
                    help="thread counts, comma separated (default 1,2)")
    ap.add_argument("--repeat", type=int, default=5,
                    help="timed batches per configuration (default 5)")
    ap.add_argument("--warmup", type=int, default=1,
                    help="untimed batches first (default 1)")
    ap.add_argument("--binary", help="generated program or export folder")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--torch-worker", action="store_true",
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")

    if args.torch_worker:
        args.batch_one, args.threads_one = args.batch[0], args.threads[0]
        torch_worker(args)
        return

    binary, folder = find_binary(args.binary) if args.binary else (None,
                                                                    None)
    if not binary and args.net not in KERNEL_NETS:
        ap.error("kernel_bench knows no net '%s' (known: %s); pass --binary "
                 "for other nets" % (args.net, ", ".join(KERNEL_NETS)))
    workdir = tempfile.mkdtemp(prefix="bench_vs_pytorch.")
    rows = []
    try:
        for batch in args.batch:
            for threads in args.threads:
                if binary:
                    ours = run_binary(binary, folder, batch, threads,
                                      args.repeat, max(args.warmup, 1),
                                      workdir)
                else:
                    ours = run_kernel_bench(args.net, batch, threads,
                                            args.repeat, args.warmup)
                pt = run_torch(args.net, batch, threads, args.repeat,
                               args.warmup)
                row = {"net": args.net, "batch": batch, "threads": threads,
                       "hpvm_rt": ours, "eager": pt["eager"],
                       "frozen": pt["frozen"]}
                for k in ("eager", "frozen"):
                    row["vs_" + k] = (ours["images_per_s"] /
                                      pt[k]["images_per_s"])
                    if ours["cpu_s"] > 0:
                        row["cpu_vs_" + k] = pt[k]["cpu_s"] / ours["cpu_s"]
                rows.append(row)
                print_row(row, header=len(rows) == 1,
                          source="binary" if binary else "kernels")
                sys.stdout.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = {"source": binary or "kernel_bench", "rows": rows}
    print(json.dumps(result, indent=1))
    if args.json:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(
            os.path.abspath(args.json)) or ".")
        with os.fdopen(fd, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        os.replace(tmp, args.json)


def print_row(row, header, source):
    if header:
        print("%-18s %5s %3s | %9s %9s %9s | %8s %8s | %8s %8s"
              % ("net", "batch", "thr", source, "eager", "frozen",
                 "x eager", "x frozen", "cpu x e", "cpu x f"))
    cpu_e = row.get("cpu_vs_eager")
    cpu_f = row.get("cpu_vs_frozen")
    print("%-18s %5d %3d | %9.1f %9.1f %9.1f | %8.2f %8.2f | %8s %8s"
          % (row["net"], row["batch"], row["threads"],
             row["hpvm_rt"]["images_per_s"], row["eager"]["images_per_s"],
             row["frozen"]["images_per_s"], row["vs_eager"],
             row["vs_frozen"],
             "%.2f" % cpu_e if cpu_e else "-",
             "%.2f" % cpu_f if cpu_f else "-"))


if __name__ == "__main__":
    main()
