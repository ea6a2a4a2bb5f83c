#!/usr/bin/python3
"""vs_onnxruntime.py - the benchmark of record: torch2hpvm against ONNX
Runtime 1.30 (CPU) and frozen TorchScript, same ONNX file, machine, batch
and threads, in one run, rounds interleaved.

Engines, per model:
  exact      our generated program, exact FP32
  int8       our program, the int8 knob (311) on every layer it applies to,
             calibrated on the export's tune set
  tuned      our program under `torch2hpvm-tune OUT --qos-loss 1` (its
             defaults otherwise): the fastest configuration within 1 point
             of top-1 (shipped models only: the others have random weights)
  ort_fp32   ONNX Runtime on the same ONNX file (batch made symbolic)
  ort_int8   ONNX Runtime on a static QDQ quantization of it
             (scripts/bench/ort_quantize.py: per-channel int8 weights,
             uint8 activations calibrated on the same tune set)
  frozen     torch.jit.freeze + optimize_for_inference of the PyTorch model
             (test_frontend nets only; the shipped ONNX files have none)

Models (--models, comma separated):
  vgg16, resnet18, mobilenet   the shipped Fashion-MNIST nets
                               (datasets/example; real test-set top-1 of
                               every engine is reported); batches 1 and 64
  efficientnet_b0, mobilenet_v3_large, densenet121, resnet50
                               torchvision at 224x224 (exported as
                               scripts/bench/tv_classifiers.py does:
                               seeded random weights); batches 1 and 16
  convnext_tiny, vit_b_16      the same, only when named (slow)
  vgg16_cifar10, resnet18_cifar10, mobilenet_cifar10
                               HPVM's CIFAR-10 nets (test_frontend/nets,
                               random weights); batches 1 and 64
  lraspp, deeplabv3, fcn_resnet50, unet
                               segmentation at 224x224 (test_frontend/nets,
                               random weights), only when named: exact,
                               ort_fp32 and frozen; batches 1 and 8
  yolov8, yolov5                the detectors of the end-to-end tests at
                               320x320 (random weights), only when named,
                               as segmentation
  timm_vit, multihead, mixer, token_products, non_local
                               token models at 32x32 (test_frontend/nets,
                               random weights), only when named: exact,
                               ort_fp32 and frozen; batches 1 and 64
                               (exported with a symbolic batch, so that
                               ONNX Runtime runs the file at 64 too)

Measurement: every (model, batch, threads) configuration is visited in
each of --rounds rounds, each visit timing every engine in turn: the
fastest of at least --repeat batches filling at least --min-seconds, after
untimed ones filling a quarter of that (WARMUP = 2 at least), the same
rule for every engine; the batch counts come from an untimed probe of
each engine on its first visit. A configuration's figure per engine is its
best over the rounds, and the per-round ratios are kept (their spread is
the noise). (A fixed handful of batches measured batch 1 while the
programs still warmed up: ResNet-18 int8 at batch 1 here takes 0.47,
0.35, 0.30, 0.29 ms in launches 3 to 6 and 0.26 ms from the 15th on; ONNX
Runtime likewise, less so.) Before each
visit the script waits until no compiler or build tool has run for
--quiet-seconds (as tv_classifiers.py). PyTorch runs with
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset and its thread count set.

Needs ONNX Runtime in .deps/ort (scripts/install-deps.sh puts it there)
and a build of torch2hpvm (build/). Writes OUT.json and OUT.md.

Examples:
  scripts/bench/vs_onnxruntime.py
  scripts/bench/vs_onnxruntime.py --models resnet18,efficientnet_b0 \\
      --threads 1 --rounds 1 --out /tmp/r
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import tv_classifiers as tv  # noqa: E402
import bench_vs_pytorch as bvp  # noqa: E402
from tune_models import fashion_mnist  # noqa: E402

SHIPPED = {"vgg16": "VGG16 (F-MNIST)", "resnet18": "ResNet-18 (F-MNIST)",
           "mobilenet": "MobileNet (F-MNIST)"}
TORCHVISION = {m: tv.MODELS[m] for m in ("efficientnet_b0",
                                         "mobilenet_v3_large",
                                         "densenet121", "resnet50")}
# Not in the default set (minutes a visit at batch 16): --models adds them.
LARGE = {"convnext_tiny": ("pt_convnext_tiny_224", "ConvNeXt-T"),
         "vit_b_16": ("pt_vit_b_16_224", "ViT-B/16")}
TORCHVISION.update(LARGE)
CIFAR = {"vgg16_cifar10": "VGG16 (CIFAR)",
         "resnet18_cifar10": "ResNet-18 (CIFAR)",
         "mobilenet_cifar10": "MobileNet (CIFAR)"}
# Segmentation (issue #26's table): per-pixel outputs, no labels; timed
# exact, against ONNX Runtime FP32 and frozen TorchScript only.
SEGMENTATION = {
    "lraspp": ("pt_lraspp_mobilenet_v3_large_224", "LR-ASPP MobileNet v3"),
    "deeplabv3": ("pt_deeplabv3_mobilenet_v3_large_224",
                  "DeepLabV3 MobileNet v3"),
    "fcn_resnet50": ("pt_fcn_resnet50_224", "FCN ResNet-50"),
    "unet": ("unet_224", "U-Net (small)"),
}
# One-stage detectors (issue #26's heads): raw outputs, no labels, timed
# like segmentation.
DETECTION = {
    "yolov8": ("yolov8_320", "YOLOv8 (narrow, 320 px)"),
    "yolov5": ("yolov5_320", "YOLOv5 (narrow, 320 px)"),
}
# Token stages (issue #26's new paths: attention written out, the timm
# ViT, token_transpose, token_matmul), 32x32 test_frontend nets with random
# weights, only when named: exact, ort_fp32 and frozen; batch 1.
TOKENS = {
    "timm_vit": ("timm_vit_32", "ViT, timm-style (32 px)"),
    "multihead": ("multihead_tokens_32", "attention written out (32 px)"),
    "mixer": ("mlp_mixer_32", "MLP-Mixer (32 px)"),
    "token_products": ("token_products_32", "token products (32 px)"),
    "non_local": ("non_local_32", "non-local block (32 px)"),
}
DEFAULT_MODELS = (list(SHIPPED) + [m for m in TORCHVISION if m not in LARGE]
                  + list(CIFAR))
KNOWN_MODELS = (DEFAULT_MODELS + list(LARGE) + list(SEGMENTATION)
                + list(DETECTION) + list(TOKENS))
NAMED = {**TORCHVISION, **SEGMENTATION, **DETECTION, **TOKENS}
ENGINES = ["exact", "int8", "tuned", "ort_fp32", "ort_int8", "frozen"]


def log(msg):
    print(f"[vs_onnxruntime] {msg}", flush=True)


def run(cmd, what, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, check=False,
                         **kw)
    if res.returncode != 0:
        sys.exit(f"vs_onnxruntime: {what}: {' '.join(cmd)} failed (exit "
                 f"{res.returncode}):\n{res.stdout[-3000:]}"
                 f"{res.stderr[-3000:]}")
    return res.stdout


def binary_of(out):
    with open(os.path.join(out, "manifest.json")) as f:
        return os.path.join(out, json.load(f)["binary"])


def fresh(path, *sources):
    """True if `path` exists and is newer than every source."""
    try:
        t = os.path.getmtime(path)
    except OSError:
        return False
    return all(os.path.getmtime(s) <= t for s in sources)


# --- preparation --------------------------------------------------------------

class Model:
    """One model's files: export folder, ONNX, ORT copies, configurations."""

    def __init__(self, key, args):
        self.key = key
        self.shipped = key in SHIPPED
        self.dense = key in SEGMENTATION or key in DETECTION
        # FP32 engines only: the segmentation and token models.
        self.fp32_only = self.dense or key in TOKENS
        self.name = SHIPPED.get(key) or CIFAR.get(key) or NAMED[key][1]
        self.net = None if self.shipped else NAMED.get(key, (key,))[0]
        self.batches = ([1, 16] if key in TORCHVISION
                        else [1, 8] if self.dense else [1, 64])
        work = os.path.join(args.work, key)
        os.makedirs(work, exist_ok=True)
        exporter = args.exporter
        # Programs link the runtime statically: a newer runtime means a
        # new export.
        runtime = os.path.join(args.build, "hpvm_rt", "libhpvm_rt.a")
        if self.shipped:
            data = fashion_mnist(args.build, args.work)
            self.onnx = os.path.join(ROOT, "datasets", "example",
                                     f"{key}_fashion.onnx")
            self.out = os.path.join(work, "out")
            if not fresh(os.path.join(self.out, "manifest.json"), exporter,
                         self.onnx, runtime):
                log(f"{key}: exporting")
                run([exporter, self.onnx, "--tune", f"{data}/tune_input.bin",
                     "--test", f"{data}/test_input.bin", "--batch-size", "64",
                     "--force", "-o", self.out], "export")
            self.tune_input = f"{data}/tune_input.bin"
            self.test = (f"{data}/test_input.bin", f"{data}/test_labels.bin")
        else:
            stamp = os.path.join(args.work, self.net, "exported.json")
            if not fresh(stamp, runtime) and os.path.exists(stamp):
                os.remove(stamp)
            # (The token models and detectors with a symbolic batch:
            # exported at batch 1, torch.onnx traces it into their
            # Reshapes (and the class token's Expand), and ONNX Runtime
            # runs that file at 1 only.)
            self.out = tv.export(self.net, exporter, args.work,
                                 max(self.batches),
                                 dynamic_batch=key in TOKENS
                                 or key in DETECTION)
            folder = os.path.dirname(self.out)
            self.onnx = os.path.join(folder, self.net + ".onnx")
            self.tune_input = os.path.join(folder, "tune_input.bin")
            self.test = None
        self.binary = binary_of(self.out)
        self.ort_fp32 = os.path.join(work, "ort_fp32.onnx")
        self.ort_int8 = os.path.join(work, "ort_int8.onnx")
        quantizer = os.path.join(HERE, "ort_quantize.py")
        if self.fp32_only:
            # FP32 only (the ONNX file with a symbolic batch).
            if not fresh(self.ort_fp32, self.onnx, quantizer):
                log(f"{key}: ONNX Runtime copy (FP32)")
                run(["/usr/bin/python3", quantizer, self.onnx, "--fp32",
                     self.ort_fp32], "ONNX Runtime copy")
            self.tuned = self.int8 = None
            return
        if not (fresh(self.ort_fp32, self.onnx, quantizer)
                and fresh(self.ort_int8, self.onnx, quantizer)):
            log(f"{key}: ONNX Runtime copies (FP32, QDQ int8)")
            run(["/usr/bin/python3", quantizer, self.onnx, "--fp32",
                 self.ort_fp32, "--int8", self.ort_int8, "--calib",
                 self.tune_input], "quantize")
        self.int8 = os.path.join(self.out, "int8_everywhere.txt")
        if not fresh(self.int8, self.binary):
            run(["/usr/bin/python3", os.path.join(HERE, "knob_config.py"),
                 os.path.join(self.out, "ops.json"), "311", "-o",
                 self.int8], "int8 configuration")
            run([self.binary, "calibrate", "-q", "-o",
                 os.path.join(self.out, "int8_everywhere.calib.txt")],
                "calibration", cwd=self.out)
        self.tuned = None
        if self.shipped and args.tune:
            self.tuned = os.path.join(self.out, "tuned_1pt.txt")
            if not fresh(self.tuned, self.binary):
                log(f"{key}: tuning (torch2hpvm-tune --qos-loss 1)")
                t0 = time.monotonic()
                run([args.tuner, self.out, "--qos-loss", "1", "-o",
                     self.tuned, "--json",
                     os.path.join(self.out, "tuned_1pt.json"), "-q"],
                    "tuning")
                log(f"{key}: tuned in {time.monotonic() - t0:.0f} s")

    def engines(self, wanted=tuple(ENGINES)):
        if self.fp32_only:
            return [e for e in ("exact", "ort_fp32", "frozen")
                    if e in wanted]
        out = ["exact", "int8"]
        if self.tuned:
            out.append("tuned")
        out += ["ort_fp32", "ort_int8"]
        if not self.shipped:
            out.append("frozen")
        return [e for e in out if e in wanted]

    def our_config(self, engine):
        if engine == "int8":
            return ["-c", self.int8]
        if engine == "tuned":
            return ["-c", self.tuned, "--qos-loss", "1"]
        return []  # the export's own configuration: exact


# --- measurement --------------------------------------------------------------

# Untimed batches before the timed ones, for every engine: a fresh process
# of ours finishes its one-time work in the first two launches (ResNet-18
# int8 at batch 1 here: 37 ms, 0.75 ms, then 0.27-0.35 ms), ONNX Runtime's
# session and TorchScript's frozen module theirs likewise.
WARMUP = 2


# The most batches one timing runs (warm-up included).
MAX_BATCHES = 3000


def batch_counts(seconds_per_batch, repeat, min_seconds):
    """(warm-up, timed) batch counts for an engine taking about
    seconds_per_batch (None: not measured yet, the minimum counts)."""
    if not seconds_per_batch:
        return WARMUP, repeat
    warm = max(WARMUP, math.ceil(min_seconds / 4 / seconds_per_batch))
    timed = max(repeat, math.ceil(min_seconds / seconds_per_batch))
    timed = min(timed, MAX_BATCHES - warm)
    return min(warm, MAX_BATCHES - timed), timed


def time_ours(m, engine, batch, threads, warm, repeat):
    # The summary's minimum covers the warm-up launches too (ORT's and
    # TorchScript's do not); they do the one-time work, so they are the
    # slowest ones, not the minimum.
    cmd = [m.binary, "test", "--batch-size", str(batch), "--limit",
           str(batch), "--repeat", str(repeat + warm), "--print-time",
           "--threads", str(threads), "--quiet"] + m.our_config(engine)
    text = run(cmd, f"{m.key} {engine}", cwd=m.out)
    return batch / bvp.print_time_summary(text, cmd)["min_s"]


def time_ort(model, batch, threads, warm, repeat):
    out = run(["node", os.path.join(HERE, "ort_run.js"), "time", model,
               str(batch), str(threads), str(warm), str(repeat)],
              "ONNX Runtime")
    return json.loads(out)["images_per_s"]


def time_engine(m, engine, batch, threads, warm, repeat):
    if engine in ("exact", "int8", "tuned"):
        return time_ours(m, engine, batch, threads, warm, repeat)
    if engine == "ort_fp32":
        return time_ort(m.ort_fp32, batch, threads, warm, repeat)
    if engine == "ort_int8":
        return time_ort(m.ort_int8, batch, threads, warm, repeat)
    r = bvp.run_torch(m.net, batch, threads, repeat, warm)
    return r["frozen"]["images_per_s"]


def timed_visit(m, engines, batch, threads, args, pace):
    """Times every engine once (batch counts from pace, the seconds per
    batch each took before, probed first where unknown); updates pace."""
    out = {}
    for e in engines:
        slot = (m.key, batch, threads, e)
        if slot not in pace:
            ips = time_engine(m, e, batch, threads,
                              *batch_counts(None, 3, args.min_seconds))
            pace[slot] = batch / ips
        warm, timed = batch_counts(pace[slot], args.repeat, args.min_seconds)
        out[e] = time_engine(m, e, batch, threads, warm, timed)
        pace[slot] = batch / out[e]
    return out


def accuracy(m, engine):
    """Top-1 (%) of an engine on the shipped model's test set."""
    if engine.startswith("ort_"):
        path = m.ort_fp32 if engine == "ort_fp32" else m.ort_int8
        out = run(["node", os.path.join(HERE, "ort_run.js"), "eval", path,
                   m.test[0], m.test[1], "64", "2"], "ONNX Runtime eval")
        return json.loads(out)["accuracy"]
    res = os.path.join(m.out, f"acc_{engine}.json")
    run([m.binary, "test", "--threads", "2", "--quiet", "--json", res]
        + m.our_config(engine), f"{m.key} {engine} accuracy", cwd=m.out)
    with open(res) as f:
        return json.load(f)["accuracy"]


# --- results ------------------------------------------------------------------

def gmean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(visits):
    """Best images/s over the rounds per engine, and per-round ratios."""
    best = {}
    for v in visits:
        for e, ips in v.items():
            best[e] = max(best.get(e, 0), ips)
    rounds = {}
    for num, den in (("exact", "ort_fp32"), ("int8", "ort_int8"),
                     ("exact", "frozen"), ("tuned", "ort_int8")):
        r = [v[num] / v[den] for v in visits if num in v and den in v]
        if r:
            rounds[f"{num}/{den}"] = r
    return best, rounds


def ratio(best, num, den):
    return best[num] / best[den] if num in best and den in best else None


def fmt_ratio(best, rounds, num, den):
    r = ratio(best, num, den)
    if r is None:
        return "-"
    rr = rounds.get(f"{num}/{den}", [])
    spread = f" [{min(rr):.2f}-{max(rr):.2f}]" if len(rr) > 1 else ""
    return f"{r:.2f}x{spread}"


def markdown(result):
    L = [f"# torch2hpvm vs ONNX Runtime {result['ort_version']} and frozen "
         f"TorchScript", "",
         f"`scripts/bench/vs_onnxruntime.py` ({result['date']}); "
         f"{result['machine']}; oneDNN ISA: {result['isa']}. Images/s: best "
         f"of {result['rounds']} interleaved rounds, each the fastest of "
         + (f"at least {result['repeat']} batches filling at least "
            f"{result['min_seconds']} s after untimed ones filling a "
            f"quarter of that (2 at least)" if "min_seconds" in result else
            f"{result['repeat']} batches after {result.get('warmup', 1)} "
            f"untimed ones")
         + f"; ratios in brackets: the per-round "
         f"range.{' PARTIAL: interrupted.' if result['partial'] else ''}",
         "", "## Exact FP32", "",
         "| model | batch | threads | ours img/s | ORT img/s | ours/ORT "
         "| TorchScript img/s | ours/TorchScript |",
         "|---|---:|---:|---:|---:|---:|---:|---:|"]
    fp32 = []
    for r in result["results"]:
        b, rr = r["images_per_s"], r["round_ratios"]
        fp32.append(ratio(b, "exact", "ort_fp32"))
        frozen = f"{b['frozen']:.1f}" if "frozen" in b else "-"
        L.append(f"| {r['model']} | {r['batch']} | {r['threads']} | "
                 f"{b['exact']:.1f} | {b['ort_fp32']:.1f} | "
                 f"{fmt_ratio(b, rr, 'exact', 'ort_fp32')} | {frozen} | "
                 f"{fmt_ratio(b, rr, 'exact', 'frozen')} |")
    below = sum(1 for x in fp32 if x is not None and x < 1.0)
    if fp32:
        L += ["", f"Geometric mean ours/ORT FP32: {gmean(fp32):.2f}x over "
              f"{len(fp32)} cases; {below} below 1.0x."]
    int8 = [r for r in result["results"]
            if {"int8", "ort_int8"} <= set(r["images_per_s"])]
    if int8:
        L += ["", "## int8", "", "| model | batch | threads | ours int8 "
              "img/s | x our exact | ORT int8 img/s | ours/ORT int8 |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    i8 = []
    for r in int8:
        b, rr = r["images_per_s"], r["round_ratios"]
        i8.append(ratio(b, "int8", "ort_int8"))
        L.append(f"| {r['model']} | {r['batch']} | {r['threads']} | "
                 f"{b['int8']:.1f} | {ratio(b, 'int8', 'exact'):.2f}x | "
                 f"{b['ort_int8']:.1f} | "
                 f"{fmt_ratio(b, rr, 'int8', 'ort_int8')} |")
    if i8:
        L += ["", f"Geometric mean ours/ORT int8: {gmean(i8):.2f}x over "
              f"{len(i8)} cases."]
    acc = result.get("accuracy", {})
    if acc:
        L += ["", "## Test-set top-1 (shipped Fashion-MNIST nets, %)", "",
              "| model | " + " | ".join(ENGINES[:5]) + " |",
              "|---|" + "---:|" * 5]
        for model, a in acc.items():
            L.append(f"| {model} | " + " | ".join(
                f"{a[e]:.2f}" if e in a else "-" for e in ENGINES[:5]) + " |")
    tuned = [r for r in result["results"] if "tuned" in r["images_per_s"]]
    if tuned:
        L += ["", "## Tuned within 1 point of top-1", "",
              "| model | batch | threads | tuned img/s | x our exact | "
              "x ORT int8 |", "|---|---:|---:|---:|---:|---:|"]
        for r in tuned:
            b, rr = r["images_per_s"], r["round_ratios"]
            L.append(f"| {r['model']} | {r['batch']} | {r['threads']} | "
                     f"{b['tuned']:.1f} | {ratio(b, 'tuned', 'exact'):.2f}x "
                     f"| {fmt_ratio(b, rr, 'tuned', 'ort_int8')} |")
    return "\n".join(L) + "\n"


def isa(binary):
    """oneDNN's ISA as the program reports it (its first verbose line)."""
    env = dict(os.environ, ONEDNN_VERBOSE="1")
    res = subprocess.run([binary, "test", "--limit", "1", "--quiet"],
                         capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(binary)),
                         check=False)
    m = re.search(r"cpu,runtime:[^\n]*\n?.*?isa:([^\n]*)", res.stdout,
                  re.S)
    return m.group(1).strip() if m else "unknown"


def write_results(args, models, visits, acc, partial, ort_version):
    results = []
    for (key, batch, threads), vs in visits.items():
        if not vs:
            continue
        best, rounds = summarize(vs)
        results.append({"model": models[key].name, "key": key,
                        "batch": batch, "threads": threads,
                        "images_per_s": best, "round_ratios": rounds,
                        "visits": vs})
    result = {"date": time.strftime("%Y-%m-%d"),
              "machine": "%s, %d CPUs" % (tv.cpu_model(), os.cpu_count()),
              "isa": args.isa, "ort_version": ort_version,
              "rounds": args.rounds, "repeat": args.repeat, "warmup": WARMUP,
              "min_seconds": args.min_seconds,
              "partial": partial, "results": results, "accuracy": acc}
    tv.write_atomic(args.out + ".json", json.dumps(result, indent=1) + "\n")
    md = markdown(result)
    tv.write_atomic(args.out + ".md", md)
    return md


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--batch", type=tv.int_list,
                    help="batch sizes for every model (default: 1 and 64, "
                    "1 and 16 at 224x224)")
    ap.add_argument("--threads", type=tv.int_list, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10,
                    help="timed batches per timing, at least (default 10)")
    ap.add_argument("--min-seconds", type=float, default=0.5,
                    help="timed seconds per timing, at least (default 0.5)")
    ap.add_argument("--quiet-seconds", type=float, default=10)
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help="engines to time (default: all of %s; exact and "
                    "ort_fp32 are always timed)" % ",".join(ENGINES))
    ap.add_argument("--no-tune", dest="tune", action="store_false",
                    help="skip the tuned engine")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/vs_onnxruntime")
    ap.add_argument("--out", default=os.path.join(
        HERE, "results", "vs_onnxruntime"))
    args = ap.parse_args()
    args.exporter = os.path.join(args.build, "frontend", "torch2hpvm-export")
    args.tuner = os.path.join(args.build, "frontend", "torch2hpvm-tune")
    keys = args.models.split(",")
    wanted = set(args.engines.split(",")) | {"exact", "ort_fp32"}
    if wanted - set(ENGINES):
        ap.error(f"unknown engine(s) {', '.join(sorted(wanted - set(ENGINES)))}"
                 f" (known: {', '.join(ENGINES)})")
    args.tune = args.tune and "tuned" in wanted
    for k in keys:
        if k not in KNOWN_MODELS:
            ap.error(f"unknown model {k} (known: {', '.join(KNOWN_MODELS)})")
    if not os.access(args.exporter, os.X_OK):
        ap.error(f"no exporter at {args.exporter}; build torch2hpvm first")
    blas = tv.check_openblas()
    log(f"PyTorch uses {blas}")
    ort_version = json.loads(run(
        ["node", "-e", "const p=require('path');console.log(JSON.stringify("
         "require(p.join(process.argv[1],'node_modules','onnxruntime-node',"
         "'package.json')).version))",
         os.environ.get("T2H_ORT_DIR", os.path.join(ROOT, ".deps", "ort"))],
        "ONNX Runtime version"))
    models = {k: Model(k, args) for k in keys}
    args.isa = isa(next(iter(models.values())).binary)
    log(f"oneDNN ISA: {args.isa}")
    acc = {}
    for m in models.values():
        if m.shipped:
            acc[m.name] = {e: accuracy(m, e) for e in m.engines()}
            log(f"{m.key}: top-1 " + ", ".join(
                f"{e} {a:.2f}" for e, a in acc[m.name].items()))
    configs = [(k, b, t) for k in keys for b in (args.batch or
                                                 models[k].batches)
               for t in args.threads]
    visits = {c: [] for c in configs}
    pace = {}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    for rnd in range(1, args.rounds + 1):
        for key, batch, threads in configs:
            m = models[key]
            tv.wait_quiet(args.quiet_seconds)
            v = timed_visit(m, m.engines(wanted), batch, threads, args,
                            pace)
            visits[(key, batch, threads)].append(v)
            write_results(args, models, visits, acc, True, ort_version)
            log(f"round {rnd}/{args.rounds} {key} b{batch} t{threads}: " +
                "  ".join(f"{e} {ips:.1f}" for e, ips in v.items()))
    md = write_results(args, models, visits, acc, False, ort_version)
    print(md, end="")
    log(f"wrote {args.out}.json and {args.out}.md")


if __name__ == "__main__":
    main()
