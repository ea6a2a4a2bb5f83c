#!/usr/bin/python3
"""tv_classifiers.py - torch2hpvm against frozen TorchScript on torchvision
classifiers at 224x224 (issue #11's benchmark), in one run: exports
EfficientNet-B0, MobileNet v3 (large), DenseNet-121 and ResNet-50 the way the
e2e tests' pt_* rows do (test_frontend/nets: PyTorch-style export, seeded
well-scaled random weights), builds them, then times each at every batch and
thread count with scripts/bench/bench_vs_pytorch.py --binary (torch2hpvm,
PyTorch eager and frozen TorchScript, same batch and threads), and writes
one JSON and a markdown table.

Measurement: the configurations (model x batch x threads) are visited in
--rounds rounds, each round visiting all of them (so a slow spell of the
shared machine hits every configuration a little rather than one a lot);
each visit is one bench_vs_pytorch.py run (torch2hpvm, then PyTorch), whose
figure is the fastest of --repeat batches. A configuration's result is the
best images/s over the rounds, per side; the ratio is torch2hpvm's over
frozen TorchScript's (the per-round ratios are kept too). Before every
visit the script waits until no compiler, build tool or test run
(cc1plus, clang, ld, ninja, make, ctest, ...) has run for --quiet-seconds;
a visit during which one started is measured again.

PyTorch must use OpenBLAS (Debian: libopenblas0-pthread); with the
reference BLAS (libblas3) its GEMM-based paths are several times slower and
every ratio flatters torch2hpvm, so the script stops if PyTorch loads
another BLAS. It installs nothing.

Examples:
  scripts/bench/tv_classifiers.py
  scripts/bench/tv_classifiers.py --models resnet50 --batch 1 --threads 2 \\
      --rounds 1 --out /tmp/r
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "scripts", "bench", "bench_vs_pytorch.py")
# torchvision name -> the e2e row (test_frontend/nets) and a display name.
MODELS = {
    "efficientnet_b0": ("pt_efficientnet_b0_224", "EfficientNet-B0"),
    "mobilenet_v3_large": ("pt_mobilenet_v3_large_224", "MobileNet v3 large"),
    "densenet121": ("pt_densenet121_224", "DenseNet-121"),
    "resnet50": ("pt_resnet50_224", "ResNet-50"),
    # Not in the four (measured with --models swin_t).
    "swin_t": ("pt_swin_t_224", "Swin-T"),
}
DEFAULT_MODELS = ["efficientnet_b0", "mobilenet_v3_large", "densenet121",
                  "resnet50"]
# Process names (/proc/PID/comm) of compilers, build tools and ctest (a
# test run of the other developers loads every core as a build does).
BUILD_TOOLS = re.compile(r"^(cc1|cc1plus|collect2|ld|ld\.bfd|ld\.gold|"
                         r"ld\.lld|lld|ninja|make|cmake|ctest|"
                         r"clang(\+\+)?(-[0-9]+)?)$")


def log(msg):
    print(f"[tv_classifiers] {msg}", flush=True)


# --- checks -------------------------------------------------------------------

def check_openblas():
    """Stops unless libopenblas0-pthread is installed and PyTorch loads it
    (with OPENBLAS_* removed, as bench_vs_pytorch.py runs PyTorch)."""
    st = subprocess.run(["dpkg-query", "-W", "-f=${Status}",
                         "libopenblas0-pthread"], capture_output=True,
                        text=True, check=False)
    if "install ok installed" not in st.stdout:
        sys.exit("tv_classifiers: libopenblas0-pthread is not installed, so "
                 "PyTorch would use the reference BLAS (libblas3) and run "
                 "several times slower than it does for users; install it "
                 "(apt-get install libopenblas0-pthread) and rerun")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    probe = ("import torch\n"
             "print(' '.join(sorted({l.split()[-1] for l in "
             "open('/proc/self/maps') if 'blas' in l})))")
    res = subprocess.run(["/usr/bin/python3", "-c", probe], env=env,
                         capture_output=True, text=True, check=False)
    if res.returncode != 0 or "openblas" not in res.stdout:
        sys.exit("tv_classifiers: PyTorch does not load OpenBLAS (it maps: "
                 "%s); select it with update-alternatives --config "
                 "libblas.so.3-x86_64-linux-gnu\n%s"
                 % (res.stdout.strip() or "nothing", res.stderr[-2000:]))
    return res.stdout.strip()


def build_tools_running():
    """Names of the compilers and build tools running now."""
    found = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if BUILD_TOOLS.match(comm):
            found.add(comm)
    return sorted(found)


def wait_quiet(seconds):
    """Waits until no build tool has run for `seconds`; returns the time
    waited."""
    start = time.monotonic()
    quiet_since = time.monotonic()
    said = False
    while time.monotonic() - quiet_since < seconds:
        busy = build_tools_running()
        if busy:
            if not said:
                log(f"waiting: {', '.join(busy)} running")
                said = True
            quiet_since = time.monotonic()
        time.sleep(0.5)
    return time.monotonic() - start


class BuildWatch:
    """Notes any build tool seen while a measurement runs."""

    def __init__(self):
        self.seen = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.seen.update(build_tools_running())
            self._stop.wait(0.5)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


# --- export -------------------------------------------------------------------

def export(name, exporter, work, images, dynamic_batch=False):
    """Exports test_frontend/nets row `name` as run_e2e.py does (seed,
    calibration, PyTorch-style ONNX; with `dynamic_batch`, a symbolic batch
    in the ONNX file) with `images` random test images, and builds it.
    Returns the export folder."""
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(ROOT, "test_frontend"))
    import nets
    import run_e2e
    from e2e import harness as H
    spec = nets.model(name)
    folder = os.path.join(work, name)
    out = os.path.join(folder, "out")
    stamp = os.path.join(folder, "exported.json")
    want = {"images": images, "exporter_mtime": os.path.getmtime(exporter)}
    if dynamic_batch:
        want["dynamic_batch"] = True
    try:
        with open(stamp) as f:
            if json.load(f) == want and os.path.isdir(out):
                log(f"{name}: export in {out} is current, reused")
                return out
    except (OSError, ValueError):
        pass
    os.makedirs(folder, exist_ok=True)
    seed = run_e2e.seed_of(spec.name)
    model = run_e2e.build_model(spec.build, spec.shape, seed,
                                spec.calib_images or 4)
    onnx_path = H.export_onnx(model, spec.shape, spec.opset,
                              os.path.join(folder, name + ".onnx"),
                              dynamic_axes={"input": {0: "batch"},
                                            "output": {0: "batch"}}
                              if dynamic_batch else None,
                              **H.EXPORTS[spec.export])
    gen = torch.Generator().manual_seed(seed + 3)
    x = torch.randn((images,) + tuple(spec.shape), generator=gen).numpy()
    test_in, _ = H.write_dataset(folder, "test", x,
                                 np.zeros(images, np.int32))
    tune = min(2, images)  # (--batch 1 exports one image)
    tune_in, _ = H.write_dataset(folder, "tune", x[:tune],
                                 np.zeros(tune, np.int32))
    cmd = H.export_cmd(exporter, onnx_path, tune_in, test_in, out)
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.exit(f"tv_classifiers: {' '.join(cmd)} failed (exit "
                 f"{res.returncode}):\n{res.stdout[-3000:]}"
                 f"{res.stderr[-3000:]}")
    log(f"{name}: exported and built in {time.monotonic() - t0:.0f} s")
    with open(stamp, "w") as f:
        json.dump(want, f)
    return out


# --- measurement --------------------------------------------------------------

def measure(net, folder, batch, threads, repeat, quiet, attempts):
    """One bench_vs_pytorch.py run of one configuration, repeated while a
    build tool ran during it. Returns its row plus what it waited for."""
    for attempt in range(1, attempts + 1):
        waited = wait_quiet(quiet)
        fd, tmp = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        cmd = ["/usr/bin/python3", BENCH, "--net", net, "--binary", folder,
               "--batch", str(batch), "--threads", str(threads),
               "--repeat", str(repeat), "--json", tmp]
        with BuildWatch() as watch:
            t0 = time.monotonic()
            res = subprocess.run(cmd, capture_output=True, text=True,
                                 check=False)
            seconds = time.monotonic() - t0
        try:
            if res.returncode != 0:
                sys.exit(f"tv_classifiers: {' '.join(cmd)} failed (exit "
                         f"{res.returncode}):\n{res.stdout[-3000:]}"
                         f"{res.stderr[-3000:]}")
            with open(tmp) as f:
                row = json.load(f)["rows"][0]
        finally:
            os.remove(tmp)
        row.update(seconds=round(seconds, 1), waited_s=round(waited, 1),
                   attempt=attempt, load_1min=os.getloadavg()[0])
        if not watch.seen:
            return row
        log(f"{net} b{batch} t{threads}: {', '.join(sorted(watch.seen))} "
            f"ran during the measurement; measuring again")
    row["overlapped_build"] = sorted(watch.seen)
    return row


def summarize(visits):
    """Best of the rounds per side, and the per-round ratios."""
    best = lambda side: max(v[side]["images_per_s"] for v in visits)
    ours, frozen, eager = best("hpvm_rt"), best("frozen"), best("eager")
    ratios = [v["vs_frozen"] for v in visits]
    return {"torch2hpvm_images_per_s": ours,
            "frozen_images_per_s": frozen, "eager_images_per_s": eager,
            "vs_frozen": ours / frozen, "vs_eager": ours / eager,
            "round_vs_frozen": ratios,
            "cpu_vs_frozen": [v.get("cpu_vs_frozen") for v in visits],
            "overlapped_build": any("overlapped_build" in v
                                    for v in visits)}


def write_results(args, blas, configs, visits, partial):
    """Writes OUT.json and OUT.md from the visits so far; returns the
    markdown."""
    results = []
    for m, b, t in configs:
        if not visits[(m, b, t)]:
            continue
        s = summarize(visits[(m, b, t)])
        results.append({"model": MODELS[m][1], "torchvision": m,
                        "net": MODELS[m][0], "batch": b, "threads": t,
                        **s, "visits": visits[(m, b, t)]})
    result = {"date": time.strftime("%Y-%m-%d"),
              "machine": "%s, %d CPUs" % (cpu_model(), os.cpu_count()),
              "exporter": os.path.abspath(args.exporter),
              "pytorch_blas": blas, "rounds": args.rounds,
              "repeat": args.repeat, "partial": partial, "results": results}
    write_atomic(args.out + ".json", json.dumps(result, indent=1) + "\n")
    md = markdown(result)
    write_atomic(args.out + ".md", md)
    return md


def markdown(result):
    lines = [
        "# torch2hpvm vs frozen TorchScript, torchvision classifiers at "
        "224x224",
        "",
        "`scripts/bench/tv_classifiers.py` (%s); %s. Images/s: best of %d "
        "rounds (each the fastest of %d batches); ratio: torch2hpvm / frozen "
        "TorchScript (per-round range in brackets); eager PyTorch for "
        "reference.%s"
        % (result["date"], result["machine"], result["rounds"],
           result["repeat"], " PARTIAL: interrupted; the visits column "
           "says how many rounds each has." if result["partial"] else ""),
        "",
        "| model | batch | threads | torch2hpvm img/s | TorchScript img/s "
        "| ratio | eager img/s | visits |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["results"]:
        rr = r["round_vs_frozen"]
        lines.append(
            "| %s | %d | %d | %.1f | %.1f | %.2fx [%.2f-%.2f]%s | %.1f | %d |"
            % (r["model"], r["batch"], r["threads"],
               r["torch2hpvm_images_per_s"], r["frozen_images_per_s"],
               r["vs_frozen"], min(rr), max(rr),
               " (build overlapped)" if r["overlapped_build"] else "",
               r["eager_images_per_s"], len(rr)))
    below = [r for r in result["results"] if r["vs_frozen"] < 1.0]
    lines += ["", "%d of %d configurations at or above 1.0x."
              % (len(result["results"]) - len(below),
                 len(result["results"]))]
    return "\n".join(lines) + "\n"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def int_list(text):
    return [int(v) for v in text.split(",")]


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="torchvision names, comma separated, of %s "
                    "(default: %s)" % (",".join(MODELS),
                                       ",".join(DEFAULT_MODELS)))
    ap.add_argument("--batch", type=int_list, default=[1, 16])
    ap.add_argument("--threads", type=int_list, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3,
                    help="visits of every configuration (default 3)")
    ap.add_argument("--repeat", type=int, default=10,
                    help="timed batches per visit (default 10)")
    ap.add_argument("--quiet-seconds", type=float, default=10,
                    help="build-tool-free time before a visit (default 10)")
    ap.add_argument("--attempts", type=int, default=4,
                    help="visits of a configuration before one a build "
                    "overlapped is kept (flagged; default 4)")
    ap.add_argument("--exporter", default=os.path.join(
        ROOT, "build", "frontend", "torch2hpvm-export"))
    ap.add_argument("--work", default="/tmp/tv_classifiers",
                    help="exports go here (reused while current; default "
                    "/tmp/tv_classifiers)")
    ap.add_argument("--out", default=os.path.join(
        ROOT, "scripts", "bench", "results", "tv_classifiers"),
        help="writes OUT.json and OUT.md (default "
        "scripts/bench/results/tv_classifiers)")
    args = ap.parse_args()
    models = args.models.split(",")
    for m in models:
        if m not in MODELS:
            ap.error(f"unknown model {m} (known: {', '.join(MODELS)})")
    if not os.access(args.exporter, os.X_OK):
        ap.error(f"no exporter at {args.exporter}; build torch2hpvm first")

    blas = check_openblas()
    log(f"PyTorch uses {blas}")
    images = max(args.batch)
    folders = {m: export(MODELS[m][0], args.exporter, args.work, images)
               for m in models}

    configs = [(m, b, t) for m in models for b in args.batch
               for t in args.threads]
    visits = {c: [] for c in configs}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    for rnd in range(1, args.rounds + 1):
        for m, b, t in configs:
            row = measure(MODELS[m][0], folders[m], b, t, args.repeat,
                          args.quiet_seconds, args.attempts)
            visits[(m, b, t)].append(row)
            # The results so far, so an interrupted run leaves the rounds
            # it finished (OUT.json says how many visits each has).
            write_results(args, blas, configs, visits, rnd < args.rounds
                          or (m, b, t) != configs[-1])
            log(f"round {rnd}/{args.rounds} {m:<18} batch {b:>2} threads "
                f"{t}: torch2hpvm {row['hpvm_rt']['images_per_s']:8.1f}  "
                f"frozen {row['frozen']['images_per_s']:8.1f}  eager "
                f"{row['eager']['images_per_s']:8.1f} img/s  ratio "
                f"{row['vs_frozen']:.2f}x  ({row['seconds']:.0f} s, load "
                f"{row['load_1min']:.2f})")

    md = write_results(args, blas, configs, visits, partial=False)
    print(md, end="")
    log(f"wrote {args.out}.json and {args.out}.md")


if __name__ == "__main__":
    main()
