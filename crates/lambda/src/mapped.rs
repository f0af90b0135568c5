//! Resident file pages a set of processes map, each page counted once.
//!
//! The sandbox's memory cgroup charges page cache to the cgroup that first read
//! it. On a host whose cache is warm, the runtime's binary and libraries were
//! read long ago by someone else, so the cgroup's peak leaves them out; in a
//! fresh Lambda microVM the environment reads them in itself and they count in
//! Max Memory Used. This finds them: every file-backed mapping's resident size
//! (/proc/PID/smaps), keyed by file and offset so that a library two processes
//! map counts once, as a page in the cache does.

use std::collections::HashMap;

/// Bytes of file-backed pages resident in the mappings of `pids` (a file
/// region mapped by several of them counted once, at its largest).
pub fn file_resident_bytes(pids: &[i32]) -> u64 {
    let mut regions: HashMap<String, u64> = HashMap::new();
    for pid in pids {
        let Ok(smaps) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
            continue; // gone meanwhile: its pages are no longer resident for it
        };
        for (key, kb) in file_regions(&smaps) {
            let max = regions.entry(key).or_insert(0);
            *max = (*max).max(kb);
        }
    }
    regions.values().sum::<u64>() * 1024
}

/// (device inode offset size, resident file pages in kB) of each file-backed
/// mapping in an smaps text. A private file mapping's written pages are
/// anonymous copies (`Anonymous:`), charged to the writer like any anonymous
/// memory: Rss less those.
fn file_regions(smaps: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    let mut current: Option<(String, u64, u64)> = None;
    let mut flush = |c: Option<(String, u64, u64)>| {
        if let Some((key, rss, anon)) = c {
            out.push((key, rss.saturating_sub(anon)));
        }
    };
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // A mapping's header: "start-end perms offset dev inode [path]".
        if let Some((start, end)) = fields.first().and_then(|r| r.split_once('-')) {
            if let (Ok(start), Ok(end), Some(offset), Some(dev), Some(inode)) = (
                u64::from_str_radix(start, 16),
                u64::from_str_radix(end, 16),
                fields.get(2),
                fields.get(3),
                fields.get(4),
            ) {
                flush(current.take());
                current = (*inode != "0").then(|| (format!("{dev} {inode} {offset} {}", end - start), 0, 0));
                continue;
            }
        }
        let (Some((_, rss, anon)), Some(key), Some(kb)) = (current.as_mut(), fields.first(), fields.get(1))
        else {
            continue;
        };
        let Ok(kb) = kb.parse::<u64>() else { continue };
        match *key {
            "Rss:" => *rss = kb,
            "Anonymous:" => *anon = kb,
            _ => {}
        }
    }
    flush(current);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_mappings_only_each_with_its_file_pages() {
        let smaps = "55d0c0000000-55d0c0001000 r--p 00000000 fd:01 1234 /usr/bin/python3\n\
                     Size:                  4 kB\n\
                     Rss:                   4 kB\n\
                     7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n\
                     Size:               1024 kB\n\
                     Rss:                1024 kB\n\
                     7f1000000000-7f1000200000 r-xp 00010000 fd:01 99 /usr/lib/libc.so.6\n\
                     Size:               2048 kB\n\
                     Rss:                 900 kB\n\
                     Pss:                 100 kB\n\
                     Anonymous:           100 kB\n";
        let r = file_regions(smaps);
        assert_eq!(
            r,
            vec![
                ("fd:01 1234 00000000 4096".to_string(), 4),
                ("fd:01 99 00010000 2097152".to_string(), 800)
            ]
        );
    }

    #[test]
    fn our_own_binary_is_resident() {
        // This test process maps its own executable, and runs from it.
        assert!(file_resident_bytes(&[std::process::id() as i32]) > 0);
    }
}
