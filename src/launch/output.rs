//! The target's output: complete lines as they arrive, and the last few kept
//! for error messages.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};

pub struct LineBuffer {
    partial: Vec<u8>,
    tail: VecDeque<String>,
    keep: usize,
}

impl LineBuffer {
    pub fn new(keep: usize) -> Self {
        LineBuffer {
            partial: Vec::new(),
            tail: VecDeque::new(),
            keep,
        }
    }

    /// Feed raw bytes; calls `on_line` for each completed line.
    pub fn feed(&mut self, bytes: &[u8], mut on_line: impl FnMut(&str)) {
        let mut rest = bytes;
        while let Some(pos) = rest.iter().position(|b| *b == b'\n') {
            self.partial.extend_from_slice(&rest[..pos]);
            let line = String::from_utf8_lossy(&self.partial)
                .trim_end_matches('\r')
                .to_string();
            self.partial.clear();
            on_line(&line);
            self.push_tail(line);
            rest = &rest[pos + 1..];
        }
        self.partial.extend_from_slice(rest);
        // A runaway line without newline must not grow without bound.
        if self.partial.len() > 1 << 20 {
            let line = String::from_utf8_lossy(&self.partial).to_string();
            self.partial.clear();
            on_line(&line);
            self.push_tail(line);
        }
    }

    /// Flush a final unterminated line.
    pub fn finish(&mut self, on_line: impl FnOnce(&str)) {
        if !self.partial.is_empty() {
            let line = String::from_utf8_lossy(&self.partial).to_string();
            self.partial.clear();
            on_line(&line);
            self.push_tail(line);
        }
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
    buf.finish(|_| {});
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
        b.finish(|l| seen.push(l.to_string()));
        assert_eq!(seen, ["one", "two", "three", "four"]);
        assert_eq!(b.tail(), ["three", "four"]);
    }
}
