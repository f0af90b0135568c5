package dev.coldstart.checkpoint;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CoderMalfunctionError;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * App checkpoints for coldstart, a cold-start lab for Linux programs.
 *
 * <pre>{@code
 * import static dev.coldstart.checkpoint.Checkpoint.checkpoint;
 * checkpoint("config-loaded");
 * }</pre>
 *
 * <p>When the environment variable {@code COLDSTART_FD} names an open, writable file descriptor
 * (plain decimal digits), each call writes one line {@code cs1 <CLOCK_MONOTONIC ns> <name>\n} with
 * a single write(2), so lines from several threads or processes never interleave. Otherwise the
 * call does nothing.
 *
 * <ul>
 *   <li><b>No-op cost</b>: the first call reads {@code COLDSTART_FD} once and caches the result in a
 *       static field; every later call with the variable unset or unusable is one volatile read and
 *       one compare, and allocates nothing.
 *   <li><b>Clock</b>: {@link System#nanoTime()}, which on Linux (HotSpot and OpenJ9) is {@code
 *       clock_gettime(CLOCK_MONOTONIC)}: the clock of the coldstart tool.
 *   <li><b>Writing to a numbered fd</b>: Java cannot wrap an int fd without internal APIs, so the
 *       first call opens {@code /proc/self/fd/N} once (a {@link FileOutputStream} in append mode)
 *       and keeps it. This gives the SDK its own open file description of the same pipe or file:
 *       a program that later closes fd N, or reuses the number, does not affect it. Supported: an
 *       anonymous pipe (what coldstart passes), a regular file, a character device. Not supported
 *       (the call stays a no-op): sockets (cannot be opened through /proc) and named FIFOs (the JDK
 *       cannot open one with O_NONBLOCK, and a blocking open would hang if its reader had gone).
 *   <li><b>Never throws</b>: I/O errors (EPIPE, EBADF, ...) are swallowed. The JVM ignores SIGPIPE.
 *   <li><b>Names</b>: {@code '\n'} and {@code '\r'} become {@code ' '}; unpaired surrogates become
 *       U+FFFD; at most {@link #MAX_NAME_BYTES} bytes of UTF-8 are kept, cut at a character
 *       boundary; {@code null} counts as {@code "null"}. Shared test vectors: {@code sdk/vectors/}.
 * </ul>
 */
public final class Checkpoint {
  /** Longest name written, in bytes of UTF-8; longer names are cut at a character boundary. */
  public static final int MAX_NAME_BYTES = 1024;

  private static final int UNINIT = 0;
  private static final int DISABLED = 1;
  private static final int ENABLED = 2;
  private static final byte[] HEAD = {'c', 's', '1', ' '};
  private static final byte[] REPLACEMENT = {(byte) 0xEF, (byte) 0xBF, (byte) 0xBD};

  private static volatile int state = UNINIT;

  // Guarded by LOCK; set once by init().
  private static final Object LOCK = new Object();
  private static FileOutputStream out;
  private static CharsetEncoder encoder;
  private static byte[] line;

  // Test hooks (package-private): an environment override.
  private static boolean envOverridden;
  private static String envOverride;

  private Checkpoint() {}

  /**
   * Records the checkpoint {@code name} (see the class documentation).
   *
   * @param name the checkpoint's name
   */
  public static void checkpoint(String name) {
    if (state == DISABLED) {
      return; // the no-op path
    }
    long ns = System.nanoTime();
    try {
      synchronized (LOCK) {
        if (state == UNINIT) {
          // Published only when decided: other threads must not see a transient DISABLED.
          state = init() ? ENABLED : DISABLED;
        }
        if (state == ENABLED) {
          write(ns, name == null ? "null" : name);
        }
      }
    } catch (IOException | RuntimeException | CoderMalfunctionError e) {
      // never let a checkpoint break the program
    }
  }

  /** Strict decimal: 1..10 ASCII digits with a value of at most 2^31-1, else -1. */
  static int parseFd(String value) {
    if (value == null || value.isEmpty() || value.length() > 10) {
      return -1;
    }
    long v = 0;
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      v = v * 10 + (c - '0');
    }
    return v <= Integer.MAX_VALUE ? (int) v : -1;
  }

  private static boolean init() {
    String value = envOverridden ? envOverride : System.getenv("COLDSTART_FD");
    int fd = parseFd(value);
    if (fd < 0) {
      return false;
    }
    try {
      // Writable? The access mode is in /proc/self/fdinfo/N ("flags:" in octal).
      int mode = -1;
      for (String l : Files.readAllLines(Path.of("/proc/self/fdinfo/" + fd))) {
        if (l.startsWith("flags:")) {
          mode = Integer.parseInt(l.substring(6).trim(), 8) & 3;
        }
      }
      if (mode != 1 && mode != 2) {
        return false;
      }
      Path proc = Path.of("/proc/self/fd/" + fd);
      String target = Files.readSymbolicLink(proc).toString();
      int type = (Integer) Files.getAttribute(proc, "unix:mode") & 0170000;
      boolean anonymousPipe = type == 0010000 && target.startsWith("pipe:[");
      if (!(anonymousPipe || type == 0100000 || type == 0020000)) {
        return false; // a socket, a named FIFO, a directory...
      }
      out = new FileOutputStream(proc.toFile(), true);
      line = new byte[4 + 20 + 1 + MAX_NAME_BYTES + 1];
      encoder =
          StandardCharsets.UTF_8
              .newEncoder()
              .onMalformedInput(CodingErrorAction.REPLACE)
              .onUnmappableCharacter(CodingErrorAction.REPLACE)
              .replaceWith(REPLACEMENT);
      return true;
    } catch (IOException | RuntimeException e) {
      return false; // not open, or /proc unavailable
    }
  }

  private static void write(long ns, String name) throws IOException {
    System.arraycopy(HEAD, 0, line, 0, 4);
    int n = 4;
    // Unsigned decimal of ns.
    int digits = 1;
    for (long v = ns; Long.compareUnsigned(v, 10) >= 0; v = Long.divideUnsigned(v, 10)) {
      digits++;
    }
    long v = ns;
    for (int i = n + digits - 1; i >= n; i--) {
      line[i] = (byte) ('0' + Long.remainderUnsigned(v, 10));
      v = Long.divideUnsigned(v, 10);
    }
    n += digits;
    line[n++] = ' ';
    // The encoder never writes part of a character: when the next one (or its
    // replacement) does not fit in MAX_NAME_BYTES it stops with OVERFLOW.
    ByteBuffer dst = ByteBuffer.wrap(line, n, MAX_NAME_BYTES);
    encoder.reset();
    CoderResult r = encoder.encode(CharBuffer.wrap(name), dst, true);
    if (!r.isOverflow()) {
      encoder.flush(dst);
    }
    int end = dst.position();
    for (int i = n; i < end; i++) {
      if (line[i] == '\n' || line[i] == '\r') {
        line[i] = ' ';
      }
    }
    line[end++] = '\n';
    out.write(line, 0, end); // one write(2): FileOutputStream writes a small array at once
  }

  /** Test hook: forget the cached state; the next call reads the environment (or the override). */
  static void resetForTests() {
    synchronized (LOCK) {
      if (out != null) {
        try {
          out.close(); // the SDK's own description; fd N is untouched
        } catch (IOException e) {
          // ignore
        }
        out = null;
      }
      state = UNINIT;
    }
  }

  /** Test hook: make the SDK see {@code COLDSTART_FD} as {@code value} ({@code null}: unset). */
  static void setEnvForTests(String value) {
    synchronized (LOCK) {
      envOverridden = true;
      envOverride = value;
    }
  }
}
