#!/usr/bin/python3
"""Seed corpora of the libFuzzer targets (scripts/fuzz.sh), from the test
fixtures: WORK/fuzz_onnx/seeds (the ONNX fixtures, binary), WORK/fuzz_config
/seeds (the configuration files of the tests), WORK/fuzz_datasets/seeds
(small files of every dataset format, prefixed with the target's format
byte), WORK/fuzz_command_line/seeds (typical command lines of each parser,
after its selector byte), WORK/fuzz_config_calibration/seeds (configurations
of the test chain, exact and int8, with and without a calibration). Each
target's past findings (tests/fuzz/regressions/TARGET) are seeds too."""
import glob
import io
import os
import sys
import zipfile

import numpy as np
import onnx
from google.protobuf import text_format

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def main(work):
    seeds = os.path.join(work, "fuzz_onnx", "seeds")
    for path in sorted(glob.glob(f"{ROOT}/test_frontend/models/**/*.onnxtxt",
                                 recursive=True)):
        m = onnx.ModelProto()
        with open(path) as f:
            text_format.Parse(f.read(), m)
        write(seeds, os.path.basename(path)[:-3], m.SerializeToString())

    seeds = os.path.join(work, "fuzz_config", "seeds")
    for path in sorted(glob.glob(f"{ROOT}/tests/runtime/data/*.txt")):
        with open(path, "rb") as f:
            write(seeds, os.path.basename(path), f.read())

    # Format bytes: FuzzDatasets.cpp's formats[] order.
    seeds = os.path.join(work, "fuzz_datasets", "seeds")
    idx = bytes([0, 0, 8, 3]) + b"".join(d.to_bytes(4, "big") for d in (2, 2, 2))
    write(seeds, "images.idx", bytes([0]) + idx + bytes(range(8)))
    write(seeds, "labels.idx", bytes([0, 0, 0, 8, 1, 0, 0, 0, 2, 3, 7]))
    buf = io.BytesIO()
    np.save(buf, np.arange(8, dtype=np.float32).reshape(2, 1, 2, 2))
    write(seeds, "images.npy", bytes([1]) + buf.getvalue())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for key, arr in (("x", np.zeros((2, 2, 2), np.uint8)),
                         ("y", np.array([1, 2], np.int64))):
            b = io.BytesIO()
            np.save(b, arr)
            z.writestr(key + ".npy", b.getvalue())
    write(seeds, "data.npz", bytes([2]) + buf.getvalue())
    write(seeds, "cifar10.bin", bytes([3]) + bytes([3]) + bytes(3072))
    write(seeds, "cifar100.bin", bytes([4]) + bytes([1, 5]) + bytes(3072))
    write(seeds, "images.bin", bytes([5]) + np.arange(8, dtype="<f4").tobytes())

    # Selector bytes: FuzzCommandLine.cpp's switch; words NUL-separated.
    seeds = os.path.join(work, "fuzz_command_line", "seeds")
    lines = {
        0: ["m.onnx", "--tune", "tune_input.bin", "--test", "test_input.bin",
            "-o", "out", "--batch-size", "16", "--max-size", "2GiB:64MiB",
            "--input-shape", "x:1x3x32x32", "--opset", "13"],
        1: ["convert", "a.idx", "b.idx", "-o", "d", "--scale", "1/255",
            "--normalize", "0.5,0.25", "--split", "tune=10,test=20",
            "--shape", "1,28,28", "--shuffle", "3", "--limit", "50"],
        2: ["-c", "c.txt", "--config", "2", "--batch-size", "8", "--limit",
            "100", "--threads", "2", "--output", "o.npy", "--qos-loss", "0.5",
            "--repeat", "3", "--json", "r.json"],
        3: ["-o", "cal.txt", "--method", "percentile:99.9", "--images", "100",
            "--batch-size", "10"],
        4: ["--qos-loss", "1,2", "--budget", "30s", "--time-limit", "5m",
            "-o", "t.txt", "--seed", "7", "--threads", "2"],
        5: ["--batch", "4", "--repeats", "2", "--knobs", "11,311",
            "--json", "k.json"],
    }
    for sel, words in lines.items():
        write(seeds, f"parser{sel}",
              bytes([sel]) + b"\0".join(w.encode() for w in words))

    seeds = os.path.join(work, "fuzz_config_calibration", "seeds")
    head = "100\n+++++\nconf1 1 1 100 0\n"
    exact = (head + "1 cpu conv fp32 11 add fp32 1 tanh fp32 1 pool_max fp32 1\n"
             "2 cpu mul fp32 11 add fp32 1 tanh fp32 1\n"
             "3 cpu softmax fp32 1\n-----\n")
    int8 = (head + "1 cpu conv int8 311 add fp32 1 tanh fp32 1 pool_max fp32 1\n"
            "2 cpu mul int8 312 add fp32 1 tanh fp32 1\n"
            "3 cpu softmax fp32 1\n-----\n")
    cal = ("torch2hpvm-int8-calibration 1\nmodel chain\nmethod minmax\n"
           "images 2\nnode 1 conv -1 1\nnode 2 mul 0 0.75\n")
    write(seeds, "exact.txt", exact.encode())
    write(seeds, "int8.txt", (int8 + "\n%%\n" + cal).encode())
    write(seeds, "two.txt", (exact + int8.split("\n", 1)[1] + "\n%%\n" + cal)
          .encode())

    for path in sorted(glob.glob(f"{ROOT}/tests/fuzz/regressions/*/*")):
        target = os.path.basename(os.path.dirname(path))
        with open(path, "rb") as f:
            write(os.path.join(work, target, "seeds"),
                  "finding-" + os.path.basename(path), f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
