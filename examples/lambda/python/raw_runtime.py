#!/usr/bin/env python3
"""A runtime written against the raw Runtime API (stdlib only), for error paths.

CS_RT_MODE (optional):
  init-error  POST /runtime/init/error and exit 1
  hang        never call /next (for the init timeout)
  exit        exit(7) during init
  (default)   echo each event as the response
"""
import json
import os
import sys
import time
import urllib.request

API = "http://" + os.environ["AWS_LAMBDA_RUNTIME_API"] + "/2018-06-01/runtime"


def call(method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(API + path, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(req) as resp:
        return resp.headers, resp.read()


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
while True:
    headers, body = call("GET", "/invocation/next")
    request_id = headers["Lambda-Runtime-Aws-Request-Id"]
    call("POST", "/invocation/" + request_id + "/response", {"echo": json.loads(body or b"null")})
