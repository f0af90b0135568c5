package dev.coldstart.checkpoint;

import static dev.coldstart.checkpoint.Checkpoint.checkpoint;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/** The SDK against the shared vectors in sdk/vectors/checkpoint.json, plus Java specifics. */
class CheckpointTest {
  /** What a Java String can hold, in the vectors' terms. */
  private static final Set<String> CAPABILITIES = Set.of("nul", "surrogates");

  private static final Pattern HEAD = Pattern.compile("^cs1 (0|[1-9][0-9]{0,19}) ");
  private static final Map<String, Object> VECTORS = loadVectors();

  @SuppressWarnings("unchecked")
  private static Map<String, Object> loadVectors() {
    String path = System.getProperty("coldstart.vectors", "../vectors/checkpoint.json");
    try {
      return (Map<String, Object>) Json.parse(Files.readString(Path.of(path), UTF_8));
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> cases(String group) {
    return (List<Map<String, Object>>) VECTORS.get(group);
  }

  @SuppressWarnings("unchecked")
  private static String segments(Object parts) {
    StringBuilder b = new StringBuilder();
    for (Object p : (List<Object>) parts) {
      if (p instanceof String s) {
        b.append(s);
      } else {
        Map<String, Object> r = (Map<String, Object>) p;
        b.append(((String) r.get("repeat")).repeat(((Double) r.get("times")).intValue()));
      }
    }
    return b.toString();
  }

  // ---- pipes with known fd numbers -------------------------------------------------------

  private static Set<String> openFds() throws IOException {
    Set<String> names = new HashSet<>();
    try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
      s.forEach(p -> names.add(p.getFileName().toString()));
    }
    return names;
  }

  private static int accessMode(int fd) throws IOException {
    for (String l : Files.readAllLines(Path.of("/proc/self/fdinfo/" + fd))) {
      if (l.startsWith("flags:")) {
        return Integer.parseInt(l.substring(6).trim(), 8) & 3;
      }
    }
    throw new IOException("no flags for fd " + fd);
  }

  private static String linkOrEmpty(String fd) {
    try {
      return Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString();
    } catch (IOException e) {
      return ""; // closed meanwhile (the directory listing's own fd)
    }
  }

  /** An anonymous pipe (pipe(2)) whose fd numbers we find in /proc/self/fd. */
  static final class TestPipe implements AutoCloseable {
    final Pipe pipe;
    int readFd = -1;
    int writeFd = -1;

    TestPipe() throws IOException {
      // Numbers are reused (even the directory listing's own fd), so look for a pipe inode
      // that was not there before.
      Set<String> before = new HashSet<>();
      for (String name : openFds()) {
        before.add(linkOrEmpty(name));
      }
      pipe = Pipe.open();
      pipe.source().configureBlocking(false);
      for (String name : openFds()) {
        String link = linkOrEmpty(name);
        if (!link.startsWith("pipe:[") || before.contains(link)) {
          continue;
        }
        int fd = Integer.parseInt(name);
        if (accessMode(fd) == 0) {
          readFd = fd;
        } else {
          writeFd = fd;
        }
      }
      if (readFd < 0 || writeFd < 0) {
        throw new IOException("could not find the pipe's fds");
      }
    }

    byte[] readAvailable() throws IOException {
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      ByteBuffer buf = ByteBuffer.allocate(65536);
      int n;
      while ((n = pipe.source().read(buf)) > 0) {
        all.write(buf.array(), 0, n);
        buf.clear();
      }
      return all.toByteArray();
    }

    @Override
    public void close() throws IOException {
      pipe.source().close();
      pipe.sink().close();
    }
  }

  private static void useFd(String value) {
    Checkpoint.setEnvForTests(value);
    Checkpoint.resetForTests();
  }

  @AfterEach
  void disable() {
    useFd(null);
  }

  /** The data must be exactly one line {@code cs1 <ns> <name>\n} with ns in [t0, t1]. */
  private static void expectLine(byte[] data, String name, long t0, long t1) {
    assertTrue(data.length > 0, "no line written");
    String latin = new String(data, java.nio.charset.StandardCharsets.ISO_8859_1);
    Matcher m = HEAD.matcher(latin);
    assertTrue(m.find(), "bad line head: " + latin);
    byte[] want = (name + "\n").getBytes(UTF_8);
    byte[] rest = java.util.Arrays.copyOfRange(data, m.end(), data.length);
    assertArrayEquals(want, rest, "name bytes");
    long ts = Long.parseUnsignedLong(m.group(1));
    assertTrue(t0 <= ts && ts <= t1, "timestamp " + ts + " outside [" + t0 + ", " + t1 + "]");
  }

  private static void expectLine(byte[] data, String name) {
    expectLine(data, name, Long.MIN_VALUE, Long.MAX_VALUE);
  }

  // ---- shared vectors ----------------------------------------------------------------------

  @Test
  void vectorsFileMatchesThisSdk() {
    assertEquals("cs1", VECTORS.get("protocol"));
    assertEquals((double) Checkpoint.MAX_NAME_BYTES, VECTORS.get("max_name_bytes"));
  }

  @TestFactory
  @SuppressWarnings("unchecked")
  Stream<DynamicTest> names() {
    return cases("names").stream()
        .map(
            c ->
                DynamicTest.dynamicTest(
                    (String) c.get("id"),
                    () -> {
                      List<String> requires = (List<String>) c.getOrDefault("requires", List.of());
                      assumeTrue(CAPABILITIES.containsAll(requires), "needs " + requires);
                      try (TestPipe p = new TestPipe()) {
                        useFd(Integer.toString(p.writeFd));
                        long t0 = System.nanoTime();
                        checkpoint(segments(c.get("name")));
                        long t1 = System.nanoTime();
                        expectLine(p.readAvailable(), segments(c.get("expect")), t0, t1);
                      }
                    }));
  }

  @TestFactory
  Stream<DynamicTest> env() {
    return cases("env").stream()
        .map(
            c ->
                DynamicTest.dynamicTest(
                    (String) c.get("id"),
                    () -> {
                      try (TestPipe p = new TestPipe()) {
                        int closed = openFds().stream().mapToInt(Integer::parseInt).max().getAsInt() + 100;
                        String value = (String) c.get("value");
                        if (value != null) {
                          value =
                              value
                                  .replace("{fd}", Integer.toString(p.writeFd))
                                  .replace("{closed_fd}", Integer.toString(closed))
                                  .replace("{read_fd}", Integer.toString(p.readFd));
                        }
                        useFd(value);
                        long t0 = System.nanoTime();
                        checkpoint("env-case");
                        long t1 = System.nanoTime();
                        if (c.get("expect").equals("line")) {
                          expectLine(p.readAvailable(), "env-case", t0, t1);
                        } else {
                          assertEquals(0, p.readAvailable().length, "unexpected write");
                        }
                      }
                    }));
  }

  @TestFactory
  Stream<DynamicTest> lifecycle() {
    return cases("lifecycle").stream()
        .map(c -> DynamicTest.dynamicTest((String) c.get("id"), () -> lifecycleCase((String) c.get("id"))));
  }

  private void lifecycleCase(String id) throws Exception {
    switch (id) {
      case "closed-after-first-use" -> {
        try (TestPipe p = new TestPipe()) {
          useFd(Integer.toString(p.writeFd));
          checkpoint("first");
          expectLine(p.readAvailable(), "first");
          p.pipe.sink().close(); // fd N closed; the SDK's own description of the pipe lives on
          checkpoint("after-close");
        }
      }
      case "fd-number-reused" -> {
        Path tmp = Files.createTempFile("cs-java-", ".reuse");
        List<FileOutputStream> extra = new ArrayList<>();
        try (TestPipe p = new TestPipe()) {
          useFd(Integer.toString(p.writeFd));
          checkpoint("first");
          expectLine(p.readAvailable(), "first");
          int n = p.writeFd;
          p.pipe.sink().close();
          // The lowest free number is taken first: open a file until it lands on n.
          for (int tries = 0; ; tries++) {
            FileOutputStream f = new FileOutputStream(tmp.toFile());
            extra.add(f);
            // n may still be free: a lower number freed meanwhile (another
            // thread, a collected stream) takes the open first. Keep opening.
            Path atN = Path.of("/proc/self/fd/" + n);
            if (Files.exists(atN) && Files.isSameFile(atN, tmp)) {
              break;
            }
            assertTrue(tries < 64, "could not reuse the fd number");
          }
          checkpoint("must-not-arrive");
          assertEquals(0, Files.size(tmp), "the file now at the fd number got a line");
        } finally {
          for (FileOutputStream f : extra) {
            f.close();
          }
          Files.delete(tmp);
        }
      }
      case "reader-gone" -> {
        try (TestPipe p = new TestPipe()) {
          p.pipe.source().close();
          useFd(Integer.toString(p.writeFd));
          checkpoint("into-a-broken-pipe");
          checkpoint("again");
        }
        // A JVM whose checkpoint fd (its stdout) lost its reader must live on.
        Process child = emitProcess("gone", 200);
        child.getInputStream().close();
        assertTrue(child.waitFor(60, TimeUnit.SECONDS), "child JVM hung");
        assertEquals(0, child.exitValue(), "child JVM exit status");
      }
      case "env-read-once" -> {
        try (TestPipe p = new TestPipe()) {
          useFd(Integer.toString(p.writeFd));
          checkpoint("first");
          expectLine(p.readAvailable(), "first");
          Checkpoint.setEnvForTests(null);
          checkpoint("after-unset");
          expectLine(p.readAvailable(), "after-unset");
          Checkpoint.setEnvForTests("junk");
          checkpoint("after-change");
          expectLine(p.readAvailable(), "after-change");
        }
      }
      default -> fail("lifecycle case not implemented by the Java tests");
    }
  }

  // ---- Java specifics ----------------------------------------------------------------------

  private static Process emitProcess(String prefix, int count) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb =
        new ProcessBuilder(
            java, "-cp", System.getProperty("java.class.path"), Emit.class.getName(), prefix, Integer.toString(count));
    pb.environment().put("COLDSTART_FD", "1");
    pb.redirectError(ProcessBuilder.Redirect.INHERIT);
    return pb.start();
  }

  @Test
  void childJvmWritesToAnInheritedFd() throws Exception {
    Process child = emitProcess("child", 2);
    String out;
    try (InputStream in = child.getInputStream()) {
      out = new String(in.readAllBytes(), UTF_8);
    }
    assertEquals(0, child.waitFor());
    List<String> names = new ArrayList<>();
    for (String l : out.split("\n")) {
      names.add(l.replaceFirst("^cs1 [0-9]+ ", ""));
    }
    assertEquals(List.of("child:begin", "child:0:café", "child:1:café", "child:end"), names);
  }

  private static String monoclock(Path tmp) throws Exception {
    String env = System.getenv("COLDSTART_MONOCLOCK");
    if (env != null && !env.isEmpty()) {
      return env;
    }
    Path out = tmp.resolve("monoclock");
    Path src = Path.of(System.getProperty("coldstart.vectors", "../vectors/checkpoint.json"))
        .getParent().resolve("../tools/monoclock.c");
    try {
      Process cc = new ProcessBuilder("cc", "-O2", "-o", out.toString(), src.toString()).inheritIO().start();
      assumeTrue(cc.waitFor() == 0, "cc failed");
    } catch (IOException e) {
      assumeTrue(false, "no COLDSTART_MONOCLOCK and no cc to build sdk/tools/monoclock.c");
    }
    return out.toString();
  }

  private static long readClock(String monoclock) throws Exception {
    Process p = new ProcessBuilder(monoclock).start();
    String s = new String(p.getInputStream().readAllBytes(), UTF_8).trim();
    assertEquals(0, p.waitFor());
    return Long.parseLong(s);
  }

  @Test
  void nanoTimeIsClockMonotonic(@TempDir Path tmp) throws Exception {
    String monoclock = monoclock(tmp);
    try (TestPipe p = new TestPipe()) {
      useFd(Integer.toString(p.writeFd));
      long t0 = readClock(monoclock);
      checkpoint("bracketed");
      long t1 = readClock(monoclock);
      expectLine(p.readAvailable(), "bracketed", t0, t1);
    }
  }

  @Test
  void nullNameIsTheStringNull() throws Exception {
    try (TestPipe p = new TestPipe()) {
      useFd(Integer.toString(p.writeFd));
      checkpoint(null);
      expectLine(p.readAvailable(), "null");
    }
  }

  @Test
  void regularFile(@TempDir Path tmp) throws Exception {
    Path file = tmp.resolve("lines");
    try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
      f.write("existing\n".getBytes(UTF_8));
      int fd = -1;
      for (String name : openFds()) {
        try {
          if (Files.isSameFile(Path.of("/proc/self/fd/" + name), file)) {
            fd = Integer.parseInt(name);
          }
        } catch (IOException e) {
          // closed meanwhile
        }
      }
      useFd(Integer.toString(fd));
      checkpoint("appended");
    }
    List<String> lines = Files.readAllLines(file);
    assertEquals("existing", lines.get(0));
    assertTrue(lines.get(1).matches("cs1 [0-9]+ appended"), lines.get(1));
  }

  @Test
  void namedFifoIsNotOpened(@TempDir Path tmp) throws Exception {
    Path fifo = tmp.resolve("fifo");
    assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
    try (RandomAccessFile f = new RandomAccessFile(fifo.toFile(), "rw")) {
      int fd = -1;
      for (String name : openFds()) {
        try {
          if (Files.readSymbolicLink(Path.of("/proc/self/fd/" + name)).equals(fifo)) {
            fd = Integer.parseInt(name);
          }
        } catch (IOException e) {
          // closed meanwhile
        }
      }
      useFd(Integer.toString(fd));
      checkpoint("not-for-a-named-fifo");
      try (java.io.FileInputStream in = new java.io.FileInputStream(fifo.toFile())) {
        assertEquals(0, in.available());
      }
    }
  }

  @Test
  void threadsWriteWholeLines() throws Exception {
    try (TestPipe p = new TestPipe()) {
      useFd(Integer.toString(p.writeFd));
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int id = t;
        threads.add(
            new Thread(
                () -> {
                  for (int i = 0; i < 250; i++) {
                    checkpoint("t" + id + "-" + i + "-padding-padding-padding-padding");
                  }
                }));
      }
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      threads.forEach(Thread::start);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      int newlines = 0;
      while (newlines < 1000 && System.nanoTime() < deadline) {
        byte[] chunk = p.readAvailable();
        all.write(chunk);
        for (byte b : chunk) {
          newlines += b == '\n' ? 1 : 0;
        }
        Thread.sleep(chunk.length == 0 ? 1 : 0);
      }
      for (Thread t : threads) {
        t.join();
      }
      String[] lines = all.toString(UTF_8).split("\n");
      assertEquals(1000, lines.length);
      for (String l : lines) {
        assertTrue(l.matches("cs1 [0-9]+ t[0-3]-[0-9]+-padding-padding-padding-padding"), l);
      }
    }
  }

  @Test
  void disabledCallAllocatesNothing() {
    com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    assumeTrue(mx.isThreadAllocatedMemorySupported() && mx.isThreadAllocatedMemoryEnabled());
    for (String value : new String[] {null, "junk"}) {
      useFd(value);
      checkpoint("first call reads the environment");
      for (int i = 0; i < 200_000; i++) {
        checkpoint("warm-up, so that JIT compilation is done");
      }
      long before = mx.getCurrentThreadAllocatedBytes();
      for (int i = 0; i < 1_000_000; i++) {
        checkpoint("disabled");
      }
      long bytes = mx.getCurrentThreadAllocatedBytes() - before;
      // One object per call would be >= 16 MB; allow for the VM's own bookkeeping.
      assertTrue(bytes < 64 * 1024, "COLDSTART_FD=" + value + ": " + bytes + " bytes allocated in 1e6 calls");
    }
  }

  @Test
  void nothingIsOpenWhenDisabled() throws Exception {
    useFd(null);
    Set<String> before = openFds();
    checkpoint("disabled");
    assertNotNull(before);
    assertEquals(before.size(), openFds().size());
  }
}
