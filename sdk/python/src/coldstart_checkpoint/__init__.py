"""App checkpoints for coldstart, a cold-start lab for Linux programs.

    from coldstart_checkpoint import checkpoint
    checkpoint("config-loaded")

When the environment variable ``COLDSTART_FD`` names an open, writable file
descriptor (plain decimal digits), each call writes one line
``cs1 <CLOCK_MONOTONIC ns> <name>\\n`` to it with a single ``os.write`` (one
write(2)), so lines from several threads or processes never interleave.
Otherwise the call does nothing.

* No-op cost: the first call reads ``COLDSTART_FD`` once and caches the result
  in a module global; every later call with the variable unset or unusable is
  one global lookup and one comparison of small integers, and allocates nothing.
* Clock: ``time.monotonic_ns()``, which on Linux is
  ``clock_gettime(CLOCK_MONOTONIC)``, the clock of the coldstart tool.
* Never raises: every error (a closed fd, a reader that went away, a name that
  cannot be converted) is swallowed. CPython ignores SIGPIPE, so a broken pipe
  is just an ignored ``BrokenPipeError``; a program that put SIGPIPE back to its
  default action (through the ``signal`` module) gets the write done with
  SIGPIPE blocked and any SIGPIPE it raised consumed, so it is not killed.
* Names: ``'\\n'`` and ``'\\r'`` become ``' '``; unpaired surrogates become U+FFFD
  (bytes are decoded as UTF-8 the same way); at most 1024 bytes of UTF-8 are
  kept, cut at a character boundary. Shared test vectors: ``sdk/vectors/``.
"""

import os
import time

# signal and fcntl are imported on first enabled use only: a disabled SDK adds
# nothing to the program's import time beyond this small module.

__all__ = ["checkpoint", "MAX_NAME_BYTES"]
__version__ = "0.1.0"

#: Longest name written, in bytes of UTF-8; longer names are cut at a character boundary.
MAX_NAME_BYTES = 1024

_UNINIT = -2
_DISABLED = -1
_fd = _UNINIT  # >= 0: the fd
_ident = None  # (st_dev, st_ino) of the fd at first use
_NEWLINES_TO_SPACE = bytes.maketrans(b"\n\r", b"  ")


def checkpoint(name):
    """Record the checkpoint ``name`` (see the module documentation)."""
    fd = _fd
    if fd == _DISABLED:
        return  # the no-op path
    try:
        if fd < 0:
            fd = _init()
            if fd < 0:
                return
        _write(fd, name)
    except Exception:  # never let a checkpoint break the program
        pass


def _parse_fd(value):
    """1..10 ASCII digits with a value of at most 2**31-1, else None."""
    if not value or len(value) > 10 or not all("0" <= c <= "9" for c in value):
        return None
    fd = int(value)
    return fd if fd <= 0x7FFFFFFF else None


def _init():
    global _fd, _ident
    fd = _parse_fd(os.environ.get("COLDSTART_FD"))
    result = _DISABLED
    if fd is not None:
        try:
            import fcntl

            mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
            if mode in (os.O_WRONLY, os.O_RDWR):
                st = os.fstat(fd)
                _ident = (st.st_dev, st.st_ino)
                result = fd
        except OSError:
            pass
    _fd = result
    return result


def _encode(name):
    if isinstance(name, str):
        try:
            data = name.encode("utf-8")
        except UnicodeEncodeError:  # unpaired surrogates
            data = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in name).encode("utf-8")
    elif isinstance(name, (bytes, bytearray, memoryview)):
        data = bytes(name).decode("utf-8", "replace").encode("utf-8")
    else:
        return _encode(str(name))
    if len(data) > MAX_NAME_BYTES:
        cut = MAX_NAME_BYTES
        while data[cut] & 0xC0 == 0x80:  # a continuation byte: not a character boundary
            cut -= 1
        data = data[:cut]
    return data.translate(_NEWLINES_TO_SPACE)


def _write(fd, name):
    global _fd
    ns = time.monotonic_ns()
    import signal

    line = b"cs1 %d %s\n" % (ns, _encode(name))
    # The fd must still be the file it was at first use: the program may have
    # closed it and reused the number, and its data must never get our line.
    try:
        st = os.fstat(fd)
    except OSError:
        st = None
    if st is None or (st.st_dev, st.st_ino) != _ident:
        _fd = _DISABLED
        return
    if signal.getsignal(signal.SIGPIPE) != signal.SIG_DFL:
        try:
            os.write(fd, line)
        except OSError:
            pass
        return
    # SIGPIPE would kill the process: block it around the write, and consume
    # the one this write raised (unless one was already pending).
    sigpipe = {signal.SIGPIPE}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigpipe)
    try:
        was_pending = signal.SIGPIPE in signal.sigpending()
        try:
            os.write(fd, line)
        except BrokenPipeError:
            if not was_pending:
                signal.sigtimedwait(sigpipe, 0)
        except OSError:
            pass
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _reset():
    """Test hook: forget the cached ``COLDSTART_FD`` so the next call reads it again."""
    global _fd, _ident
    _fd, _ident = _UNINIT, None
