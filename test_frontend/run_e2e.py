#!/usr/bin/python3
"""run_e2e.py - driver of the end-to-end tests (ctest calls it; so can you).

  run_e2e.py list [--set ci|full]          model tests of a set, one a line
  run_e2e.py list-stability                torchvision stability tests
  run_e2e.py model NAME --exporter EXE --workdir DIR [--hpvm-configs DIR]
      PyTorch model with seeded random weights -> ONNX (as torch2hpvm or
      as a PyTorch user exports it: ModelSpec.export) -> torch2hpvm-export
      -> generated binary `test --output` -> compared with PyTorch; HPVM's
      benchmarks also have their op sequence checked against HPVM's
      configuration file for them.
  run_e2e.py stability NAME --exporter EXE --workdir DIR [--set ci|full]
      torchvision NAME at opset 10 and 13, with and without constant folding
      (some of that in the ci set): each exports, and two exports give
      byte-identical output directories.
  run_e2e.py onnx-node generate --workdir DIR
      ONNX's backend node cases whose ops are all in Ops.def (e2e/onnx_node.py)
  run_e2e.py onnx-node run --workdir DIR --exporter EXE [--part K --parts P]
      runs them (part K of P) and compares with onnx_node/expected.txt
  run_e2e.py onnx-node update --workdir DIR --exporter EXE
      runs all of them and rewrites onnx_node/expected.txt

Run with /usr/bin/python3 (torch, torchvision, onnx, numpy). A passing test
deletes its files (hundreds of MB for the ImageNet networks) unless
HPVM_E2E_KEEP=1; a failing one keeps them and says where.
"""
import argparse
import copy
import filecmp
import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from e2e import harness as H  # noqa: E402


def seed_of(name):
    """A stable per-test seed (crc32 of the name), so tests are independent."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def build_model(build, shape, seed, calib_count):
    """Builds, randomizes (nets/init.py) and returns the model in eval mode."""
    import torch
    from nets import init
    torch.manual_seed(seed)
    model = build().eval()
    gen = torch.Generator().manual_seed(seed + 1)
    calib = torch.randn((calib_count,) + tuple(shape), generator=gen)
    init.randomize(model, calib, seed + 2)
    return model


def pick_inputs(model, shape, count, seed):
    """`count` seeded N(0,1) images whose top-1 is clear (harness.MIN_MARGIN),
    with the model's float32 outputs."""
    import numpy as np
    import torch
    gen = torch.Generator().manual_seed(seed + 3)
    xs, ys, drawn = [], [], 0
    with torch.no_grad():
        while len(xs) < count:
            if drawn > 20 * count + 20:
                raise H.TestFailure(
                    f"only {len(xs)} of {drawn} random inputs have a top-1 "
                    f"margin above {H.MIN_MARGIN}; the model is degenerate")
            batch = torch.randn((count - len(xs) + 1,) + tuple(shape),
                                generator=gen)
            drawn += batch.shape[0]
            out = model(batch).numpy()
            for x, y, m in zip(batch.numpy(), out, H.top2_margin(out)):
                if m >= H.MIN_MARGIN and len(xs) < count:
                    xs.append(x)
                    ys.append(y)
    return np.stack(xs), np.stack(ys)


def cmd_model(args):
    """One model test; on failure its files stay in WORKDIR/NAME."""
    import nets
    spec = nets.model(args.name)
    work = H.fresh_dir(os.path.join(args.workdir, spec.name))
    try:
        model_test(spec, work, args)
    except H.TestFailure as e:
        raise H.TestFailure(f"{spec.name}: {e}\n  files kept in {work}")
    H.discard(work)


def export_model(spec, args, work, onnx_path, tune_in, test_in, extra=()):
    """torch2hpvm-export of the test's model into WORK/out; returns it."""
    out_dir = os.path.join(work, "out")
    cmd = H.export_cmd(args.exporter, onnx_path, tune_in, test_in, out_dir,
                       extra)
    proc = H.run(cmd, args.export_timeout, what="torch2hpvm-export")
    H.check_ok(proc, cmd, "torch2hpvm-export")
    H.log(f"[{spec.name}] exported and built in {proc.seconds:.1f} s")
    return out_dir


def run_model(spec, args, work, out_dir):
    """The exported program's test set: (its --output, final_accuracy)."""
    run_dir = H.fresh_dir(os.path.join(work, "run"))
    ours, acc, proc = H.run_binary(
        H.binary_path(out_dir, spec.name), run_dir,
        os.path.join(run_dir, "output.npy"), args.run_timeout,
        ["--batch-size", str(spec.batch)])
    H.log(f"[{spec.name}] ran in {proc.seconds:.1f} s")
    return ours, acc


def check_symbolic_batch(onnx_path):
    """The export's batch must really be symbolic, or a dynamic_batch test
    would prove nothing about it."""
    import onnx
    dim = onnx.load(onnx_path).graph.input[0].type.tensor_type.shape.dim
    if dim[0].dim_param != "batch":
        raise H.TestFailure(f"the export's batch dim is {dim[0]}, not "
                            f"symbolic")


def model_test(spec, work, args):
    """PyTorch -> ONNX -> torch2hpvm-export -> binary -> compare."""
    import numpy as np
    import torch
    seed = seed_of(spec.name)
    big = spec.shape[1] >= 100
    H.log(f"[{spec.name}] {spec.about}; seed {seed}, opset {spec.opset} "
          f"({spec.export} export), {spec.images} test images, batch "
          f"{spec.batch}")

    model = build_model(spec.build, spec.shape, seed,
                        spec.calib_images or (4 if big else 16))
    if spec.dense:
        return dense_model_test(spec, work, args, model, seed)
    onnx_path = H.export_onnx(model, spec.shape, spec.opset,
                              os.path.join(work, spec.name + ".onnx"),
                              dynamic_axes={"input": {0: "batch"},
                                            "output": {0: "batch"}}
                              if spec.dynamic_batch else None,
                              **H.EXPORTS[spec.export])
    if spec.dynamic_batch:
        check_symbolic_batch(onnx_path)
    x, ref = pick_inputs(model, spec.shape, spec.images, seed)
    labels = np.argmax(ref, axis=1).astype(np.int32)
    tx, tref = pick_inputs(model, spec.shape, 2, seed + 100)
    test_in, _ = H.write_dataset(work, "test", x, labels)
    tune_in, _ = H.write_dataset(work, "tune", tx,
                                 np.argmax(tref, axis=1).astype(np.int32))
    np.save(os.path.join(work, "expected.npy"), ref)
    with torch.no_grad():
        ref64 = copy.deepcopy(model).double()(
            torch.from_numpy(x).double()).numpy()
    _, noise, _ = H.compare(ref, ref64)

    out_dir = export_model(spec, args, work, onnx_path, tune_in, test_in)
    if spec.hpvm_ops:
        conf = os.path.join(args.hpvm_configs, spec.name + ".txt")
        if not os.path.isfile(conf):
            raise H.TestFailure(f"no HPVM configuration file {conf} to "
                                f"check the op sequence against")
        ours = H.generated_ops(os.path.join(out_dir, "ops.json"))
        hpvm = H.hpvm_config_ops(conf,
                                 H.conf_to_json_types(args.ops_def))
        problem = H.same_op_sequence(ours, hpvm)
        if problem:
            raise H.TestFailure(problem)
        H.log(f"[{spec.name}] {len(ours)} ops, in the order of HPVM's "
              f"{os.path.basename(conf)}")

    ours, acc = run_model(spec, args, work, out_dir)

    abs_err, rel_err, worst = H.compare(ours, ref)
    ours = ours.reshape(ref.shape)
    _, exact_err, _ = H.compare(ours, ref64)
    agree = int(np.sum(np.argmax(ours, axis=1) == labels))
    H.log(f"[{spec.name}] max |ours - torch| = {abs_err:.3g} at {worst}; "
          f"scaled by max|torch| = {rel_err:.3g} (tolerance {H.TOLERANCE:g});"
          f" vs float64 PyTorch: ours {exact_err:.3g}, torch's float32 "
          f"{noise:.3g}; top-1 {agree}/{len(labels)}; final_accuracy {acc}")
    problems = [p for p in [H.tolerance_problem(ours, ref, worst, rel_err,
                                                exact_err, noise)] if p]
    if agree != len(labels):
        bad = np.nonzero(np.argmax(ours, axis=1) != labels)[0]
        problems.append(f"top-1 differs from PyTorch on images "
                        f"{bad.tolist()} of {len(labels)}")
    if acc is None:
        problems.append("the binary wrote no final_accuracy")
    elif abs(acc - 100.0) > 1e-3:
        problems.append(f"final_accuracy is {acc}, expected 100.0 (labels "
                        f"are PyTorch's top-1)")
    if problems:
        raise H.TestFailure("; ".join(problems))
    H.log(f"[{spec.name}] PASS")


def dense_model_test(spec, work, args, model, seed):
    """Per-pixel models (ModelSpec.dense): seeded N(0,1) inputs and no
    labels files; every output (one .npy, or several in a .npz) within
    tolerance of PyTorch, per-pixel argmax PyTorch's wherever its top two
    scores are not within rounding, and no final_accuracy written."""
    import numpy as np
    import torch
    symbolic = {"input": {0: "batch", 2: "height", 3: "width"}}
    onnx_path = H.export_onnx(model, spec.shape, spec.opset,
                              os.path.join(work, spec.name + ".onnx"),
                              dynamic_axes=symbolic if spec.symbolic_hw
                              else {"input": {0: "batch"}}
                              if spec.dynamic_batch else None,
                              **H.EXPORTS[spec.export])
    if spec.dynamic_batch:
        check_symbolic_batch(onnx_path)
    extra = []
    if spec.symbolic_hw:
        # The file's input must really be symbolic, or the test would
        # prove nothing about --input-shape.
        import onnx
        dims = onnx.load(onnx_path).graph.input[0].type.tensor_type.shape.dim
        if [d.dim_param for d in dims] != ["batch", "", "height", "width"]:
            raise H.TestFailure(f"the export's input dims are {dims}, not "
                                f"batch x C x height x width")
        if spec.symbolic_hw == "option":
            extra = ["--input-shape", "input:" + "x".join(
                str(d) for d in (1,) + tuple(spec.shape))]
    gen = torch.Generator().manual_seed(seed + 3)
    x = torch.randn((spec.images,) + tuple(spec.shape), generator=gen)

    def heads(out):
        return [o.numpy() for o in out] if isinstance(out, tuple) \
            else [out.numpy()]
    with torch.no_grad():
        refs = heads(model(x))
        refs64 = heads(copy.deepcopy(model).double()(x.double()))
    x = x.numpy()
    # Inputs only: a segmentation model has no class labels.
    if spec.symbolic_hw == "npy":
        # The arrays as NumPy writes them; the tune set's fixes H and W.
        test_in = os.path.join(work, "test_input.npy")
        tune_in = os.path.join(work, "tune_input.npy")
        np.save(test_in, x.astype(np.float32))
        np.save(tune_in, x[:1].astype(np.float32))
    else:
        test_in = os.path.join(work, "test_input.bin")
        tune_in = os.path.join(work, "tune_input.bin")
        H.write_bin(test_in, x, np.float32)
        H.write_bin(tune_in, x[:1], np.float32)
    out_dir = export_model(spec, args, work, onnx_path, tune_in, test_in,
                           extra)
    run_dir = H.fresh_dir(os.path.join(work, "run"))
    output = os.path.join(run_dir, "output.npy" if len(refs) == 1
                          else "output.npz")
    ours, acc, proc = H.run_binary(
        H.binary_path(out_dir, spec.name), run_dir, output,
        args.run_timeout, ["--batch-size", str(spec.batch)])
    H.log(f"[{spec.name}] ran in {proc.seconds:.1f} s")
    outs = [ours] if len(refs) == 1 else [ours[k] for k in ours.files]
    problems = []
    if acc is not None:
        problems.append(f"the program wrote final_accuracy ({acc}) for a "
                        f"test set without labels")
    if len(outs) != len(refs):
        raise H.TestFailure(f"the program wrote {len(outs)} outputs, "
                            f"PyTorch has {len(refs)}")
    for k, (got, ref, ref64) in enumerate(zip(outs, refs, refs64)):
        if got.shape != ref.shape:
            raise H.TestFailure(f"output {k} has shape {got.shape}, "
                                f"PyTorch's {ref.shape}")
        _, noise, _ = H.compare(ref, ref64)
        abs_err, rel_err, worst = H.compare(got, ref)
        _, exact_err, _ = H.compare(got, ref64)
        # Pixels whose class may flip by rounding: top two within 1e-4 of
        # the largest score.
        axis = spec.class_axis
        top2 = np.moveaxis(np.sort(ref, axis=axis), axis, 0)[-2:]
        close = (top2[1] - top2[0]) <= 1e-4 * np.abs(ref).max()
        flipped = (np.argmax(got, axis) != np.argmax(ref, axis)) & ~close
        H.log(f"[{spec.name}] output {k} {ref.shape}, std {ref.std():.3g}; "
              f"max |ours - torch| = {abs_err:.3g} at {worst}; scaled by "
              f"max|torch| = {rel_err:.3g} (tolerance {H.TOLERANCE:g}); vs "
              f"float64 PyTorch: ours {exact_err:.3g}, torch's float32 "
              f"{noise:.3g}; per-pixel argmax differs at "
              f"{int(flipped.sum())} of {flipped.size} pixels "
              f"({int(close.sum())} near ties skipped)")
        problem = H.tolerance_problem(got, ref, worst, rel_err, exact_err,
                                      noise)
        if problem:
            problems.append(f"output {k}: {problem}")
        if flipped.any():
            problems.append(f"output {k}: per-pixel argmax differs from "
                            f"PyTorch's at {int(flipped.sum())} pixels")
        if not ref.std() > 1e-3 * np.abs(ref).max():
            problems.append(f"output {k}: PyTorch's output is nearly "
                            f"constant: the random network is degenerate, "
                            f"the test would prove little")
    if problems:
        raise H.TestFailure("; ".join(problems))
    H.log(f"[{spec.name}] PASS")


def tree_files(root):
    """Every file under `root`, as sorted relative paths."""
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def cmd_stability(args):
    """Deterministic export of a torchvision network, every variant."""
    import numpy as np
    import onnx
    import nets
    build, ci_variants = {n: (b, v) for n, b, v in nets.STABILITY}[args.name]
    variants = nets.STABILITY_VARIANTS if args.set == "full" else ci_variants
    seed = seed_of(args.name)
    work = H.fresh_dir(os.path.join(args.workdir, args.name))
    shape = (3, 224, 224)
    model = build_model(build, shape, seed, 1)
    x, ref = pick_inputs(model, shape, 1, seed)
    tin, _ = H.write_dataset(work, "tune", x, np.argmax(ref, 1))
    tst, _ = H.write_dataset(work, "test", x, np.argmax(ref, 1))
    failures = []
    for opset, folding in variants:
        tag = f"{args.name}_op{opset}_{'fold' if folding else 'nofold'}"
        path = H.export_onnx(model, shape, opset,
                             os.path.join(work, tag + ".onnx"), folding)
        kinds = {n.op_type for n in onnx.load(path).graph.node}
        if "BatchNormalization" not in kinds and any(
                "BatchNorm" in type(m).__name__ for m in model.modules()):
            failures.append(f"{tag}: PyTorch's export lost BatchNormalization")
            continue
        out = os.path.join(work, tag)
        first = out + ".first"
        results = []
        for attempt in (1, 2):
            cmd = H.export_cmd(args.exporter, path, tin, tst, out,
                               ["--no-build"])
            proc = H.run(cmd, args.export_timeout, what="torch2hpvm-export")
            if proc.returncode != 0:
                failures.append(
                    f"{tag}: export {attempt} failed "
                    f"({H.status_text(proc.returncode)}): {H.quote(cmd)}\n"
                    f"{H.tail(proc.stderr, 20)}")
                break
            results.append(proc.seconds)
            if attempt == 1:
                os.rename(out, first)
        if len(results) != 2:
            continue
        a, b = tree_files(first), tree_files(out)
        if a != b:
            failures.append(f"{tag}: the two exports wrote different file "
                            f"sets: {sorted(set(a) ^ set(b))}")
            continue
        if "hpvm_c.cpp" not in a or not any(f.startswith("weights")
                                            for f in a):
            failures.append(f"{tag}: no hpvm_c.cpp or weights/ in {out}")
        _, mismatch, errors = filecmp.cmpfiles(first, out, a, shallow=False)
        if mismatch or errors:
            failures.append(f"{tag}: files differ between two exports: "
                            f"{mismatch + errors}")
            continue
        H.log(f"[{tag}] exported twice ({results[0]:.1f} s, "
              f"{results[1]:.1f} s): {len(a)} files byte-identical")
        for done in (first, out, path):
            H.discard(done)
    if failures:
        raise H.TestFailure("\n".join(failures))
    H.log(f"[{args.name}] PASS")


def _node_selected(workdir):
    path = os.path.join(workdir, "selected.txt")
    if not os.path.isfile(path):
        raise H.TestFailure(f"{path} is missing: run `run_e2e.py onnx-node "
                            f"generate` (ctest's fixture) first")
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def cmd_node_generate(args):
    """Generates ONNX's node cases, picks ours, checks the list is the one
    expected.txt records."""
    from e2e import onnx_node as N
    work = H.fresh_dir(args.workdir)
    cases = os.path.join(work, "cases")
    cmd = [sys.executable, args.tool, cases]
    proc = H.run(cmd, 300, what="onnx-node-tests.py")
    H.check_ok(proc, cmd, "onnx-node-tests.py")
    chosen = N.select_cases(os.path.join(cases, "node"),
                            N.table_ops(args.ops_def))
    tmp = os.path.join(work, "selected.txt.tmp")
    with open(tmp, "w") as f:
        f.writelines(c + "\n" for c in chosen)
    os.replace(tmp, os.path.join(work, "selected.txt"))
    H.log(f"{len(chosen)} node cases use only operators of Ops.def")
    if args.no_check:
        return
    expected = N.read_expected(args.expected)
    new = sorted(set(chosen) - set(expected))
    gone = sorted(set(expected) - set(chosen))
    if new or gone:
        raise H.TestFailure(
            f"the applicable node cases differ from {args.expected}:"
            + (f"\n  not recorded: {' '.join(new)}" if new else "")
            + (f"\n  recorded but not applicable: {' '.join(gone)}"
               if gone else "")
            + "\n  (an Ops.def or onnx change; rerun `run_e2e.py onnx-node "
              "update` and review the diff)")


def cmd_node_run(args):
    """Runs part K of P of the selected cases against expected.txt."""
    from e2e import onnx_node as N
    chosen = _node_selected(args.workdir)
    expected = N.read_expected(args.expected)
    mine = [c for i, c in enumerate(chosen) if i % args.parts == args.part]
    node_dir = os.path.join(args.workdir, "cases", "node")
    diffs = []
    outcomes = N.run_cases(mine, node_dir, os.path.join(args.workdir, "run"),
                           args.exporter, args.export_timeout,
                           os.path.join(args.workdir, f"build-{args.part}"))
    for case, got in outcomes.items():
        want = expected.get(case, "(not recorded)")
        H.log(f"{case}: {got}")
        if got != want:
            diffs.append(f"{case}:\n    expected: {want}\n    got:      "
                         f"{got}")
    H.log(f"part {args.part + 1} of {args.parts}: {len(mine)} cases, "
          f"{len(mine) - len(diffs)} as recorded")
    if diffs:
        raise H.TestFailure(f"{len(diffs)} node cases differ from "
                            f"{args.expected}:\n  " + "\n  ".join(diffs))


def cmd_node_update(args):
    """Regenerates the cases, runs them all and rewrites expected.txt."""
    from e2e import onnx_node as N
    args.no_check = True
    cmd_node_generate(args)
    node_dir = os.path.join(args.workdir, "cases", "node")
    outcomes = N.run_cases(_node_selected(args.workdir), node_dir,
                           os.path.join(args.workdir, "run"),
                           args.exporter, args.export_timeout,
                           os.path.join(args.workdir, "build-all"))
    for case, got in outcomes.items():
        H.log(f"{case}: {got}")
    N.write_expected(args.expected, outcomes)
    H.log(f"wrote {args.expected}: {len(outcomes)} cases")


def cmd_list(args):
    """Prints the model tests of a set."""
    import nets
    for spec in nets.MODELS:
        if spec.ci or args.set == "full":
            print(spec.name)


def cmd_list_stability(args):
    """Prints the stability tests."""
    import nets
    for name, _, _ in nets.STABILITY:
        print(name)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list")
    ls.add_argument("--set", choices=["ci", "full"], default="ci")
    ls.set_defaults(fn=cmd_list)
    sub.add_parser("list-stability").set_defaults(fn=cmd_list_stability)
    defaults = {
        "tool": os.path.join(HERE, "..", "..", "shared", "tools",
                             "onnx-node-tests.py"),
        "ops_def": os.path.join(HERE, "..", "hpvm_rt", "include", "hpvm_rt",
                                "Ops.def"),
        "expected": os.path.join(HERE, "onnx_node", "expected.txt"),
        "configs": os.path.join(HERE, "..", "..", "shared", "reference",
                                "hpvm-configs"),
    }
    for name, fn in (("model", cmd_model), ("stability", cmd_stability)):
        sp = sub.add_parser(name)
        sp.add_argument("name")
        sp.add_argument("--exporter", required=True)
        sp.add_argument("--workdir", required=True)
        sp.add_argument("--export-timeout", type=int, default=900)
        sp.add_argument("--run-timeout", type=int, default=600)
        if name == "stability":
            sp.add_argument("--set", choices=["ci", "full"], default="ci")
        else:
            sp.add_argument("--hpvm-configs", default=defaults["configs"])
            sp.add_argument("--ops-def", default=defaults["ops_def"])
        sp.set_defaults(fn=fn)
    node = sub.add_parser("onnx-node").add_subparsers(dest="step",
                                                      required=True)
    for step, fn in (("generate", cmd_node_generate), ("run", cmd_node_run),
                     ("update", cmd_node_update)):
        sp = node.add_parser(step)
        sp.add_argument("--workdir", required=True)
        sp.add_argument("--expected", default=defaults["expected"])
        if step != "run":
            sp.add_argument("--tool", default=defaults["tool"])
            sp.add_argument("--ops-def", default=defaults["ops_def"])
            sp.add_argument("--no-check", action="store_true")
        if step != "generate":
            sp.add_argument("--exporter", required=True)
            sp.add_argument("--export-timeout", type=int, default=600)
        if step == "run":
            sp.add_argument("--part", type=int, default=0)
            sp.add_argument("--parts", type=int, default=1)
        sp.set_defaults(fn=fn)
    args = p.parse_args()
    H.main_guard(lambda: args.fn(args))


if __name__ == "__main__":
    main()
