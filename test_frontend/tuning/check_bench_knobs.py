#!/usr/bin/python3
"""check_bench_knobs.py BUILD_DIR WORK_DIR SOURCE_DIR - runs `bench-knobs`
on the shipped LeNet and checks what a user relies on:

- the JSON record lists every fused node of the program (ops.json's
  fused_nodes) with every knob that applies to its first op (ops.json's
  op_knobs), the exact knob first with speedup 1; times are positive;
  a knob that cannot run (int8 without a calibration) has its error
  recorded and the others are timed; offsets share their rate's time
  unless --every-offset; --knobs keeps only the knobs named;
- bad options fail with exact messages;
- `tune-search --costs FILE` takes the record's costs (the same delta per
  (node, knob) in tuning.json), and fails with an exact message when the
  batch size differs.
"""
import json
import os
import shutil
import sys

from lenet_tuning import NAME, export_lenet, fail, run

build, work, src = sys.argv[1:4]
TUNE_IMAGES, BATCH, IMAGES = 300, 50, 100

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
out = export_lenet(build, src, work, TUNE_IMAGES, 100, BATCH)
program = os.path.join(out, "build", NAME)
ops = json.load(open(os.path.join(out, "ops.json")))
# One thread: ctest runs tests side by side.
COMMON = ["--threads", "1", "--batch", str(BATCH), "--images", str(IMAGES)]

# 1. Every fused node, every applicable knob.
record_path = os.path.join(work, "bench.json")
p = run([program, "bench-knobs", "--json", record_path, "-q"] + COMMON,
        cwd=work)
rec = json.load(open(record_path))
for key, want in (("model", NAME), ("batch_size", BATCH), ("threads", 1),
                  ("images", IMAGES), ("repeats", 1), ("every_offset", False)):
    if rec[key] != want:
        fail(f"record {key} is {rec[key]!r}, expected {want!r}")
if not rec["machine"]["cpu"] or not rec["machine"]["dnnl_isa"]:
    fail(f"no machine facts: {rec['machine']}")
if not (rec["exact_batch_ms"] > 0 and rec["exact_batch_ms_after"] > 0):
    fail(f"exact batch times {rec['exact_batch_ms']}, "
         f"{rec['exact_batch_ms_after']} (after)")
fused = ops["fused_nodes"]
if [n["node_id"] for n in rec["nodes"]] != [g["id"] for g in fused]:
    fail(f"nodes {[n['node_id'] for n in rec['nodes']]}, ops.json has "
         f"{[g['id'] for g in fused]}")
failed = timed_as = 0
for n, g in zip(rec["nodes"], fused):
    where = f"node {n['ordinal']} (id {n['node_id']})"
    if len(n["ops"]) != len(g["ops"]):
        fail(f"{where}: ops {n['ops']}, ops.json has {g['ops']}")
    if f"node {n['ordinal']} (id {n['node_id']}): {' '.join(n['ops'])}" \
            not in p.stdout:
        fail(f"{where} is not in the table:\n{p.stdout}")
    if not (n["exact_ms"] > 0 and n["exact_ms_after"] > 0 and n["flops"] > 0
            and n["output_shape"][0] == BATCH and n["input_shapes"]):
        fail(f"{where}: exact_ms, flops or shapes wrong: {n}")
    want = [int(k) for k in ops["op_knobs"][g["ops"][0]]]
    got = [k["id"] for k in n["knobs"]]
    if sorted(got) != sorted(want) or len(set(got)) != len(got):
        fail(f"{where}: knobs {got}, ops.json applies {want}")
    exact = n["knobs"][0]
    if (exact["conf_name"], exact["speedup"], exact["delta_ms"]) != \
            ("fp32", 1.0, 0.0):
        fail(f"{where}: the first knob is not exact fp32 at 1.0x: {exact}")
    by_id = {k["id"]: k for k in n["knobs"]}
    for k in n["knobs"]:
        if k["precision"] == "INT8":  # no calibration given
            if "calibration" not in k.get("error", ""):
                fail(f"{where}: knob {k['id']} ran without a calibration: {k}")
        if "error" in k:
            failed += 1
            if not k["error"] or "ms" in k:
                fail(f"{where}: knob {k['id']}: bad error record {k}")
            continue
        if not (k["ms"] > 0 and k["spread"] >= 0):
            fail(f"{where}: knob {k['id']}: times not positive: {k}")
        # Speedup: exact / (exact + delta), none when that is no time (the
        # next node's change outweighs the node's time, a shared machine's
        # noise).
        cost = n["exact_ms"] + k["delta_ms"]
        if (k["speedup"] is None) != (cost <= 0) or \
                (cost > 0 and abs(k["speedup"] - n["exact_ms"] / cost) > 1e-9):
            fail(f"{where}: knob {k['id']}: speedup is not exact / (exact + "
                 f"delta): {k}")
        if "timed_as" in k:
            timed_as += 1
            t = by_id[k["timed_as"]]
            if [t[f] for f in ("variant", "precision", "rate", "ms")] != \
                    [k[f] for f in ("variant", "precision", "rate", "ms")]:
                fail(f"{where}: knob {k['id']} timed as {t['id']}: {k} {t}")
if not failed or not timed_as:
    fail(f"expected int8 errors and offsets timed by rate: {failed} errors, "
         f"{timed_as} shared")

# 2. --knobs and --every-offset.
subset = os.path.join(work, "subset.json")
run([program, "bench-knobs", "--json", subset, "--knobs", "122,121,301",
     "--every-offset", "--repeats", "2", "-q"] + COMMON, cwd=work)
sub = json.load(open(subset))
for n, full in zip(sub["nodes"], rec["nodes"]):
    want = [k["id"] for k in full["knobs"] if k["id"] in (11, 121, 122, 301)]
    got = [k["id"] for k in n["knobs"]]
    if sorted(got) != sorted(want) or got[0] != 11:
        fail(f"--knobs: node {n['ordinal']} has {got}, expected {want}")
    if any("timed_as" in k for k in n["knobs"]):
        fail(f"--every-offset: node {n['ordinal']} shares a time: {n}")

# 3. Exact error messages.
tip = f"\nTry '{NAME} bench-knobs --help'.\n"
for args, message in (
        (["--repeats", "0"],
         "bad value '0' for --repeats: expected an integer >= 1" + tip),
        (["--knobs", "121,99999"],
         "bad value '121,99999' for --knobs: no knob has id 99999" + tip),
        (["--images"], "option '--images' needs a value (N)" + tip),
        (["--bogus"], "unknown option '--bogus'" + tip),
        (["--images", "5000"],
         f"--images 5000 exceeds the {TUNE_IMAGES} images of the tune set\n")):
    p = run([program, "bench-knobs"] + args, expect=1, cwd=work)
    if p.stderr != f"{NAME}: error: {message}":
        fail(f"bench-knobs {' '.join(args)}: stderr\n{p.stderr!r}\nexpected"
             f"\n{NAME}: error: {message!r}")
p = run([program, "bench-knobs", "--help"], cwd=work)
if "--every-offset" not in p.stdout or "tune-search --costs" not in p.stdout:
    fail(f"bench-knobs --help:\n{p.stdout}")

# 4. tune-search --costs: a mismatching batch size is refused...
p = run([program, "tune-search", "--costs", record_path, "--batch-size",
         "100", "--threads", "1", "-q"], expect=1, cwd=work)
want = (f"{NAME}: error: {record_path}: the record was made with batch size "
        f"{BATCH}, but this run uses batch size 100\n")
if p.stderr != want:
    fail(f"tune-search --costs with another batch:\n{p.stderr!r}\nexpected\n"
         f"{want!r}")
# ... and a matching one tunes with the record's costs.
confs = os.path.join(work, "costs_confs.txt")
run([program, "tune-search", "--costs", record_path, "--batch-size",
     str(BATCH), "--threads", "1", "--budget", "40", "--profile-images", "100",
     "--calibrate", "2", "--validate", "2", "--repeats", "1", "--no-plot",
     "-q", "-o", confs], cwd=work)
tuning = json.load(open(os.path.join(work, "costs_confs.json")))
if tuning["settings"]["costs"] != record_path:
    fail(f"tuning.json settings.costs: {tuning['settings']['costs']!r}")
if tuning["exact"]["batch_ms"] != rec["exact_batch_ms"]:
    fail(f"exact batch {tuning['exact']['batch_ms']} ms, the record has "
         f"{rec['exact_batch_ms']}")
costs = {(n["ordinal"], k["id"]): k for n in rec["nodes"] for k in n["knobs"]}
for pair in tuning["profile"]["pairs"]:
    k = costs[(pair["node"], pair["knob"])]
    if "error" in k:
        if pair.get("error") != k["error"] or not pair["pruned"]:
            fail(f"failed knob not left out: {pair}")
    elif pair["chained"]:
        # Cheaper next to its own kind (a chain probe measured it): never
        # dearer than the record says alone.
        if not pair["delta_ms"] < k["delta_ms"] or pair["noisy"] != k["noisy"]:
            fail(f"chained pair {pair} is not below the record's cost {k}")
    elif pair["delta_ms"] != k["delta_ms"] or pair["noisy"] != k["noisy"]:
        fail(f"pair {pair} does not take the record's cost {k}")

print(f"check_bench_knobs: {len(rec['nodes'])} fused nodes, "
      f"{sum(len(n['knobs']) for n in rec['nodes'])} knobs ({failed} failed "
      f"as expected, {timed_as} timed by rate); errors exact; --costs taken")
