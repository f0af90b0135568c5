// coldstart example target: minimal HTTP server (Node.js, node:http).
//
// Used to measure runtime cold start with HTTP readiness.
// Identical behaviour to the Python/Go/Java/Rust examples:
//   * port: `--port N` (first args) > env PORT > 8080; PORT=0 picks a free port
//   * env COLDSTART_EXAMPLE_DELAY_MS: sleep this long BEFORE binding (fake init)
//   * binds 127.0.0.1 only, then prints exactly `listening on 127.0.0.1:PORT`
//   * GET / and GET /health -> 200 "ok\n"; other GET paths -> 404; other methods -> 405
//   * SIGTERM -> exit 0 promptly
'use strict';
const http = require('node:http');

function fail(msg) {
  process.stderr.write(`server.js: ${msg}\n`);
  process.exit(2);
}

function parsePort() {
  const args = process.argv.slice(2);
  const raw = args[0] === '--port' && args.length >= 2 ? args[1] : (process.env.PORT ?? '8080');
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) fail(`invalid port '${raw}'`);
  return port;
}

function delayMs() {
  const raw = process.env.COLDSTART_EXAMPLE_DELAY_MS ?? '';
  if (raw === '') return 0;
  if (!/^\d+$/.test(raw)) fail(`COLDSTART_EXAMPLE_DELAY_MS must be a non-negative integer, got '${raw}'`);
  return Number(raw);
}

function reply(res, status, body) {
  res.writeHead(status, {
    'Content-Type': 'text/plain',
    'Content-Length': Buffer.byteLength(body),
    Connection: 'close',
  });
  res.end(body);
}

function handler(req, res) {
  const path = req.url.split('?', 1)[0];
  if (req.method !== 'GET') reply(res, 405, 'method not allowed\n');
  else if (path === '/' || path === '/health') reply(res, 200, 'ok\n');
  else reply(res, 404, 'not found\n');
}

process.on('SIGTERM', () => process.exit(0));

function start(port) {
  const server = http.createServer(handler);
  server.on('error', (err) => fail(err.message));
  server.listen(port, '127.0.0.1', () => {
    // stdout is synchronous for files and pipes on Linux, so this is flushed.
    process.stdout.write(`listening on 127.0.0.1:${server.address().port}\n`);
  });
}

const port = parsePort();
const delay = delayMs();
// A timer rather than a blocking sleep so SIGTERM stays prompt during the delay.
if (delay > 0) setTimeout(start, delay, port);
else start(port);
