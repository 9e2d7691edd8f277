#!/usr/bin/env node
// ort_bench.js: latency of ONNX Runtime (onnxruntime-node, CPU execution provider) on
// one model, measured the way `ingot bench` measures ingot.
//
//   node bench/ort_bench.js --model M.onnx [--input X.npy] [--threads 1]
//        [--iterations 100] [--warmup 10] [--output Y.npy] [--ref R.npy] [--label NAME]
//   node bench/ort_bench.js --serve [--threads 1]
//
// Session: graphOptimizationLevel 'all', intraOpNumThreads --threads, interOpNumThreads 1,
// sequential execution, default arena and memory patterns.
// Timing: the native binding's InferenceSession.run is called synchronously (no Promise,
// no event-loop turn), each call timed on its own with process.hrtime; this is the
// cheapest path into ORT from JavaScript. Its fixed cost is what a one-Relu model
// measures (the "per-call floor").
// Statistics use the same definitions as `ingot bench`: median (mean of the two middle
// samples when even), p90/p99 by nearest rank, stddev with n-1.
// --output writes the first output of the first run as .npy (float32); --ref compares it
// with a reference .npy (max abs diff). Input defaults to M.in.npy beside the model.
// Prints exactly one line to stdout: a JSON object. Times in microseconds.
// --serve keeps one process for many measurements: requests on stdin, one JSON line each,
// results on stdout (see serve()); the sweep runner uses it to avoid a process start
// (and a session load) per round.
'use strict';
const fs = require('fs');
const path = require('path');

const ORT_DIR = process.env.ORT_NODE_DIR ||
    path.join(__dirname, 'node_modules', 'onnxruntime-node');
const ort = require(ORT_DIR);
const { binding, initOrt } = require(path.join(ORT_DIR, 'dist', 'binding.js'));

function usage(msg) {
  process.stderr.write(`ort_bench.js: ${msg}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const a = { threads: 1, iterations: 100, warmup: 10 };
  const num = (k, v) => {
    const x = Number(v);
    if (!Number.isInteger(x) || x < 0) usage(`${k} needs a non-negative integer, got '${v}'`);
    return x;
  };
  for (let i = 2; i < argv.length; i++) {
    let k = argv[i], v;
    const eq = k.indexOf('=');
    if (eq > 0) { v = k.slice(eq + 1); k = k.slice(0, eq); } else { v = argv[++i]; }
    if (v === undefined) usage(`${k} needs a value`);
    switch (k) {
      case '--model': a.model = v; break;
      case '--input': a.input = v; break;
      case '--output': a.output = v; break;
      case '--ref': a.ref = v; break;
      case '--label': a.label = v; break;
      case '--threads': a.threads = num(k, v); break;
      case '--iterations': a.iterations = num(k, v); break;
      case '--warmup': a.warmup = num(k, v); break;
      default: usage(`unknown option ${k}`);
    }
  }
  if (!a.model) usage('--model is required');
  if (a.iterations < 1) usage('--iterations must be at least 1');
  const stem = a.model.replace(/\.onnx$/, '');
  a.input = a.input || stem + '.in.npy';
  a.label = a.label || path.basename(stem);
  return a;
}

// .npy (version 1-3), little-endian float32, C order.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf[0] !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hoff = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hoff, hoff + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (descr !== '<f4') throw new Error(`${file}: only <f4 is supported, not ${descr}`);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order is not supported`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',')
      .map(s => s.trim()).filter(s => s.length).map(Number);
  const n = shape.reduce((x, y) => x * y, 1);
  const start = hoff + hlen;
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = buf.readFloatLE(start + 4 * i);
  return { data, shape };
}

function writeNpy(file, data, shape) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head[0] = 0x93;
  head.write('NUMPY', 1, 'latin1');
  head[6] = 1; head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.alloc(data.length * 4);
  for (let i = 0; i < data.length; i++) body.writeFloatLE(data[i], 4 * i);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

function nearestRank(sorted, p) {
  let rank = Math.ceil((p / 100) * sorted.length);
  rank = Math.min(Math.max(rank, 1), sorted.length);
  return sorted[rank - 1];
}

function summarize(samples) {
  const s = Float64Array.from(samples).sort();
  const n = s.length;
  let mean = 0;
  for (const x of s) mean += x;
  mean /= n;
  let sq = 0;
  for (const x of s) sq += (x - mean) * (x - mean);
  const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  const r = x => Math.round(x * 1000) / 1000;
  return {
    min: r(s[0]), median: r(median), p90: r(nearestRank(s, 90)), p99: r(nearestRank(s, 99)),
    max: r(s[n - 1]), mean: r(mean), stddev: r(n > 1 ? Math.sqrt(sq / (n - 1)) : 0),
  };
}

function maxAbsDiff(a, b) {
  if (a.length !== b.length) return null;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = Number.isNaN(d) ? Infinity : d;
  }
  return m;
}

function openSession(model, threads) {
  const options = {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  };
  const t0 = process.hrtime.bigint();
  const session = new binding.InferenceSession();
  session.loadModel(model, options);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  return {
    session, model, threads, loadMs,
    inName: session.inputMetadata[0].name, outName: session.outputMetadata[0].name,
  };
}

// One measurement on an open session: first run (output), warm-up, timed runs.
function measure(s, a) {
  const inp = readNpy(a.input);
  const feeds = { [s.inName]: new ort.Tensor('float32', inp.data, inp.shape) };
  const fetches = { [s.outName]: null };
  const runOptions = {};

  const first = s.session.run(feeds, fetches, runOptions)[s.outName];
  const result = {
    engine: 'onnxruntime-node', ort_version: ort.env.versions.common, model: a.label,
    threads: s.threads, iterations: a.iterations, warmup: a.warmup,
    load_ms: Math.round(s.loadMs * 10) / 10, output_shape: first.dims.map(Number),
  };
  if (a.output) writeNpy(a.output, first.data, first.dims.map(Number));
  if (a.ref) result.max_abs_diff_vs_ref = maxAbsDiff(first.data, readNpy(a.ref).data);

  for (let i = 0; i < a.warmup; i++) s.session.run(feeds, fetches, runOptions);
  const micros = new Float64Array(a.iterations);
  for (let i = 0; i < a.iterations; i++) {
    const start = process.hrtime.bigint();
    s.session.run(feeds, fetches, runOptions);
    const end = process.hrtime.bigint();
    micros[i] = Number(end - start) / 1e3;
  }
  Object.assign(result, { unit: 'us' }, summarize(micros));
  result.peak_rss_kb = process.resourceUsage().maxRSS;
  return result;
}

// Lines of standard input, read synchronously.
function* stdinLines() {
  const buf = Buffer.alloc(1 << 16);
  let pending = '';
  for (;;) {
    let n;
    try {
      n = fs.readSync(0, buf, 0, buf.length, null);
    } catch (e) {
      if (e.code === 'EAGAIN') continue;
      if (e.code === 'EOF') break;
      throw e;
    }
    if (n === 0) break;
    pending += buf.toString('utf8', 0, n);
    let i;
    while ((i = pending.indexOf('\n')) >= 0) {
      yield pending.slice(0, i);
      pending = pending.slice(i + 1);
    }
  }
  if (pending.trim()) yield pending;
}

// --serve: one JSON request per input line ({"model", "input", "iterations", "warmup",
// "output"?, "ref"?, "label"?}), one JSON result per output line ({"error": ...} on a
// failure). The session of the latest model stays open until another model is asked for.
function serve(threads) {
  let s = null;
  for (const line of stdinLines()) {
    if (!line.trim()) continue;
    let result;
    try {
      const req = JSON.parse(line);
      if (!s || s.model !== req.model) {
        if (s) s.session.dispose();
        s = null;
        s = openSession(req.model, threads);
      }
      const stem = req.model.replace(/\.onnx$/, '');
      result = measure(s, {
        input: req.input || stem + '.in.npy', output: req.output, ref: req.ref,
        label: req.label || path.basename(stem),
        iterations: Math.max(1, req.iterations || 100), warmup: req.warmup || 0,
      });
    } catch (e) {
      result = { error: String(e && e.message || e).split('\n')[0] };
    }
    process.stdout.write(JSON.stringify(result) + '\n');
  }
  if (s) s.session.dispose();
}

function main() {
  initOrt();
  if (process.argv.includes('--serve')) {
    const i = process.argv.indexOf('--threads');
    serve(i > 0 ? Number(process.argv[i + 1]) : 1);
    return;
  }
  const a = parseArgs(process.argv);
  const s = openSession(a.model, a.threads);
  const result = measure(s, a);
  s.session.dispose();
  process.stdout.write(JSON.stringify(result) + '\n');
}

try {
  main();
} catch (e) {
  process.stderr.write(`ort_bench.js: ${e && e.stack || e}\n`);
  process.exit(2);
}
