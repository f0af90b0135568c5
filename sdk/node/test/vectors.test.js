'use strict';
// coldstart-checkpoint against the shared vectors in sdk/vectors/checkpoint.json.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const v8 = require('node:v8');
const { execFileSync, spawn } = require('node:child_process');

const cs = require('..');
const { checkpoint } = cs;

const ROOT = path.resolve(__dirname, '..', '..');
const VECTORS = JSON.parse(fs.readFileSync(path.join(ROOT, 'vectors', 'checkpoint.json'), 'utf8'));
// What a JS name can be, in the vectors' terms: strings hold U+0000 and unpaired
// surrogates; a Buffer/Uint8Array is decoded as UTF-8 with replacement.
const CAPABILITIES = new Set(['nul', 'surrogates', 'bytes']);
const { O_RDONLY, O_WRONLY, O_RDWR, O_NONBLOCK } = fs.constants;

function segments(parts, hex = false) {
  const bufs = parts.map((p) => {
    const [s, times] = typeof p === 'string' ? [p, 1] : [p.repeat, p.times];
    return hex ? Buffer.from(s.repeat(times), 'hex') : s.repeat(times);
  });
  return hex ? Buffer.concat(bufs) : bufs.join('');
}

/** A FIFO: a real pipe with a non-blocking read end r and a write end w. */
function fifo(writeMode = O_WRONLY) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-node-'));
  const p = path.join(dir, 'fifo');
  execFileSync('mkfifo', [p]);
  const r = fs.openSync(p, O_RDONLY | O_NONBLOCK);
  const w = fs.openSync(p, writeMode);
  fs.rmSync(dir, { recursive: true });
  return { r, w };
}

function readAll(fd) {
  const chunks = [];
  const buf = Buffer.alloc(65536);
  for (;;) {
    let n;
    try {
      n = fs.readSync(fd, buf, 0, buf.length, null);
    } catch (e) {
      if (e.code === 'EAGAIN') break;
      throw e;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  return Buffer.concat(chunks);
}

function expectLine(r, name, t0 = 0n, t1 = 2n ** 64n) {
  const data = readAll(r);
  assert.ok(data.length > 0, 'no line written');
  const m = /^cs1 (0|[1-9][0-9]{0,19}) /.exec(data.toString('latin1'));
  assert.ok(m, `bad line head: ${JSON.stringify(data.toString('latin1'))}`);
  const rest = data.subarray(m[0].length);
  assert.deepEqual(rest, Buffer.concat([Buffer.from(name, 'utf8'), Buffer.from('\n')]));
  const ts = BigInt(m[1]);
  assert.ok(t0 <= ts && ts <= t1, `timestamp ${ts} outside [${t0}, ${t1}]`);
}

function expectNothing(r) {
  assert.equal(readAll(r).length, 0, 'unexpected write');
}

function useFd(value) {
  if (value === null || value === undefined) delete process.env.COLDSTART_FD;
  else process.env.COLDSTART_FD = String(value);
  cs._reset();
}

test('vectors file matches this SDK', () => {
  assert.equal(VECTORS.protocol, 'cs1');
  assert.equal(VECTORS.max_name_bytes, cs.MAX_NAME_BYTES);
});

test('names', async (t) => {
  for (const c of VECTORS.names) {
    const missing = (c.requires || []).filter((r) => !CAPABILITIES.has(r));
    await t.test(c.id, { skip: missing.length ? `needs ${missing}` : false }, () => {
      const name = c.name_hex ? segments(c.name_hex, true) : segments(c.name);
      const { r, w } = fifo();
      try {
        useFd(w);
        const t0 = process.hrtime.bigint();
        assert.equal(checkpoint(name), undefined);
        const t1 = process.hrtime.bigint();
        expectLine(r, segments(c.expect), t0, t1);
      } finally {
        fs.closeSync(r);
        fs.closeSync(w);
      }
    });
  }
});

test('env', async (t) => {
  for (const c of VECTORS.env) {
    await t.test(c.id, () => {
      const { r, w } = fifo();
      const closed = fs.openSync('/dev/null', 'r');
      fs.closeSync(closed);
      try {
        const value =
          c.value === null
            ? null
            : c.value.replaceAll('{fd}', w).replaceAll('{closed_fd}', closed).replaceAll('{read_fd}', r);
        useFd(value);
        const t0 = process.hrtime.bigint();
        checkpoint('env-case');
        const t1 = process.hrtime.bigint();
        if (c.expect === 'line') expectLine(r, 'env-case', t0, t1);
        else expectNothing(r);
      } finally {
        fs.closeSync(r);
        fs.closeSync(w);
      }
    });
  }
});

const lifecycle = {
  'closed-after-first-use'() {
    const { r, w } = fifo();
    useFd(w);
    checkpoint('first');
    expectLine(r, 'first');
    fs.closeSync(w);
    checkpoint('after-close');
    fs.closeSync(r);
  },
  'fd-number-reused'() {
    const { r, w } = fifo();
    useFd(w);
    checkpoint('first');
    expectLine(r, 'first');
    fs.closeSync(w);
    // The lowest free number is taken first: open another pipe read-write until it lands on w.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-node-'));
    const p = path.join(dir, 'fifo');
    execFileSync('mkfifo', [p]);
    const extra = [];
    let rw;
    while ((rw = fs.openSync(p, O_RDWR)) !== w) {
      extra.push(rw);
      assert.ok(extra.length < 64, 'could not reuse the fd number');
    }
    const r2 = fs.openSync(p, O_RDONLY | O_NONBLOCK);
    fs.rmSync(dir, { recursive: true });
    checkpoint('must-not-arrive');
    expectNothing(r2);
    for (const fd of [...extra, rw, r2]) fs.closeSync(fd);
    fs.closeSync(r);
  },
  async 'reader-gone'() {
    const { r, w } = fifo();
    fs.closeSync(r);
    useFd(w);
    checkpoint('into-a-broken-pipe'); // EPIPE swallowed
    fs.closeSync(w);
    // A child whose checkpoint fd (its stdout) lost its reader must live on.
    const child = spawn(
      process.execPath,
      ['-e', `setTimeout(() => { const {checkpoint} = require(${JSON.stringify(path.resolve(__dirname, '..'))}); checkpoint('a'); checkpoint('b'); process.exitCode = 7; }, 200);`],
      { env: { ...process.env, COLDSTART_FD: '1' }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    child.stdout.destroy();
    const [code, signal] = await new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])));
    assert.deepEqual([code, signal], [7, null]);
  },
  'env-read-once'() {
    const { r, w } = fifo();
    useFd(w);
    checkpoint('first');
    expectLine(r, 'first');
    delete process.env.COLDSTART_FD;
    checkpoint('after-unset');
    expectLine(r, 'after-unset');
    process.env.COLDSTART_FD = 'junk';
    checkpoint('after-change');
    expectLine(r, 'after-change');
    fs.closeSync(r);
    fs.closeSync(w);
  },
};

test('lifecycle', async (t) => {
  for (const c of VECTORS.lifecycle) {
    await t.test(c.id, async () => {
      assert.ok(lifecycle[c.id], 'lifecycle case not implemented by the Node tests');
      await lifecycle[c.id]();
    });
  }
});

test('a child process writes to an inherited fd (the way coldstart runs a target)', async () => {
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'examples', 'emit.js'), 'child', '2'], {
    env: { ...process.env, COLDSTART_FD: '3' },
    stdio: ['ignore', 'inherit', 'inherit', 'pipe'],
  });
  const chunks = [];
  child.stdio[3].on('data', (d) => chunks.push(d));
  await new Promise((resolve) => child.on('close', resolve));
  const lines = Buffer.concat(chunks).toString('utf8').split('\n');
  assert.deepEqual(
    lines.map((l) => l.replace(/^cs1 [0-9]+ /, '')),
    ['child:begin', 'child:0:café', 'child:1:café', 'child:end', ''],
  );
});

function monoclock() {
  if (process.env.COLDSTART_MONOCLOCK) return process.env.COLDSTART_MONOCLOCK;
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cs-node-')), 'monoclock');
  try {
    execFileSync('cc', ['-O2', '-o', out, path.join(ROOT, 'tools', 'monoclock.c')]);
  } catch {
    return null;
  }
  return out;
}

test('process.hrtime.bigint() is CLOCK_MONOTONIC: a checkpoint lies between two readings by a C program', (t) => {
  const bin = monoclock();
  if (!bin) return t.skip('no COLDSTART_MONOCLOCK and no cc to build sdk/tools/monoclock.c');
  const { r, w } = fifo();
  useFd(w);
  const t0 = BigInt(execFileSync(bin, { encoding: 'latin1' }).trim());
  checkpoint('bracketed');
  const t1 = BigInt(execFileSync(bin, { encoding: 'latin1' }).trim());
  expectLine(r, 'bracketed', t0, t1);
  fs.closeSync(r);
  fs.closeSync(w);
});

test('never throws', () => {
  const { r, w } = fifo();
  useFd(w);
  const bad = {
    toString() {
      throw new Error('no');
    },
  };
  for (const name of [undefined, null, 42, bad, Symbol('s'), new Uint8Array([0x78, 0xff])]) checkpoint(name);
  const names = readAll(r)
    .toString('utf8')
    .split('\n')
    .map((l) => l.replace(/^cs1 [0-9]+ /, ''));
  assert.deepEqual(names, ['undefined', 'null', '42', 'Symbol(s)', 'x\ufffd', '']);
  fs.closeSync(r);
  fs.closeSync(w);
});

function gcsDuring(fn) {
  const profiler = new v8.GCProfiler();
  profiler.start();
  fn();
  return profiler.stop().statistics.length;
}

test('a disabled checkpoint allocates nothing (no GC during 3 million calls)', () => {
  for (const value of [null, 'junk']) {
    useFd(value);
    checkpoint('first call reads the environment');
    const calls = gcsDuring(() => {
      for (let i = 0; i < 3e6; i++) checkpoint('disabled');
    });
    assert.equal(calls, 0, `COLDSTART_FD=${value}: ${calls} GCs`);
  }
  // The method can see allocation: the same loop creating 3 million objects collects.
  const sink = [];
  const control = gcsDuring(() => {
    for (let i = 0; i < 3e6; i++) sink[i & 1023] = { i };
  });
  assert.ok(control > 0, 'control loop caused no GC');
});
