#!/usr/bin/env node
// ort_run.js - runs an ONNX model in ONNX Runtime (CPU, onnxruntime-node) for
// the benchmarks and their tests; prints one JSON object on stdout.
//
//   node ort_run.js time  MODEL BATCH THREADS WARMUP REPEAT
//       times REPEAT batches of BATCH random images after WARMUP ones; the
//       input shape is the model's with dim 0 set to BATCH. Prints
//       {"seconds": [per batch...], "images_per_s": best, ...}.
//   node ort_run.js eval  MODEL INPUT.bin LABELS.bin BATCH THREADS [LIMIT]
//       top-1 accuracy over a torch2hpvm dataset (float32 NCHW images,
//       int32 labels; LIMIT images at most) and the time it took.
//   node ort_run.js range MODEL INPUT.bin BATCH THREADS LIMIT
//       min and max of every model output over the first LIMIT images (the
//       calibration pass of ort_quantize.py, which lists the tensors to
//       observe as graph outputs).
//   node ort_run.js outputs MODEL INPUT.bin OUT.bin BATCH THREADS
//       the first output of every image of INPUT.bin, float32, in order.
//   node ort_run.js optimize MODEL OUT.onnx
//       writes the graph as ONNX Runtime optimizes it (which ops it fused).
//
// ONNX Runtime is found in $T2H_ORT_DIR, else in the repository's
// .deps/ort (scripts/install-deps.sh installs it there from the npm
// registry). Sessions use all graph optimizations, sequential execution,
// THREADS intra-op threads and one inter-op thread.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const ortDir = process.env.T2H_ORT_DIR || path.join(root, '.deps', 'ort');

function fail(msg) {
  process.stderr.write(`ort_run: ${msg}\n`);
  process.exit(1);
}

let ort;
try {
  ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));
} catch (e) {
  fail(`cannot load onnxruntime-node from ${ortDir} (${e.message}); run ` +
       'scripts/install-deps.sh, or set T2H_ORT_DIR');
}

function count(text, what) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) fail(`${what} '${text}' is not a count`);
  return n;
}

async function session(model, threads) {
  return ort.InferenceSession.create(model, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
}

function inputShape(s, batch) {
  const meta = s.inputMetadata[0];
  const dims = meta.shape.map((d) => (typeof d === 'number' ? d : -1));
  dims[0] = batch;
  if (dims.some((d) => d < 0)) {
    fail(`input ${meta.name} has a symbolic dimension other than the batch: ` +
         JSON.stringify(meta.shape));
  }
  return dims;
}

// Reads images [first, first + n) of a float32 dataset file.
function readImages(file, perImage, first, n) {
  const bytes = perImage * 4 * n;
  const buf = Buffer.alloc(bytes);
  const fd = fs.openSync(file, 'r');
  try {
    const got = fs.readSync(fd, buf, 0, bytes, first * perImage * 4);
    if (got !== bytes) fail(`${file}: short read at image ${first}`);
  } finally {
    fs.closeSync(fd);
  }
  return new Float32Array(buf.buffer, buf.byteOffset, perImage * n);
}

function imagesIn(file, perImage) {
  const size = fs.statSync(file).size;
  if (size % (perImage * 4) !== 0) {
    fail(`${file}: ${size} bytes is not a whole number of ` +
         `${perImage}-float images`);
  }
  return size / (perImage * 4);
}

async function timeMode([model, batchT, threadsT, warmupT, repeatT]) {
  const batch = count(batchT, 'batch');
  const threads = count(threadsT, 'threads');
  const s = await session(model, threads);
  const dims = inputShape(s, batch);
  const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
  let seed = 12345;
  for (let i = 0; i < data.length; ++i) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    data[i] = (seed / 4294967296) * 2 - 1;
  }
  const feeds = {[s.inputNames[0]]: new ort.Tensor('float32', data, dims)};
  for (let i = 0; i < count(warmupT, 'warmup'); ++i) await s.run(feeds);
  const seconds = [];
  for (let i = 0; i < count(repeatT, 'repeat'); ++i) {
    const t0 = process.hrtime.bigint();
    await s.run(feeds);
    seconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  const best = Math.min(...seconds);
  return {seconds, images_per_s: batch / best, batch, threads,
          version: ort.env.versions.common};
}

async function evalMode([model, input, labels, batchT, threadsT, limitT]) {
  const batch = count(batchT, 'batch');
  const s = await session(model, count(threadsT, 'threads'));
  const dims = inputShape(s, batch);
  const perImage = dims.slice(1).reduce((a, b) => a * b, 1);
  let n = imagesIn(input, perImage);
  if (limitT !== undefined) n = Math.min(n, count(limitT, 'limit'));
  const lab = new Int32Array(new Uint8Array(fs.readFileSync(labels)).buffer);
  if (lab.length < n) fail(`${labels}: ${lab.length} labels for ${n} images`);
  let correct = 0;
  const t0 = process.hrtime.bigint();
  for (let first = 0; first < n; first += batch) {
    const b = Math.min(batch, n - first);
    const x = readImages(input, perImage, first, b);
    const out = await s.run(
        {[s.inputNames[0]]: new ort.Tensor('float32', x, [b, ...dims.slice(1)])});
    const y = out[s.outputNames[0]];
    const classes = y.data.length / b;
    for (let i = 0; i < b; ++i) {
      let arg = 0;
      for (let c = 1; c < classes; ++c) {
        if (y.data[i * classes + c] > y.data[i * classes + arg]) arg = c;
      }
      if (arg === lab[first + i]) ++correct;
    }
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return {images: n, accuracy: (100 * correct) / n, seconds};
}

async function rangeMode([model, input, batchT, threadsT, limitT]) {
  const batch = count(batchT, 'batch');
  const s = await session(model, count(threadsT, 'threads'));
  const dims = inputShape(s, batch);
  const perImage = dims.slice(1).reduce((a, b) => a * b, 1);
  const n = Math.min(imagesIn(input, perImage), count(limitT, 'limit'));
  const ranges = {};
  for (let first = 0; first < n; first += batch) {
    const b = Math.min(batch, n - first);
    const x = readImages(input, perImage, first, b);
    const out = await s.run(
        {[s.inputNames[0]]: new ort.Tensor('float32', x, [b, ...dims.slice(1)])});
    for (const name of s.outputNames) {
      const d = out[name].data;
      let lo = Infinity;
      let hi = -Infinity;
      for (let i = 0; i < d.length; ++i) {
        if (d[i] < lo) lo = d[i];
        if (d[i] > hi) hi = d[i];
      }
      const r = ranges[name] || [Infinity, -Infinity];
      ranges[name] = [Math.min(r[0], lo), Math.max(r[1], hi)];
    }
  }
  return {images: n, ranges};
}

async function outputsMode([model, input, outFile, batchT, threadsT]) {
  const batch = count(batchT, 'batch');
  const s = await session(model, count(threadsT, 'threads'));
  const dims = inputShape(s, batch);
  const perImage = dims.slice(1).reduce((a, b) => a * b, 1);
  const n = imagesIn(input, perImage);
  const tmp = `${outFile}.tmp-${process.pid}`;
  const fd = fs.openSync(tmp, 'w');
  try {
    for (let first = 0; first < n; first += batch) {
      const b = Math.min(batch, n - first);
      const x = readImages(input, perImage, first, b);
      const out = await s.run(
          {[s.inputNames[0]]: new ort.Tensor('float32', x, [b, ...dims.slice(1)])});
      const y = out[s.outputNames[0]].data;
      fs.writeSync(fd, Buffer.from(y.buffer, y.byteOffset, y.byteLength));
    }
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, outFile);
  return {images: n};
}

async function optimizeMode([model, outFile]) {
  await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all',
    optimizedModelFilePath: outFile,
    logSeverityLevel: 3,
  });
  return {written: outFile};
}

const modes = {
  time: [timeMode, 5],
  eval: [evalMode, 5],
  range: [rangeMode, 5],
  outputs: [outputsMode, 5],
  optimize: [optimizeMode, 2],
};
const [mode, ...rest] = process.argv.slice(2);
if (!modes[mode] || rest.length < modes[mode][1]) {
  fail('usage: ort_run.js time|eval|range|outputs|optimize ... (see the ' +
       'comment at its top)');
}
modes[mode][0](rest).then(
    (r) => process.stdout.write(JSON.stringify(r) + '\n'),
    (e) => fail(e.message));
