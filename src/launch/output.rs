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
        }
    }

    /// Set aside lines matching any of `claims` (see [`LineBuffer::take_claimed`]).
    pub fn with_claims(mut self, claims: Vec<Regex>) -> Self {
        self.claims = claims;
        self
    }

    /// Feed raw bytes of one stream; calls `on_line` for each completed line.
    pub fn feed(&mut self, bytes: &[u8], on_line: impl FnMut(&str)) {
        self.feed_stream(Stream::Stdout, bytes, 0, on_line)
    }

    /// Feed raw bytes read at `at_ns` from `stream`; calls `on_line` for each
    /// completed line that is not claimed.
    pub fn feed_stream(&mut self, stream: Stream, bytes: &[u8], at_ns: u64, mut on_line: impl FnMut(&str)) {
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

/// Last `keep` lines of an output file (reads at most the last 64 KiB).
pub fn tail_of_file(file: &mut std::fs::File, keep: usize) -> Vec<String> {
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
    buf.tail()
}

#[cfg(test)]
mod tests {
    use super::*;

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
