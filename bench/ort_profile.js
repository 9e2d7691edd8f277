#!/usr/bin/env node
// ort_profile.js: ONNX Runtime's own per-node times on one model, in the model (the
// session's graph optimizations, fusions and layout changes applied), for
// bench/compare_steps.py.
//
//   node bench/ort_profile.js --model M.onnx [--input X.npy] [--iterations 50]
//
// Session as in ort_bench.js (CPU execution provider, graphOptimizationLevel 'all', one
// thread, sequential) plus ORT's profiler. Prints one JSON object: for each node ORT ran,
// its op type and median kernel time in microseconds over the runs
// ({"name": {"op": "Conv", "us": 123.4}, ...}). Node names are ORT's: a fused node is
// named after its last output (a "_nchwc" suffix when ORT moved it to channel-blocked
// layout); ReorderInput/ReorderOutput are ORT's layout changes.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const ORT_DIR = process.env.ORT_NODE_DIR || path.join(__dirname, 'node_modules', 'onnxruntime-node');
const ort = require(ORT_DIR);

function usage(msg) {
  process.stderr.write(`ort_profile.js: ${msg}\n`);
  process.exit(2);
}

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') usage(`${file} is not a .npy file`);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  if (!/'descr':\s*'<f4'/.test(header)) usage(`${file}: only float32 inputs are supported`);
  const m = header.match(/'shape':\s*\(([^)]*)\)/);
  if (!m) usage(`${file}: no shape in the .npy header`);
  const shape = m[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const raw = buf.subarray(10 + headerLen);
  const data = new Float32Array(raw.length / 4);
  new Uint8Array(data.buffer).set(raw);
  return { shape, data };
}

async function main() {
  const a = { iterations: 50 };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    let k = argv[i], v;
    const eq = k.indexOf('=');
    if (eq > 0) { v = k.slice(eq + 1); k = k.slice(0, eq); } else { v = argv[++i]; }
    if (v === undefined) usage(`${k} needs a value`);
    if (k === '--model') a.model = v;
    else if (k === '--input') a.input = v;
    else if (k === '--iterations') a.iterations = Number(v);
    else usage(`unknown option ${k}`);
  }
  if (!a.model) usage('--model is required');
  if (!Number.isInteger(a.iterations) || a.iterations < 1) usage('--iterations needs a positive integer');
  a.input = a.input || a.model.replace(/\.onnx$/, '.in.npy');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort-profile-'));
  try {
    const session = await ort.InferenceSession.create(a.model, {
      executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: 1, interOpNumThreads: 1,
      executionMode: 'sequential', enableProfiling: true, profileFilePrefix: path.join(dir, 'profile'),
    });
    const x = readNpy(a.input);
    const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
    await session.run(feeds);  // first run: allocations, not averaged with the others
    for (let i = 0; i < a.iterations; i++) await session.run(feeds);
    session.endProfiling();
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
    if (files.length !== 1) usage('ORT wrote no profile');
    const events = JSON.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8'));
    const times = {}, op = {};
    for (const e of events) {
      if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
      const name = e.name.slice(0, -'_kernel_time'.length);
      (times[name] = times[name] || []).push(e.dur);
      op[name] = e.args && e.args.op_name;
    }
    // The profile also holds the first run: the median keeps it from counting.
    const median = (xs) => {
      const s = xs.slice().sort((p, q) => p - q), h = s.length >> 1;
      return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
    };
    const out = {};
    for (const name of Object.keys(times)) out[name] = { op: op[name], us: median(times[name]) };
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => usage(e.message || String(e)));
