'use strict';
// coldstart's require recorder, preloaded with NODE_OPTIONS=--require by the
// node adapter (crates/explain/src/adapter/node.rs). It wraps Module._load and writes
// one JSON line per load to the file named by COLDSTART_NODE_REQUIRE_OUT, never
// to stdout/stderr. Times are process.hrtime.bigint(): libuv's uv_hrtime, which
// is clock_gettime(CLOCK_MONOTONIC) on Linux, the clock of coldstart's time zero.
//
// Writing: records are buffered and written with one writeSync each time a
// top-level require (one made by the main module, or with no require around
// it) finishes. A server is killed after ready with SIGTERM/SIGKILL and never
// runs 'exit', so every require that finished before the kill must already be
// in the file; one write(2) per top-level require is the cheapest way that
// holds. Loads still running at the kill are lost, and the collector says so.
(function () {
  // V8's own start-up report: Node refuses --profile-deserialization in
  // NODE_OPTIONS, so it is switched on here, for this process only. From now
  // on V8 prints each code-cache hit (a builtin or script compiled from cached
  // code) on stdout, where the adapter claims the lines.
  if (process.env.COLDSTART_NODE_V8_PROFILE) {
    delete process.env.COLDSTART_NODE_V8_PROFILE;
    try {
      require('v8').setFlagsFromString('--profile-deserialization');
    } catch (_) {}
  }
  const out = process.env.COLDSTART_NODE_REQUIRE_OUT;
  if (!out) return;
  // Only this process's main thread records: worker threads and child
  // processes copy process.env, so without the variable their preload does
  // nothing. (Asking require('worker_threads').isMainThread instead costs 3-10
  // ms of module loading, more than all the recording.)
  delete process.env.COLDSTART_NODE_REQUIRE_OUT;

  const fs = require('fs');
  const Module = require('module');
  const now = process.hrtime.bigint;
  const builtins = new Set(Module.builtinModules);
  const isBuiltin =
    typeof Module.isBuiltin === 'function'
      ? Module.isBuiltin
      : (r) => builtins.has(r.startsWith('node:') ? r.slice(5) : r);

  let fd;
  try {
    fd = fs.openSync(out, 'a');
  } catch (_) {
    return; // Nothing to record into; the collector reports no records.
  }
  const pid = process.pid;
  const seenBuiltins = new Set();
  const stack = []; // ids of the loads in progress, innermost last
  let mainId = -1;
  let nextId = 0;
  let pending = [];

  function flush() {
    if (pending.length === 0) return;
    const text = pending.join('\n') + '\n';
    pending = [];
    try {
      fs.writeSync(fd, text);
    } catch (_) {}
  }

  const load = Module._load;
  Module._load = function coldstartLoad(request, parent, isMain) {
    const id = nextId++;
    const parentId = stack.length > 0 ? stack[stack.length - 1] : -1;
    if (isMain && mainId < 0) mainId = id;
    const start = now();
    // Resolve once more here (Module._load does too, then hits the path cache)
    // to name the file and to tell a first load from a cache hit.
    let file = null;
    let cached = false;
    let builtin = false;
    if (typeof request === 'string' && isBuiltin(request)) {
      builtin = true;
      file = 'node:' + (request.startsWith('node:') ? request.slice(5) : request);
      cached = seenBuiltins.has(file);
      seenBuiltins.add(file);
    } else {
      try {
        file = Module._resolveFilename(request, parent, isMain);
        cached = Object.prototype.hasOwnProperty.call(Module._cache, file);
      } catch (_) {}
    }
    stack.push(id);
    let ok = false;
    try {
      const exports = load.apply(this, arguments);
      ok = true;
      return exports;
    } finally {
      const end = now();
      stack.pop();
      pending.push(
        JSON.stringify({
          pid: pid,
          id: id,
          parent: parentId,
          request: String(request),
          file: file,
          builtin: builtin,
          cached: cached,
          main: id === mainId,
          ok: ok,
          start: String(start),
          end: String(end),
        })
      );
      if (stack.length === 0 || (stack.length === 1 && stack[0] === mainId)) flush();
    }
  };
  process.on('exit', flush);
})();
