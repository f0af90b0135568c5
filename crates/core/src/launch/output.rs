//! The target's output: complete lines as they arrive, and the last few kept
//! for error messages.

use regex::Regex;
use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};

pub struct LineBuffer {
    /// One partial line per stream (stdout, stderr): a chunk of one must never
    /// complete a line of the other.
    partial: [Vec<u8>; 2],
    tail: VecDeque<String>,
    keep: usize,
    /// Lines a runtime adapter's switch writes into the target's output: they
    /// are set aside here, never reaching `on_line` (probe, marks) or the tail.
    claims: Vec<Regex>,
    claimed: Vec<(u64, String)>,
    /// `--show-output` while the output is read anyway: copy it to ours.
    echo: bool,
}

/// Which of the target's output streams bytes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout = 0,
    Stderr = 1,
}

impl LineBuffer {
    pub fn new(keep: usize) -> Self {
        LineBuffer {
            partial: [Vec::new(), Vec::new()],
            tail: VecDeque::new(),
            keep,
            claims: Vec::new(),
            claimed: Vec::new(),
            echo: false,
        }
    }

    /// Set aside lines matching any of `claims` (see [`LineBuffer::take_claimed`]).
    pub fn with_claims(mut self, claims: Vec<Regex>) -> Self {
        self.claims = claims;
        self
    }

    /// Copy every byte fed to coldstart's own stdout/stderr (`--show-output`).
    pub fn with_echo(mut self, echo: bool) -> Self {
        self.echo = echo;
        self
    }

    /// Feed raw bytes of one stream; calls `on_line` for each completed line.
    pub fn feed(&mut self, bytes: &[u8], on_line: impl FnMut(&str)) {
        self.feed_stream(Stream::Stdout, bytes, 0, on_line)
    }

    /// Feed raw bytes read at `at_ns` from `stream`; calls `on_line` for each
    /// completed line that is not claimed.
    pub fn feed_stream(&mut self, stream: Stream, bytes: &[u8], at_ns: u64, mut on_line: impl FnMut(&str)) {
        if self.echo {
            use std::io::Write;
            // Best effort: a closed terminal must not fail the run.
            let _ = match stream {
                Stream::Stdout => std::io::stdout().write_all(bytes),
                Stream::Stderr => std::io::stderr().write_all(bytes),
            };
        }
        let i = stream as usize;
        let mut rest = bytes;
        while let Some(pos) = rest.iter().position(|b| *b == b'\n') {
            self.partial[i].extend_from_slice(&rest[..pos]);
            let line = String::from_utf8_lossy(&self.partial[i])
                .trim_end_matches('\r')
                .to_string();
            self.partial[i].clear();
            self.complete(line, at_ns, &mut on_line);
            rest = &rest[pos + 1..];
        }
        self.partial[i].extend_from_slice(rest);
        // A runaway line without newline must not grow without bound.
        if self.partial[i].len() > 1 << 20 {
            let line = String::from_utf8_lossy(&self.partial[i]).to_string();
            self.partial[i].clear();
            self.complete(line, at_ns, &mut on_line);
        }
    }

    /// Flush final unterminated lines (read by `at_ns`).
    pub fn finish(&mut self, at_ns: u64, mut on_line: impl FnMut(&str)) {
        for i in 0..self.partial.len() {
            if !self.partial[i].is_empty() {
                let line = String::from_utf8_lossy(&self.partial[i]).to_string();
                self.partial[i].clear();
                self.complete(line, at_ns, &mut on_line);
            }
        }
    }

    /// The claimed lines so far, each with when it was read.
    pub fn take_claimed(&mut self) -> Vec<(u64, String)> {
        std::mem::take(&mut self.claimed)
    }

    fn complete(&mut self, line: String, at_ns: u64, on_line: &mut impl FnMut(&str)) {
        if self.claims.iter().any(|c| c.is_match(&line)) {
            self.claimed.push((at_ns, line));
            return;
        }
        on_line(&line);
        self.push_tail(line);
    }

    fn push_tail(&mut self, line: String) {
        if self.keep == 0 {
            return;
        }
        if self.tail.len() == self.keep {
            self.tail.pop_front();
        }
        self.tail.push_back(line);
    }

    pub fn tail(&self) -> Vec<String> {
        self.tail.iter().cloned().collect()
    }
}

/// Last `keep` lines of an output file (reads at most the last 64 KiB), after a
/// line saying how much of its start [`capture`] dropped, if any.
pub fn tail_of_file(mut file: &std::fs::File, keep: usize) -> Vec<String> {
    const WINDOW: u64 = 64 * 1024;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(WINDOW);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let mut buf = LineBuffer::new(keep);
    buf.feed(&bytes, |_| {});
    buf.finish(0, |_| {});
    let mut tail = buf.tail();
    let dropped = capture::dropped_bytes(file);
    if dropped > 0 && keep > 0 {
        tail.insert(
            0,
            format!(
                "[coldstart: the first {} of this run's output were dropped; the last {} MiB were kept]",
                mib(dropped),
                capture::KEEP >> 20
            ),
        );
    }
    tail
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// The exit-mode output file (see `spawn::OutputMode::MemFile`), bounded.
///
/// The target writes straight into an in-memory file so that nothing of ours
/// wakes while it starts; but its pages are memory, and a target that writes
/// gigabytes would hold gigabytes. A watcher thread checks every capture alive
/// every [`INTERVAL`] and, past [`LIMIT`] bytes held, punches out all but the last
/// [`KEEP`] bytes (the file's size and the target's offset stay; the start reads
/// as a hole). Runs shorter than one interval see no wake-up of ours at all; a
/// longer one sees one fstat per interval on another thread. What the target
/// writes faster than LIMIT per interval is held until the next check.
pub mod capture {
    use std::fs::File;
    use std::os::fd::AsRawFd;
    use std::sync::{Arc, Condvar, Mutex, Weak};
    use std::time::Duration;

    pub const INTERVAL: Duration = Duration::from_millis(100);
    /// Bytes held before the watcher trims.
    pub const LIMIT: u64 = 16 << 20;
    /// Bytes kept at the end when trimming (the tail reads the last 64 KiB).
    pub const KEEP: u64 = 1 << 20;

    /// An output file the watcher keeps bounded while this lives.
    pub struct Capture {
        file: Arc<File>,
    }

    impl std::ops::Deref for Capture {
        type Target = File;
        fn deref(&self) -> &File {
            &self.file
        }
    }

    struct Watched {
        files: Mutex<Vec<Weak<File>>>,
        changed: Condvar,
    }

    fn watched() -> &'static Watched {
        static W: std::sync::OnceLock<&'static Watched> = std::sync::OnceLock::new();
        W.get_or_init(|| {
            let w: &'static Watched = Box::leak(Box::new(Watched {
                files: Mutex::new(Vec::new()),
                changed: Condvar::new(),
            }));
            // Without the watcher captures are merely unbounded, as before: not an error.
            if let Err(e) = std::thread::Builder::new()
                .name("output-capture".into())
                .spawn(move || watch(w))
            {
                crate::out::errln!(
                    "coldstart: warning: no output-capture watcher ({e}): target output is not bounded"
                );
            }
            w
        })
    }

    fn watch(w: &Watched) {
        let mut files = w.files.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            files.retain(|f| f.strong_count() > 0);
            if files.is_empty() {
                files = w.changed.wait(files).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            files = w
                .changed
                .wait_timeout(files, INTERVAL)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
            for f in files.iter().filter_map(Weak::upgrade) {
                trim(&f);
            }
        }
    }

    /// Punch out all but the last KEEP bytes once more than LIMIT are held.
    fn trim(f: &File) {
        let fd = f.as_raw_fd();
        // SAFETY: fstat into a zeroed stat we own, on a descriptor `f` keeps open.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return;
        }
        let held = st.st_blocks as u64 * 512;
        let size = st.st_size as u64;
        if held <= LIMIT {
            return;
        }
        let end = size.saturating_sub(KEEP) & !4095;
        // SAFETY: fallocate on our descriptor; KEEP_SIZE leaves the size and so the
        // target's write offset unchanged.
        unsafe {
            libc::fallocate(
                fd,
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                0,
                end as libc::off_t,
            )
        };
    }

    /// Watch `file` (the target's output) until the Capture is dropped.
    pub fn watch_file(file: File) -> Capture {
        let file = Arc::new(file);
        let w = watched();
        w.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(&file));
        w.changed.notify_one();
        Capture { file }
    }

    /// Bytes at the start of `f` that were punched out: where its data begins.
    pub fn dropped_bytes(f: &File) -> u64 {
        // SAFETY: lseek on a descriptor `f` keeps open; SEEK_DATA only reports.
        let first = unsafe { libc::lseek(f.as_raw_fd(), 0, libc::SEEK_DATA) };
        u64::try_from(first).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_past_its_limit_keeps_only_its_end_and_says_so() {
        use std::io::Write;
        use std::os::fd::FromRawFd;
        let name = std::ffi::CString::new("coldstart-capture-test").expect("name");
        // SAFETY: valid name; the fd is fresh and owned by the File.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
        let cap = capture::watch_file(unsafe { std::fs::File::from_raw_fd(fd) });
        let chunk = vec![b'x'; 1 << 20];
        let mut writer = &*cap;
        for _ in 0..40 {
            writer.write_all(&chunk).expect("write");
        }
        writer.write_all(b"\nlast line\n").expect("write");
        // Wait for the watcher's trim (it checks every INTERVAL). On a slow
        // machine a trim can land mid-writes and what follows it stays held
        // until it passes LIMIT again: the bound is LIMIT, and KEEP right after
        // a trim that followed the last write.
        let held = || {
            cap.metadata()
                .map(|m| std::os::unix::fs::MetadataExt::blocks(&m) * 512)
                .expect("stat")
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while capture::dropped_bytes(&cap) == 0 || held() > capture::LIMIT {
            assert!(
                std::time::Instant::now() < deadline,
                "never trimmed below {} bytes: holds {}",
                capture::LIMIT,
                held()
            );
            std::thread::sleep(capture::INTERVAL / 4);
        }
        assert_eq!(
            cap.metadata().expect("stat").len(),
            (40 << 20) + 11,
            "size unchanged"
        );
        let tail = tail_of_file(&cap, 1);
        assert_eq!(tail.len(), 2);
        // How much was dropped depends on when the trim came (39 MiB when after
        // the last write): said in MiB, over the first bytes.
        assert!(
            tail[0].starts_with("[coldstart: the first ") && tail[0].contains(" MiB"),
            "{}",
            tail[0]
        );
        assert_eq!(tail[1], "last line");
    }

    #[test]
    fn splits_lines_across_chunks_and_keeps_tail() {
        let mut b = LineBuffer::new(2);
        let mut seen = Vec::new();
        b.feed(b"one\ntw", |l| seen.push(l.to_string()));
        b.feed(b"o\r\nthree\nfour", |l| seen.push(l.to_string()));
        b.finish(0, |l| seen.push(l.to_string()));
        assert_eq!(seen, ["one", "two", "three", "four"]);
        assert_eq!(b.tail(), ["three", "four"]);
    }

    #[test]
    fn streams_keep_their_own_partial_lines() {
        let mut b = LineBuffer::new(4);
        let mut seen = Vec::new();
        b.feed_stream(Stream::Stdout, b"hal", 1, |l| seen.push(l.to_string()));
        b.feed_stream(Stream::Stderr, b"err\n", 2, |l| seen.push(l.to_string()));
        b.feed_stream(Stream::Stdout, b"f\n", 3, |l| seen.push(l.to_string()));
        assert_eq!(seen, ["err", "half"]);
    }

    #[test]
    fn claimed_lines_reach_neither_the_callback_nor_the_tail() {
        let claims = vec![Regex::new("^import time:").expect("regex")];
        let mut b = LineBuffer::new(4).with_claims(claims);
        let mut seen = Vec::new();
        b.feed_stream(Stream::Stderr, b"import time: 1 | 2 | json\nready\n", 7, |l| {
            seen.push(l.to_string())
        });
        assert_eq!(seen, ["ready"]);
        assert_eq!(b.tail(), ["ready"]);
        assert_eq!(b.take_claimed(), [(7, "import time: 1 | 2 | json".to_string())]);
    }
}
