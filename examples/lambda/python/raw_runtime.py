#!/usr/bin/env python3
"""A runtime written against the raw Runtime API (stdlib only), for error paths.

CS_RT_MODE (optional):
  init-error  POST /runtime/init/error and exit 1
  hang        never call /next (for the init timeout)
  exit        exit(7) during init
  error-type  each invoke posts /error with CS_RT_ERROR_TYPE (header and body)
  big-response  each invoke posts a 7 MB response, then a small one; prints the
              two status codes ("big-response statuses: 413 403")
  (default)   echo each event as the response
CS_RT_SAY (optional): a line the runtime prints during init (a function log)
CS_RT_PARTIAL (optional): text each invoke writes to stdout without a newline
  (flushed) before it responds
CS_RT_INIT_WORK, CS_RT_INVOKE_WORK (optional): iterations of a CPU-bound loop
  during init / in each invoke (a fixed amount of CPU work, so its time shows the
  CPU the sandbox gives)
CS_RT_SEE (optional): a file the runtime writes during init with what it sees,
  one JSON object: cwd, LAMBDA_TASK_ROOT, the files under /var/task and /opt
  (relative paths, sorted), /opt/a's text, the address `sandbox` resolves to
  (null if it does not), its mount namespace (/proc/self/ns/mnt)
CS_RT_ALLOC_MB (optional): MB the runtime allocates and writes during init
  (kept until it exits)
CS_RT_INVOKE_ALLOC_MB (optional): MB each invoke allocates and writes before
  it responds (to run past the memory size)
CS_RT_MAP_FILE (optional): a file the runtime maps and reads every page of
  during init (kept mapped until it exits)
CS_RT_HWM_FILE (optional): each invoke writes the runtime's VmHWM (peak RSS, kB,
  from /proc/self/status) there before it responds
CS_RT_INVOKE_SLEEP_MS (optional): each invoke sleeps this long before it
  responds (to run past --timeout)
CS_RT_AFTER_MS (optional): after posting each response, sleep this long before
  the next /next (work after the response, as a runtime flushing telemetry does)
CS_RT_AFTER_SAY (optional): after that sleep, print this line and the invoke's
  number ("after-response 1")
CS_RT_TIMES (optional): a file each invoke appends one line to, its
  CLOCK_MONOTONIC ns instants: before /next, after /next returned, before
  posting the response, after the post returned (space-separated)
CS_CHECKPOINT_SDK (optional): sdk/python/src; then checkpoints rt.start (first
  thing) and rt.before-next (right before the first /next), and with CS_READY_DIR
  the file `runtime` holds the CLOCK_MONOTONIC ns instant right after rt.before-next
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

if os.environ.get("CS_CHECKPOINT_SDK"):
    sys.path.insert(0, os.environ["CS_CHECKPOINT_SDK"])
    from coldstart_checkpoint import checkpoint
else:

    def checkpoint(name):
        pass


checkpoint("rt.start")
API = "http://" + os.environ["AWS_LAMBDA_RUNTIME_API"] + "/2018-06-01/runtime"


def call(method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(API + path, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(req) as resp:
        return resp.headers, resp.read()


def status_of(method, path, body):
    try:
        call(method, path, body)
        return 202
    except urllib.error.HTTPError as e:
        return e.code




def burn(var):
    x = 0
    for i in range(int(os.environ.get(var, "0"))):
        x ^= i * 7
    return x


def files_under(top):
    found = []
    for d, _, names in os.walk(top):
        found += [os.path.relpath(os.path.join(d, n), top) for n in names]
    return sorted(found)


def resolve(name):
    import socket

    try:
        return socket.gethostbyname(name)
    except OSError:
        return None


def text_of(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


if os.environ.get("CS_RT_SEE"):
    seen = {
        "cwd": os.getcwd(),
        "task_root": os.environ.get("LAMBDA_TASK_ROOT"),
        "var_task": files_under("/var/task"),
        "opt": files_under("/opt"),
        "opt_a": text_of("/opt/a"),
        "sandbox": resolve("sandbox"),
        "sandbox.localdomain": resolve("sandbox.localdomain"),
        "mnt_ns": os.readlink("/proc/self/ns/mnt"),
    }
    # Whole or not at all: a reader waits for the name to appear.
    with open(os.environ["CS_RT_SEE"] + ".part", "w") as f:
        json.dump(seen, f)
    os.replace(os.environ["CS_RT_SEE"] + ".part", os.environ["CS_RT_SEE"])


mode = os.environ.get("CS_RT_MODE", "")
if mode == "init-error":
    call(
        "POST",
        "/init/error",
        {"errorMessage": "cannot load handler", "errorType": "Runtime.ImportModuleError", "stackTrace": []},
        {"Lambda-Runtime-Function-Error-Type": "Runtime.ImportModuleError"},
    )
    sys.exit(1)
if mode == "hang":
    while True:
        time.sleep(3600)
if mode == "exit":
    sys.exit(7)

burn("CS_RT_INIT_WORK")
# bytes * n writes every byte: each page is touched, not only reserved.
kept = b"x" * (int(os.environ.get("CS_RT_ALLOC_MB", "0") or 0) << 20)
if os.environ.get("CS_RT_MAP_FILE"):
    import mmap

    with open(os.environ["CS_RT_MAP_FILE"], "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    # One byte per page: each page becomes resident in this mapping.
    sum(mapped[i] for i in range(0, len(mapped), 4096))


def record_hwm(var):
    if os.environ.get(var):
        with open("/proc/self/status") as f:
            hwm = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
        with open(os.environ[var], "w") as f:
            f.write(hwm)


if os.environ.get("CS_RT_SAY"):
    print(os.environ["CS_RT_SAY"], flush=True)
checkpoint("rt.before-next")
if os.environ.get("CS_CHECKPOINT_SDK") and os.environ.get("CS_READY_DIR"):
    with open(os.path.join(os.environ["CS_READY_DIR"], "runtime"), "w") as f:
        f.write(str(time.clock_gettime_ns(time.CLOCK_MONOTONIC)))
def mono():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


invokes = 0
while True:
    t_next = mono()
    headers, body = call("GET", "/invocation/next")
    t_got = mono()
    invokes += 1
    request_id = headers["Lambda-Runtime-Aws-Request-Id"]
    if os.environ.get("CS_RT_INVOKE_SLEEP_MS"):
        time.sleep(int(os.environ["CS_RT_INVOKE_SLEEP_MS"]) / 1000)
    burn("CS_RT_INVOKE_WORK")
    record_hwm("CS_RT_HWM_FILE")
    grown = b"y" * (int(os.environ.get("CS_RT_INVOKE_ALLOC_MB", "0") or 0) << 20)
    if os.environ.get("CS_RT_PARTIAL"):
        sys.stdout.write(os.environ["CS_RT_PARTIAL"])
        sys.stdout.flush()
    if mode == "error-type":
        kind = os.environ.get("CS_RT_ERROR_TYPE", "")
        call(
            "POST",
            "/invocation/" + request_id + "/error",
            {"errorMessage": "handler failed", "errorType": kind, "stackTrace": []},
            {"Lambda-Runtime-Function-Error-Type": kind},
        )
        continue
    if mode == "big-response":
        big = status_of("POST", "/invocation/" + request_id + "/response", {"blob": "x" * (7 * 1024 * 1024)})
        small = status_of("POST", "/invocation/" + request_id + "/response", {"ok": True})
        print("big-response statuses: %d %d" % (big, small), flush=True)
        continue
    t_post = mono()
    call("POST", "/invocation/" + request_id + "/response", {"echo": json.loads(body or b"null")})
    t_posted = mono()
    if os.environ.get("CS_RT_TIMES"):
        with open(os.environ["CS_RT_TIMES"], "a") as f:
            f.write("%d %d %d %d\n" % (t_next, t_got, t_post, t_posted))
    if os.environ.get("CS_RT_AFTER_MS"):
        time.sleep(int(os.environ["CS_RT_AFTER_MS"]) / 1000)
    if os.environ.get("CS_RT_AFTER_SAY"):
        print("%s %d" % (os.environ["CS_RT_AFTER_SAY"], invokes), flush=True)
