#!/usr/bin/python3
"""oracle.py - NumPy oracle for hpvm_rt's approximate convolutions.

Written from the behavioural description of HPVM's CPU algorithms (reference
sections 6.1-6.3 and 6.5), independently of the C++ kernels, so that the
doctest tests in this folder can compare element by element.

Usage: oracle.py DIR
DIR/cases.json is a list of cases; each names its .npy inputs (float32, in
DIR) and the .npy file to write. Case fields:
  op      : "conv" | "perf_row" | "perf_col" | "samp" | "half" | "bf16"
  x, w    : input file names (w only for the convolutions)
  out     : output file name (float32)
  pad, stride : [vertical, horizontal]
  groups, rate, offset : integers (convolutions)
Exit status 0 on success; any inconsistency raises.
"""

import json
import math
import os
import sys

import numpy as np


def conv2d(x, w, pad, stride, groups):
    """Exact zero-padded cross-correlation, accumulated in float64."""
    n, c, h, wd = x.shape
    k, cg, kh, kw = w.shape
    assert c == cg * groups and k % groups == 0
    kg = k // groups
    ho = 1 + (h + 2 * pad[0] - kh) // stride[0]
    wo = 1 + (wd + 2 * pad[1] - kw) // stride[1]
    xp = np.zeros((n, c, h + 2 * pad[0], wd + 2 * pad[1]), np.float64)
    xp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + wd] = x
    y = np.zeros((n, k, ho, wo), np.float64)
    w64 = w.astype(np.float64)
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                win = xs[:, :, i:i + stride[0] * (ho - 1) + 1:stride[0],
                         j:j + stride[1] * (wo - 1) + 1:stride[1]]
                # win: n x cg x ho x wo; filter tap: kg x cg.
                tap = w64[g * kg:(g + 1) * kg, :, i, j]
                y[:, g * kg:(g + 1) * kg] += np.einsum("nchw,kc->nkhw", win,
                                                       tap)
    return y


def skipped_positions(length, rate, offset):
    """Section 6.2: position i is skipped iff i >= s and (i - s) mod r == 0;
    a single-position axis is always computed (the [REC] fix)."""
    if length == 1 or rate == 1:
        return []
    skipped = [i for i in range(length)
               if i >= offset and (i - offset) % rate == 0]
    # Cross-check against the reference's enumeration of computed rows:
    # Hc = L - ceil((L - s) / r) rows, those below s, then
    # ceil((t - s + 1) * r / (r - 1)) + s - 1 for t = s, s + 1, ...
    computed_count = length - math.ceil((length - offset) / rate)
    computed = [t for t in range(min(offset, computed_count))]
    for t in range(offset, computed_count):
        computed.append(math.ceil((t - offset + 1) * rate / (rate - 1)) +
                        offset - 1)
    assert sorted(computed + skipped) == list(range(length)), (
        length, rate, offset, computed, skipped)
    return skipped


def perforate(y, axis, rate, offset):
    """Fills the skipped rows (axis 2) or columns (axis 3) of the exact
    output y: index 0 copies index 1, the last copies the one before it,
    others average both neighbours."""
    y = np.moveaxis(y.copy(), axis, 0)
    length = y.shape[0]
    for i in skipped_positions(length, rate, offset):
        if i == 0:
            y[0] = y[1]
        elif i == length - 1:
            y[i] = y[length - 2]
        else:
            y[i] = (y[i - 1] + y[i + 1]) / 2
    return np.moveaxis(y, 0, axis)


def sampled_filter(w, rate, offset):
    """Section 6.3: the filter with skipped elements zeroed and kept ones
    multiplied (in float32) by rate / (rate - 1)."""
    k, cg, kh, kw = w.shape
    if rate == 1:
        return w.copy()
    skip = np.zeros((cg, kh, kw), bool)
    area = kh * kw
    for c in range(cg):
        for i in range(kh):
            for j in range(kw):
                if area % rate == 0:
                    p = i * kw + j
                    o = (offset + c) % rate
                    skip[c, i, j] = p >= o and (p - o) % rate == 0
                else:
                    e = (c * kh + i) * kw + j
                    skip[c, i, j] = e >= offset and (e - offset) % rate == 0
    scale = np.float32(rate) / np.float32(rate - 1)
    scaled = (w.astype(np.float32) * scale).astype(np.float32)
    return np.where(skip[None], np.float32(0), scaled)


def round_half(x):
    """IEEE binary16, round to nearest even, and back."""
    with np.errstate(over="ignore"):
        return x.astype(np.float16).astype(np.float32)


def round_bf16(x):
    """bfloat16, round to nearest even (NaN stays NaN), and back; bit exact
    on the float32 encoding."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    is_nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    quiet = (bits | 0x00400000) & 0xFFFF0000
    out = np.where(is_nan, quiet, rounded).astype(np.uint32)
    return out.view(np.float32)


def run_case(d, case, cache):
    x = np.load(os.path.join(d, case["x"]))
    assert x.dtype == np.float32
    op = case["op"]
    if op == "half":
        y = round_half(x)
    elif op == "bf16":
        y = round_bf16(x)
    else:
        w = np.load(os.path.join(d, case["w"]))
        pad, stride, groups = case["pad"], case["stride"], case["groups"]
        rate, offset = case.get("rate", 1), case.get("offset", 0)
        if op == "samp":
            y = conv2d(x, sampled_filter(w, rate, offset), pad, stride,
                       groups)
        else:
            # Perforation variants of one problem share the exact result.
            key = (case["x"], case["w"], tuple(pad), tuple(stride), groups)
            if key not in cache:
                cache[key] = conv2d(x, w, pad, stride, groups)
            y = cache[key]
        if op == "perf_row":
            y = perforate(y, 2, rate, offset)
        elif op == "perf_col":
            y = perforate(y, 3, rate, offset)
        else:
            assert op in ("conv", "samp"), op
        y = y.astype(np.float32)
    np.save(os.path.join(d, case["out"]), np.ascontiguousarray(y))


def main():
    d = sys.argv[1]
    with open(os.path.join(d, "cases.json")) as f:
        cases = json.load(f)
    cache = {}
    for case in cases:
        run_case(d, case, cache)


if __name__ == "__main__":
    main()
