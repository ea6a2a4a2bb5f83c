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
The PyTorch side is the architecture named by --net (HPVM's benchmark nets,
reference section 9), random weights: speed does not depend on them.

Timing: every configuration runs --warmup batches, then --repeat batches; the
fastest batch gives images/s (as `tvmc run` reports min). The process CPU time
of the fastest batch is reported too: on a shared machine it is the steadier
figure at 1 thread. PyTorch runs in a child process with OPENBLAS_CORETYPE and
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
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
NETS = ["lenet", "alexnet_cifar10", "alexnet2_cifar10", "vgg16_cifar10",
        "vgg16_cifar100", "resnet18_cifar10", "mobilenet_cifar10",
        "alexnet_imagenet", "vgg16_imagenet", "resnet50_imagenet"]


# --- PyTorch models (reference section 9) -----------------------------------

def build_torch_net(name):
    """Returns (module, input shape without batch) for a benchmark net."""
    import torch.nn as nn

    def conv(cin, cout, k, s=1, p=0, act=None, bn=False, groups=1,
             bias=True):
        layers = [nn.Conv2d(cin, cout, k, s, p, groups=groups, bias=bias)]
        if bn:
            layers.append(nn.BatchNorm2d(cout, eps=1e-3))
        if act == "relu":
            layers.append(nn.ReLU())
        elif act == "tanh":
            layers.append(nn.Tanh())
        return layers

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, down):
            super().__init__()
            self.main = nn.Sequential(
                *conv(cin, cout, 3, 2 if down else 1, 1, "relu"),
                *conv(cout, cout, 3, 1, 1))
            self.short = (nn.Conv2d(cin, cout, 1, 2) if down
                          else nn.Identity())
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.main(x) + self.short(x))

    class Bottleneck(nn.Module):
        def __init__(self, cin, planes, stride):
            super().__init__()
            self.main = nn.Sequential(
                *conv(cin, planes, 1, stride, 0, "relu", True),
                *conv(planes, planes, 3, 1, 1, "relu", True),
                *conv(planes, 4 * planes, 1, 1, 0, None, True))
            if stride != 1 or cin != 4 * planes:
                self.short = nn.Sequential(
                    *conv(cin, 4 * planes, 1, stride, 0, None, True))
            else:
                self.short = nn.Identity()
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.main(x) + self.short(x))

    def vgg(classes, imagenet):
        cfg = [64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0,
               512, 512, 512, 0]
        layers, c = [], 3
        for v in cfg:
            if v == 0:
                layers.append(nn.MaxPool2d(2))
            else:
                layers += conv(c, v, 3, 1, 1, "relu")
                c = v
        layers.append(nn.Flatten())
        if imagenet:
            layers += [nn.Linear(25088, 4096), nn.ReLU(),
                       nn.Linear(4096, 4096), nn.ReLU(),
                       nn.Linear(4096, classes)]
        else:
            layers += [nn.Linear(512, 512), nn.ReLU(),
                       nn.Linear(512, classes)]
        return layers

    cifar = (3, 32, 32)
    if name == "lenet":
        layers = (conv(1, 32, 5, 1, 2, "tanh") + [nn.MaxPool2d(2)] +
                  conv(32, 64, 5, 1, 2, "tanh") + [nn.MaxPool2d(2)] +
                  [nn.Flatten(), nn.Linear(3136, 1024), nn.Tanh(),
                   nn.Linear(1024, 10), nn.Tanh()])
        shape = (1, 28, 28)
    elif name == "alexnet_cifar10":
        layers = (conv(3, 64, 11, 1, 5, "tanh") + [nn.MaxPool2d(2)] +
                  conv(64, 192, 5, 1, 2, "tanh") + [nn.MaxPool2d(2)] +
                  conv(192, 384, 3, 1, 1, "tanh") +
                  conv(384, 256, 3, 1, 1, "tanh") +
                  conv(256, 256, 3, 1, 1, "tanh") + [nn.MaxPool2d(2)] +
                  [nn.Flatten(), nn.Linear(4096, 10)])
        shape = cifar
    elif name == "alexnet2_cifar10":
        layers, c = [], 3
        for v in (32, 64, 128):
            layers += (conv(c, v, 3, 1, 1, "tanh") +
                       conv(v, v, 3, 1, 1, "tanh") + [nn.MaxPool2d(2)])
            c = v
        layers += [nn.Flatten(), nn.Linear(2048, 10)]
        shape = cifar
    elif name in ("vgg16_cifar10", "vgg16_cifar100"):
        layers = vgg(10 if name == "vgg16_cifar10" else 100, False)
        shape = cifar
    elif name == "vgg16_imagenet":
        layers = vgg(1000, True)
        shape = (3, 224, 224)
    elif name == "resnet18_cifar10":
        layers, c = conv(3, 16, 3, 1, 1, "relu"), 16
        for v in (16, 32, 64):
            for b in range(3):
                layers.append(BasicBlock(c, v, b == 0 and v != 16))
                c = v
        layers += [nn.AvgPool2d(8), nn.Flatten(), nn.Linear(64, 10)]
        shape = cifar
    elif name == "mobilenet_cifar10":
        layers, c = conv(3, 32, 3, 1, 1, "relu", True, bias=False), 32
        for s, out in ((1, 64), (2, 128), (1, 128), (2, 256), (1, 256),
                       (2, 512), (1, 512), (1, 512), (1, 512), (1, 512),
                       (1, 512), (2, 1024), (1, 1024)):
            layers += conv(c, c, 3, s, 1, "relu", True, groups=c, bias=False)
            layers += conv(c, out, 1, 1, 0, "relu", True, bias=False)
            c = out
        layers += [nn.AvgPool2d(2), nn.Flatten(), nn.Linear(1024, 10)]
        shape = cifar
    elif name == "alexnet_imagenet":
        layers = (conv(3, 64, 11, 4, 2, "relu") + [nn.MaxPool2d(3, 2)] +
                  conv(64, 192, 5, 1, 2, "relu") + [nn.MaxPool2d(3, 2)] +
                  conv(192, 384, 3, 1, 1, "relu") +
                  conv(384, 256, 3, 1, 1, "relu") +
                  conv(256, 256, 3, 1, 1, "relu") + [nn.MaxPool2d(3, 2)] +
                  [nn.Flatten(), nn.Linear(9216, 4096), nn.ReLU(),
                   nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1000)])
        shape = (3, 224, 224)
    elif name == "resnet50_imagenet":
        layers = (conv(3, 64, 7, 2, 3, "relu") + [nn.MaxPool2d(3, 2),
                                                  nn.BatchNorm2d(64, 1e-3)])
        c = 64
        for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2),
                                       (512, 3, 2)):
            for b in range(blocks):
                layers.append(Bottleneck(c, planes, stride if b == 0 else 1))
                c = 4 * planes
        layers += [nn.AvgPool2d(7), nn.Flatten(), nn.Linear(2048, 1000)]
        shape = (3, 224, 224)
    else:
        raise ValueError("unknown net '%s' (known: %s)" % (name,
                                                          ", ".join(NETS)))
    layers.append(nn.Softmax(dim=1))
    model = nn.Sequential(*layers)
    # Non-trivial batch-norm statistics, as trained nets have.
    import torch
    gen = torch.Generator().manual_seed(0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1, generator=gen)
            m.running_var.uniform_(0.5, 1.5, generator=gen)
    return model.eval(), shape


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
        return {"min_s": walls[best], "min_cpu_s": min(cpus),
                "median_s": sorted(walls)[len(walls) // 2],
                "images_per_s": args.batch_one / walls[best]}

    out = {"eager": timeit(model)}
    with torch.no_grad():
        frozen = torch.jit.optimize_for_inference(
            torch.jit.freeze(torch.jit.script(model)))
    out["frozen"] = timeit(frozen)
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
    return {"min_s": r["min_s"], "min_cpu_s": r["min_cpu_s"],
            "median_s": r["median_s"], "images_per_s": r["images_per_s"]}


def find_binary(path):
    """The generated program: PATH itself, or the one executable in
    PATH/build named after the export folder's manifest."""
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    build = os.path.join(path, "build")
    if os.path.isdir(build):
        cands = [os.path.join(build, f) for f in sorted(os.listdir(build))
                 if os.path.isfile(os.path.join(build, f))
                 and os.access(os.path.join(build, f), os.X_OK)]
        if len(cands) == 1:
            return cands[0]
        if cands:
            sys.exit("bench_vs_pytorch: several executables in %s (%s); "
                     "pass the binary itself" % (build, ", ".join(cands)))
    sys.exit("bench_vs_pytorch: no generated binary at %s (expected an "
             "executable or an export folder with build/<model>)" % path)


def run_binary(binary, batch, threads, repeat):
    cmd = [binary, "test", "--batch-size", str(batch), "--limit", str(batch),
           "--repeat", str(repeat), "--print-time", "--threads",
           str(threads), "--quiet"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False,
                         cwd=os.path.dirname(os.path.dirname(binary)))
    if res.returncode != 0:
        sys.exit("bench_vs_pytorch: %s failed (exit %d):\n%s%s"
                 % (" ".join(cmd), res.returncode, res.stdout, res.stderr))
    text = res.stdout + res.stderr
    m = re.search(r"([0-9.]+)\s*images/s", text)
    if not m:
        sys.exit("bench_vs_pytorch: no 'images/s' in the output of %s:\n%s"
                 % (" ".join(cmd), text))
    ips = float(m.group(1))
    mins = re.search(r"min[^0-9]*([0-9.]+)\s*(ms|s)\b", text)
    out = {"images_per_s": ips, "min_s": batch / ips, "min_cpu_s": None,
           "median_s": None}
    if mins:
        out["min_s"] = float(mins.group(1)) / (1000 if mins.group(2) == "ms"
                                               else 1)
    return out


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
    ap.add_argument("--net", required=True, choices=NETS)
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

    binary = find_binary(args.binary) if args.binary else None
    rows = []
    for batch in args.batch:
        for threads in args.threads:
            if binary:
                ours = run_binary(binary, batch, threads, args.repeat)
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
                if ours["min_cpu_s"]:
                    row["cpu_vs_" + k] = (pt[k]["min_cpu_s"] /
                                          ours["min_cpu_s"])
            rows.append(row)
            print_row(row, header=len(rows) == 1,
                      source="binary" if binary else "kernels")
            sys.stdout.flush()
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
