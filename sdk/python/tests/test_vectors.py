"""coldstart_checkpoint against the shared vectors in sdk/vectors/checkpoint.json."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

import coldstart_checkpoint as cs
from coldstart_checkpoint import checkpoint

ROOT = Path(__file__).resolve().parents[2]
VECTORS = json.loads((ROOT / "vectors" / "checkpoint.json").read_text(encoding="utf-8"))
LINE_HEAD = b"cs1 "

# What a Python name can be, in the vectors' terms: str holds U+0000 and unpaired
# surrogates; bytes are accepted too (decoded as UTF-8 with replacement).
CAPABILITIES = {"nul", "surrogates", "bytes"}


def mono():
    """CLOCK_MONOTONIC read directly (not through time.monotonic_ns, which the SDK uses)."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def segments(parts, hexmode=False):
    out = b"" if hexmode else ""
    for p in parts:
        if isinstance(p, dict):
            s, times = p["repeat"], p["times"]
        else:
            s, times = p, 1
        out += (bytes.fromhex(s) if hexmode else s) * times
    return out


def packet_pipe():
    """A pipe where each read returns exactly one write; the read end does not block."""
    r, w = os.pipe2(os.O_DIRECT)
    os.set_blocking(r, False)
    return r, w


def read_packet(r):
    try:
        return os.read(r, 8192) or None
    except BlockingIOError:
        return None


def expect_line(r, name, t0=0, t1=2**64):
    line = read_packet(r)
    assert line is not None, "no line written"
    assert line.startswith(LINE_HEAD) and line.endswith(b"\n"), line
    ts, sep, rest = line[4:].partition(b" ")
    assert sep and ts.isdigit() and len(ts) <= 20 and not (len(ts) > 1 and ts.startswith(b"0")), line
    assert rest == name.encode("utf-8") + b"\n"
    assert t0 <= int(ts) <= t1, f"timestamp {int(ts)} outside CLOCK_MONOTONIC [{t0}, {t1}]"
    assert read_packet(r) is None, "more than one write"


def expect_nothing(r):
    assert read_packet(r) is None, "unexpected write"


def use_fd(value):
    if value is None:
        os.environ.pop("COLDSTART_FD", None)
    else:
        os.environ["COLDSTART_FD"] = str(value)
    cs._reset()


@pytest.fixture(autouse=True)
def _restore_env():
    saved = os.environ.get("COLDSTART_FD")
    yield
    use_fd(saved)


def test_vectors_agree_with_reference_decoder():
    """The vector file itself: expectations follow from Python's own UTF-8 codec."""
    assert VECTORS["protocol"] == "cs1" and VECTORS["max_name_bytes"] == cs.MAX_NAME_BYTES
    ids = [c["id"] for c in VECTORS["names"]]
    assert len(ids) == len(set(ids))
    for c in VECTORS["names"]:
        if "name_hex" in c:
            text = segments(c["name_hex"], True).decode("utf-8", "replace")
        else:
            text = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in segments(c["name"]))
        b = text.encode().replace(b"\n", b" ").replace(b"\r", b" ")
        if len(b) > 1024:
            k = 1024
            while b[k] & 0xC0 == 0x80:
                k -= 1
            b = b[:k]
        assert b == segments(c["expect"]).encode(), c["id"]


@pytest.mark.parametrize("case", VECTORS["names"], ids=lambda c: c["id"])
def test_name(case):
    if not set(case.get("requires", [])) <= CAPABILITIES:
        pytest.skip(f"needs {case['requires']}")
    name = segments(case["name_hex"], True) if "name_hex" in case else segments(case["name"])
    r, w = packet_pipe()
    try:
        use_fd(w)
        t0 = mono()
        assert checkpoint(name) is None
        t1 = mono()
        expect_line(r, segments(case["expect"]), t0, t1)
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("case", VECTORS["env"], ids=lambda c: c["id"])
def test_env(case):
    r, w = packet_pipe()
    closed = os.open("/dev/null", os.O_RDONLY)
    os.close(closed)
    try:
        value = case["value"]
        if value is not None:
            value = value.replace("{fd}", str(w)).replace("{closed_fd}", str(closed))
            value = value.replace("{read_fd}", str(r))
        use_fd(value)
        t0 = mono()
        checkpoint("env-case")
        t1 = mono()
        if case["expect"] == "line":
            expect_line(r, "env-case", t0, t1)
        else:
            expect_nothing(r)
    finally:
        os.close(r)
        os.close(w)


REPORTER_GONE_CHILD = """
import os, signal, socket, sys
sys.path.insert(0, sys.argv[1])
import coldstart_checkpoint as cs
signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # as a CLI that wants to die quietly on EPIPE
r, w = os.pipe()
os.close(r)
os.environ["COLDSTART_FD"] = str(w)
cs._reset()
cs.checkpoint("into-a-broken-pipe")
a, b = socket.socketpair()
a.close()
os.environ["COLDSTART_FD"] = str(b.fileno())
cs._reset()
cs.checkpoint("into-a-broken-socket")
assert signal.SIGPIPE not in signal.sigpending()
print("survived")
"""


def lifecycle_closed_after_first_use():
    r, w = packet_pipe()
    use_fd(w)
    checkpoint("first")
    expect_line(r, "first")
    os.close(w)
    checkpoint("after-close")
    os.close(r)


def lifecycle_fd_number_reused():
    r, w = packet_pipe()
    use_fd(w)
    checkpoint("first")
    expect_line(r, "first")
    r2, w2 = packet_pipe()
    os.dup2(w2, w)  # the number w now names another pipe
    checkpoint("must-not-arrive")
    expect_nothing(r2)
    for fd in (r, w, r2, w2):
        os.close(fd)


def lifecycle_reader_gone():
    r, w = os.pipe()  # SIGPIPE is ignored in CPython: EPIPE must be swallowed
    os.close(r)
    use_fd(w)
    checkpoint("into-a-broken-pipe")
    os.close(w)
    child = subprocess.run(
        [sys.executable, "-c", REPORTER_GONE_CHILD, str(ROOT / "python" / "src")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == 0 and child.stdout == "survived\n", (child.returncode, child.stderr)


def lifecycle_env_read_once():
    r, w = packet_pipe()
    use_fd(w)
    checkpoint("first")
    expect_line(r, "first")
    del os.environ["COLDSTART_FD"]
    checkpoint("after-unset")
    expect_line(r, "after-unset")
    os.environ["COLDSTART_FD"] = "junk"
    checkpoint("after-change")
    expect_line(r, "after-change")
    os.close(r)
    os.close(w)


@pytest.mark.parametrize("case", VECTORS["lifecycle"], ids=lambda c: c["id"])
def test_lifecycle(case):
    impl = globals().get("lifecycle_" + case["id"].replace("-", "_"))
    assert impl is not None, "lifecycle case not implemented by the Python tests"
    impl()


def test_clock_is_clock_monotonic():
    assert time.get_clock_info("monotonic").implementation == "clock_gettime(CLOCK_MONOTONIC)"
    a = mono()
    b = time.monotonic_ns()
    c = mono()
    assert a <= b <= c


def monoclock_binary(tmp_path):
    path = os.environ.get("COLDSTART_MONOCLOCK")
    if path:
        return path
    cc = shutil.which("cc")
    if not cc:
        pytest.skip("no COLDSTART_MONOCLOCK and no cc to build sdk/tools/monoclock.c")
    out = tmp_path / "monoclock"
    subprocess.run([cc, "-O2", "-o", str(out), str(ROOT / "tools" / "monoclock.c")], check=True)
    return str(out)


def test_clock_against_another_process(tmp_path):
    """A checkpoint lies between two CLOCK_MONOTONIC readings taken by a C program."""
    monoclock = monoclock_binary(tmp_path)
    r, w = packet_pipe()
    use_fd(w)
    t0 = int(subprocess.check_output([monoclock]))
    checkpoint("bracketed")
    t1 = int(subprocess.check_output([monoclock]))
    expect_line(r, "bracketed", t0, t1)
    os.close(r)
    os.close(w)


def test_never_raises():
    r, w = packet_pipe()
    use_fd(w)

    class Bad:
        def __str__(self):
            raise RuntimeError("no")

    for name in (None, 42, Bad(), bytearray(b"x\xff"), memoryview(b"mv")):
        checkpoint(name)
    seen = []
    while (p := read_packet(r)) is not None:
        seen.append(p.split(b" ", 2)[2])
    assert seen == [b"None\n", b"42\n", "x\ufffd\n".encode(), b"mv\n"]
    os.close(r)
    os.close(w)


def test_threads_write_whole_lines():
    r, w = os.pipe2(os.O_DIRECT)
    use_fd(w)

    def emit(t):
        for i in range(250):
            checkpoint(f"t{t}-{i}-padding-padding-padding-padding")

    threads = [threading.Thread(target=emit, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for _ in range(1000):
        line = os.read(r, 8192)
        assert line.startswith(LINE_HEAD) and line.endswith(b"\n") and line.count(b"\n") == 1
    for t in threads:
        t.join()
    os.close(r)
    os.close(w)


@pytest.mark.parametrize("value", [None, "junk"])
def test_disabled_call_allocates_nothing(value):
    use_fd(value)
    checkpoint("first call reads the environment")

    def nothing(name):
        pass

    def peak_of(fn):
        calls = [None] * 10000  # made before tracing starts
        tracemalloc.start()
        try:
            fn("warm")
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            for _ in calls:
                fn("disabled")
            return tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()

    # The loop itself allocates its iterator; the checkpoint calls must add nothing.
    assert peak_of(checkpoint) == peak_of(nothing)
