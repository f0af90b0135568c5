//! `--read-set`'s lines: how much of each image its container read until ready,
//! which files, and the largest parts never read.

use crate::value::bytes;
use coldstart_core::analysis::Analysis;
use coldstart_core::sample::ReadSet;

/// What the section says the figures are.
pub(crate) const TITLE: &str =
    "read until ready (--read-set: the image's files out of the page cache before each run, in it at ready; whole pages, readahead included)";

/// How many read files are named per variant.
const FILES_SHOWN: usize = 5;

/// Per variant with a read set: its lines (the last run's set; the per-run
/// figures are the `image_read_*` metrics).
pub(crate) fn lines(a: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    for v in &a.variants {
        if let Some(r) = &v.read_set {
            out.push(format!("{}: {}", v.name, summary(r)));
            if !r.files.is_empty() {
                out.push(format!("{}: read: {}", v.name, files(r)));
            }
            if !r.untouched.is_empty() {
                let parts: Vec<String> = r
                    .untouched
                    .iter()
                    .map(|u| {
                        format!(
                            "{} {} ({} {})",
                            u.path,
                            bytes(u.bytes),
                            u.files,
                            plural(u.files, "file")
                        )
                    })
                    .collect();
                out.push(format!("{}: never read: {}", v.name, parts.join(", ")));
            }
            if !r.unknown.is_empty() {
                out.push(format!(
                    "{}: {} {} stayed in the page cache through the eviction (mapped by a running process): not known whether this run read them",
                    v.name,
                    r.unknown.len(),
                    plural(r.unknown.len() as u64, "file")
                ));
            }
        }
    }
    out
}

/// "image 412.0 MiB in 7,310 files (7 layers); read 31.0 MiB (7.5 %) in 1204 files".
fn summary(r: &ReadSet) -> String {
    let share = match r.image_bytes {
        0 => String::new(),
        total => format!(" ({:.1} %)", 100.0 * r.read_bytes as f64 / total as f64),
    };
    format!(
        "image {} in {} {} ({} {}); until ready the container read {}{share} in {} {}",
        bytes(r.image_bytes),
        r.image_files,
        plural(r.image_files, "file"),
        r.layers,
        plural(r.layers as u64, "layer"),
        bytes(r.read_bytes),
        r.files.len(),
        plural(r.files.len() as u64, "file")
    )
}

fn files(r: &ReadSet) -> String {
    let mut named: Vec<String> = r
        .files
        .iter()
        .take(FILES_SHOWN)
        .map(|f| format!("{} {}", f.path, bytes(f.read_bytes)))
        .collect();
    if r.files.len() > FILES_SHOWN {
        named.push(format!(
            "{} more (--export-json lists them)",
            r.files.len() - FILES_SHOWN
        ));
    }
    named.join(", ")
}

fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_core::sample::read_set::{ReadFile, Untouched};

    #[test]
    fn the_lines_say_the_share_the_files_and_what_was_never_read() {
        let r = ReadSet {
            layers: 1,
            image_files: 2,
            image_bytes: 4 * 1024 * 1024 + 766_000,
            read_bytes: 696 * 1024,
            files: vec![ReadFile {
                path: "/sleeper".into(),
                read_bytes: 696 * 1024,
                size: 766_000,
            }],
            untouched: vec![Untouched {
                path: "/pad".into(),
                bytes: 4 * 1024 * 1024,
                files: 1,
            }],
            unknown: Vec::new(),
        };
        assert_eq!(
            summary(&r),
            "image 4.7 MiB in 2 files (1 layer); until ready the container read 696.0 KiB (14.4 %) in 1 file"
        );
        assert_eq!(files(&r), "/sleeper 696.0 KiB");
    }
}
