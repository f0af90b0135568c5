#!/usr/bin/env python3
"""An external extension written against the raw Extensions API (stdlib only).

Registers under its file name for INVOKE and SHUTDOWN, then loops on /event/next.
Environment (all optional):
  CS_READY_DIR      write <name> there with the CLOCK_MONOTONIC ns instant right
                    before the first /event/next
  CS_EXT_DELAY_MS   extra init work before that instant
  CS_EXT_MODE       init-error: report /extension/init/error instead of getting ready
                    exit: exit(3) right after registering
  CS_EXT_ALLOC_MB   MB allocated and written during init (kept until exit)
  CS_EXT_HWM_FILE   on each INVOKE event, write the extension's VmHWM (peak RSS,
                    kB, from /proc/self/status) there
  CS_CHECKPOINT_SDK sdk/python/src: checkpoints NAME.start (first thing) and
                    NAME.before-next (right before the CS_READY_DIR instant)
  CS_EXT_SUBSCRIBE  telemetry | logs: subscribe to that API (platform, function,
                    extension) with destination http://CS_EXT_DEST_HOST:CS_EXT_LISTEN_PORT
                    (host default `sandbox`, as extensions written for Lambda do);
                    with CS_EXT_RECORDS, a listener on 127.0.0.1:CS_EXT_LISTEN_PORT
                    appends every record it receives there, one JSON per line
  CS_EXT_LISTEN_HOST  bind that listener to this name instead (`sandbox`, as AWS's
                    samples do: it resolves only inside Lambda's sandbox)
"""
import json
import os
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API = "http://" + os.environ["AWS_LAMBDA_RUNTIME_API"] + "/2020-01-01/extension"
NAME = os.path.basename(sys.argv[0])
if os.environ.get("CS_CHECKPOINT_SDK"):
    sys.path.insert(0, os.environ["CS_CHECKPOINT_SDK"])
    from coldstart_checkpoint import checkpoint
else:

    def checkpoint(name):
        pass


checkpoint(NAME + ".start")


def call(method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(API + path, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(req) as resp:
        return resp.headers, resp.read()


headers, _ = call("POST", "/register", {"events": ["INVOKE", "SHUTDOWN"]}, {"Lambda-Extension-Name": NAME})
ext_id = headers["Lambda-Extension-Identifier"]
mode = os.environ.get("CS_EXT_MODE", "")
if mode == "init-error":
    call(
        "POST",
        "/init/error",
        {"errorMessage": "config missing", "errorType": "Extension.ConfigInvalid", "stackTrace": []},
        {"Lambda-Extension-Identifier": ext_id, "Lambda-Extension-Function-Error-Type": "Extension.ConfigInvalid"},
    )
    sys.exit(1)
if mode == "exit":
    sys.exit(3)
subscribe = os.environ.get("CS_EXT_SUBSCRIBE")
if subscribe:
    port = int(os.environ["CS_EXT_LISTEN_PORT"])
    records = os.environ.get("CS_EXT_RECORDS")
    if records:

        class Listener(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with open(records, "a") as f:
                    for r in json.loads(body):
                        f.write(json.dumps(r) + "\n")
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer((os.environ.get("CS_EXT_LISTEN_HOST", "127.0.0.1"), port), Listener)
        threading.Thread(target=server.serve_forever, daemon=True).start()
    api = "http://" + os.environ["AWS_LAMBDA_RUNTIME_API"]
    path, schema = {
        "telemetry": ("/2022-07-01/telemetry", "2022-12-13"),
        "logs": ("/2020-08-15/logs", "2021-03-18"),
    }[subscribe]
    sub = {
        "schemaVersion": schema,
        "types": ["platform", "function", "extension"],
        "buffering": {"timeoutMs": 25, "maxBytes": 262144, "maxItems": 1000},
        "destination": {"protocol": "HTTP", "URI": "http://%s:%d" % (os.environ.get("CS_EXT_DEST_HOST", "sandbox"), port)},
    }
    req = urllib.request.Request(
        api + path,
        data=json.dumps(sub).encode(),
        method="PUT",
        headers={"Lambda-Extension-Identifier": ext_id},
    )
    urllib.request.urlopen(req).read()
# bytes * n writes every byte: each page is touched, not only reserved.
kept = b"x" * (int(os.environ.get("CS_EXT_ALLOC_MB", "0") or 0) << 20)
delay = int(os.environ.get("CS_EXT_DELAY_MS", "0") or 0)
if delay:
    time.sleep(delay / 1000)
checkpoint(NAME + ".before-next")
ready_dir = os.environ.get("CS_READY_DIR")
if ready_dir:
    with open(os.path.join(ready_dir, NAME), "w") as f:
        f.write(str(time.clock_gettime_ns(time.CLOCK_MONOTONIC)))
while True:
    _, body = call("GET", "/event/next", headers={"Lambda-Extension-Identifier": ext_id})
    event = json.loads(body)
    if event.get("eventType") == "SHUTDOWN":
        sys.exit(0)
    if os.environ.get("CS_EXT_HWM_FILE"):
        with open("/proc/self/status") as f:
            hwm = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
        with open(os.environ["CS_EXT_HWM_FILE"], "w") as f:
            f.write(hwm)
