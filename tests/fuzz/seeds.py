#!/usr/bin/python3
"""Seed corpora of the libFuzzer targets (scripts/fuzz.sh), from the test
fixtures: WORK/fuzz_onnx/seeds (the ONNX fixtures, binary), WORK/fuzz_config
/seeds (the configuration files of the tests), WORK/fuzz_datasets/seeds
(small files of every dataset format, prefixed with the target's format
byte)."""
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
