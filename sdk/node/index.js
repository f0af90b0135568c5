'use strict';
/**
 * App checkpoints for coldstart, a cold-start lab for Linux programs.
 *
 *   const { checkpoint } = require('coldstart-checkpoint');
 *   checkpoint('config-loaded');
 *
 * When the environment variable COLDSTART_FD names an open, writable file
 * descriptor (plain decimal digits), each call writes one line
 * `cs1 <CLOCK_MONOTONIC ns> <name>\n` to it with a single fs.writeSync (one
 * write(2)), so lines from several workers or processes never interleave.
 * Otherwise the call does nothing.
 *
 * - No-op cost: the first call reads COLDSTART_FD once and caches the result in
 *   a module variable; every later call with the variable unset or unusable is
 *   one comparison of small integers and creates no object.
 * - Clock: process.hrtime.bigint(), which on Linux is libuv's uv_hrtime, that is
 *   clock_gettime(CLOCK_MONOTONIC): the clock of the coldstart tool.
 * - Never throws: every error (a closed fd, EPIPE, EAGAIN on a full non-blocking
 *   pipe, a name whose conversion throws) is swallowed. Node ignores SIGPIPE.
 * - Names: '\n' and '\r' become ' '; unpaired surrogates become U+FFFD (a
 *   Buffer or Uint8Array is decoded as UTF-8 the same way); at most 1024 bytes of
 *   UTF-8 are kept, cut at a character boundary. Vectors: sdk/vectors/.
 */
const fs = require('fs');

/** Longest name written, in bytes of UTF-8; longer names are cut at a character boundary. */
const MAX_NAME_BYTES = 1024;

const UNINIT = -2;
const DISABLED = -1;
let fd = UNINIT; // >= 0: the fd
let ident = null; // { dev, ino } (bigints) of the fd at first use
let line = null; // the line buffer, allocated on first enabled use

function checkpoint(name) {
  if (fd === DISABLED) return; // the no-op path
  try {
    if (fd < 0 && init() < 0) return;
    write(name);
  } catch {
    // never let a checkpoint break the program
  }
}

/** 1..10 ASCII digits with a value of at most 2^31-1, else -1. */
function parseFd(value) {
  if (typeof value !== 'string' || !/^[0-9]{1,10}$/.test(value)) return -1;
  const v = Number(value);
  return v <= 0x7fffffff ? v : -1;
}

function init() {
  let result = DISABLED;
  const n = parseFd(process.env.COLDSTART_FD);
  if (n >= 0) {
    try {
      // Node has no fcntl: the access mode is in /proc/self/fdinfo/N ("flags:" in octal).
      const info = fs.readFileSync(`/proc/self/fdinfo/${n}`, 'latin1');
      const m = /^flags:\s*([0-7]+)$/m.exec(info);
      const mode = m ? parseInt(m[1], 8) & 3 : -1;
      if (mode === 1 || mode === 2) {
        const st = fs.fstatSync(n, { bigint: true });
        ident = { dev: st.dev, ino: st.ino };
        line = Buffer.alloc(4 + 20 + 1 + MAX_NAME_BYTES + 1);
        result = n;
      }
    } catch {
      // not open: stay disabled
    }
  }
  fd = result;
  return result;
}

function write(name) {
  const ns = process.hrtime.bigint();
  if (typeof name !== 'string') {
    name = ArrayBuffer.isView(name)
      ? Buffer.from(name.buffer, name.byteOffset, name.byteLength).toString('utf8')
      : String(name);
  }
  let n = line.write('cs1 ', 0, 'latin1');
  n += line.write(ns.toString(), n, 'latin1');
  line[n++] = 0x20;
  // Buffer#write never writes a partial character, and encodes unpaired surrogates as U+FFFD.
  const end = n + line.write(name, n, MAX_NAME_BYTES, 'utf8');
  for (let i = n; i < end; i++) {
    if (line[i] === 0x0a || line[i] === 0x0d) line[i] = 0x20;
  }
  line[end] = 0x0a;
  // The fd must still be the file it was at first use: the program may have
  // closed it and reused the number, and its data must never get our line.
  let st = null;
  try {
    st = fs.fstatSync(fd, { bigint: true });
  } catch {
    // closed
  }
  if (!st || st.dev !== ident.dev || st.ino !== ident.ino) {
    fd = DISABLED;
    return;
  }
  fs.writeSync(fd, line, 0, end + 1);
}

/** Test hook: forget the cached COLDSTART_FD so the next call reads it again. */
function _reset() {
  fd = UNINIT;
  ident = null;
}

module.exports = { checkpoint, MAX_NAME_BYTES, _reset };
