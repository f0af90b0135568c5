//! The ring buffer's records, parsed for the layout `perf.rs` asks for
//! (sample_type IP | TID | TIME | CALLCHAIN, sample_id_all: every side-band
//! record ends in {pid, tid, time}).

use perf_event_open_sys::bindings as b;

/// A callchain entry at or above this is a context marker, not an address.
const CONTEXT_MAX: u64 = b::PERF_CONTEXT_MAX;
const CONTEXT_KERNEL: u64 = b::PERF_CONTEXT_KERNEL;
const CONTEXT_USER: u64 = b::PERF_CONTEXT_USER;

/// One instruction pointer of a callchain, leaf first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ip {
    Kernel(u64),
    User(u64),
}

#[derive(Debug, Clone)]
pub enum Record {
    Sample {
        pid: u32,
        tid: u32,
        time: u64,
        /// Leaf first.
        chain: Vec<Ip>,
    },
    Mmap {
        pid: u32,
        time: u64,
        start: u64,
        len: u64,
        pgoff: u64,
        path: String,
    },
    Comm {
        pid: u32,
        tid: u32,
        time: u64,
        exec: bool,
        name: String,
    },
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
        ptid: u32,
        time: u64,
    },
    Exit {
        pid: u32,
        tid: u32,
        time: u64,
    },
    /// Records the kernel dropped because the ring was full.
    Lost {
        count: u64,
    },
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn u32(&mut self) -> Option<u32> {
        let v = u32::from_ne_bytes(self.b.get(self.at..self.at + 4)?.try_into().ok()?);
        self.at += 4;
        Some(v)
    }
    fn u64(&mut self) -> Option<u64> {
        let v = u64::from_ne_bytes(self.b.get(self.at..self.at + 8)?.try_into().ok()?);
        self.at += 8;
        Some(v)
    }
    /// A NUL-terminated string padded to 8 bytes, ending before `end`.
    fn cstr(&mut self, end: usize) -> Option<String> {
        let rest = self.b.get(self.at..end)?;
        let n = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        Some(String::from_utf8_lossy(&rest[..n]).into_owned())
    }
}

/// Every record in `bytes` (whole records back to back, as `Counter::drain`
/// gives them); unknown and malformed ones are skipped.
pub fn parse(bytes: &[u8]) -> Vec<Record> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let kind = u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let misc = u16::from_ne_bytes([bytes[at + 4], bytes[at + 5]]);
        let size = u16::from_ne_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
        if size < 8 || at + size > bytes.len() {
            break;
        }
        if let Some(r) = one(kind, misc, &bytes[at..at + size]) {
            out.push(r);
        }
        at += size;
    }
    out
}

fn one(kind: u32, misc: u16, rec: &[u8]) -> Option<Record> {
    let mut r = Reader { b: rec, at: 8 };
    // sample_id_all's trailer on side-band records: {pid, tid} then {time}.
    let trailer_time = || -> Option<u64> {
        Some(u64::from_ne_bytes(
            rec.get(rec.len().checked_sub(8)?..)?.try_into().ok()?,
        ))
    };
    let trailer_start = rec.len().saturating_sub(16);
    match kind {
        b::PERF_RECORD_SAMPLE => {
            let _ip = r.u64()?;
            let (pid, tid) = (r.u32()?, r.u32()?);
            let time = r.u64()?;
            let nr = r.u64()? as usize;
            let mut chain = Vec::with_capacity(nr.min(256));
            // Samples taken in the kernel start in kernel context; the
            // markers say where each part of the chain belongs.
            let mut user = (misc as u32 & b::PERF_RECORD_MISC_CPUMODE_MASK) == b::PERF_RECORD_MISC_USER;
            for _ in 0..nr {
                let ip = r.u64()?;
                if ip >= CONTEXT_MAX {
                    match ip {
                        CONTEXT_KERNEL => user = false,
                        CONTEXT_USER => user = true,
                        _ => {}
                    }
                    continue;
                }
                chain.push(if user { Ip::User(ip) } else { Ip::Kernel(ip) });
            }
            Some(Record::Sample {
                pid,
                tid,
                time,
                chain,
            })
        }
        b::PERF_RECORD_MMAP2 => {
            let pid = r.u32()?;
            let _tid = r.u32()?;
            let (start, len, pgoff) = (r.u64()?, r.u64()?, r.u64()?);
            r.at += 24 + 8; // maj/min/ino/generation (or build id), prot, flags
            let path = r.cstr(trailer_start)?;
            Some(Record::Mmap {
                pid,
                time: trailer_time()?,
                start,
                len,
                pgoff,
                path,
            })
        }
        b::PERF_RECORD_MMAP => {
            let pid = r.u32()?;
            let _tid = r.u32()?;
            let (start, len, pgoff) = (r.u64()?, r.u64()?, r.u64()?);
            let path = r.cstr(trailer_start)?;
            Some(Record::Mmap {
                pid,
                time: trailer_time()?,
                start,
                len,
                pgoff,
                path,
            })
        }
        b::PERF_RECORD_COMM => {
            let (pid, tid) = (r.u32()?, r.u32()?);
            let name = r.cstr(trailer_start)?;
            Some(Record::Comm {
                pid,
                tid,
                time: trailer_time()?,
                exec: misc as u32 & b::PERF_RECORD_MISC_COMM_EXEC != 0,
                name,
            })
        }
        b::PERF_RECORD_FORK => {
            let (pid, ppid) = (r.u32()?, r.u32()?);
            let (tid, ptid) = (r.u32()?, r.u32()?);
            let time = r.u64()?;
            Some(Record::Fork {
                pid,
                ppid,
                tid,
                ptid,
                time,
            })
        }
        b::PERF_RECORD_EXIT => {
            let pid = r.u32()?;
            let _ppid = r.u32()?;
            let tid = r.u32()?;
            let _ptid = r.u32()?;
            let time = r.u64()?;
            Some(Record::Exit { pid, tid, time })
        }
        b::PERF_RECORD_LOST => {
            let _id = r.u64()?;
            Some(Record::Lost { count: r.u64()? })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&misc.to_ne_bytes());
        v.extend_from_slice(&((body.len() + 8) as u16).to_ne_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn a_sample_splits_kernel_and_user_frames_at_the_markers() {
        let mut body = Vec::new();
        body.extend_from_slice(&0x10u64.to_ne_bytes());
        body.extend_from_slice(&7u32.to_ne_bytes());
        body.extend_from_slice(&8u32.to_ne_bytes());
        body.extend_from_slice(&99u64.to_ne_bytes());
        for x in [
            5u64,
            CONTEXT_KERNEL,
            0xffff_ffff_8100_0001,
            CONTEXT_USER,
            0x401000,
            0x402000,
        ] {
            body.extend_from_slice(&x.to_ne_bytes());
        }
        let bytes = rec(b::PERF_RECORD_SAMPLE, b::PERF_RECORD_MISC_KERNEL as u16, &body);
        let parsed = parse(&bytes);
        let [Record::Sample {
            pid,
            tid,
            time,
            chain,
        }] = parsed.as_slice()
        else {
            panic!("{parsed:?}")
        };
        assert_eq!((*pid, *tid, *time), (7, 8, 99));
        assert_eq!(
            chain,
            &[
                Ip::Kernel(0xffff_ffff_8100_0001),
                Ip::User(0x401000),
                Ip::User(0x402000)
            ]
        );
    }

    #[test]
    fn comm_exec_and_its_trailer_time_are_read() {
        let mut body = Vec::new();
        body.extend_from_slice(&3u32.to_ne_bytes());
        body.extend_from_slice(&3u32.to_ne_bytes());
        body.extend_from_slice(b"java\0\0\0\0");
        body.extend_from_slice(&3u32.to_ne_bytes());
        body.extend_from_slice(&3u32.to_ne_bytes());
        body.extend_from_slice(&1234u64.to_ne_bytes());
        let bytes = rec(b::PERF_RECORD_COMM, b::PERF_RECORD_MISC_COMM_EXEC as u16, &body);
        let parsed = parse(&bytes);
        let [Record::Comm { exec, name, time, .. }] = parsed.as_slice() else {
            panic!("{parsed:?}")
        };
        assert!(*exec);
        assert_eq!((name.as_str(), *time), ("java", 1234));
    }

    #[test]
    fn a_truncated_record_ends_the_parse_without_panicking() {
        let mut bytes = rec(b::PERF_RECORD_FORK, 0, &[0u8; 24]);
        bytes.truncate(20);
        assert!(parse(&bytes).is_empty());
    }
}
