//! Resource limits of a run (`--cpus`, `--cpuset`, `--memory`), as the run's
//! Target carries them. Parsed from the flags' raw text per variant, so a sweep
//! can substitute a parameter into that text first; applied by the run's
//! cgroups (`launch::limit_cgroups`), which the child enters before it execs.
//! Plain data, depending on nothing of ours: target, sample and launch use it.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// The CFS period every quota is expressed in (the kernel's default, and what
/// Docker's `--cpus` uses).
pub const PERIOD_US: u64 = 100_000;
/// The kernel refuses quotas below 1 ms.
const MIN_QUOTA_US: u64 = 1_000;
const MAX_CPUS: f64 = 4096.0;
const MIB: u64 = 1 << 20;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// CPU bandwidth in CPUs (0.5: 50 ms of CPU time per 100 ms period).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    /// CPUs the tree may run on, in the kernel's list format (`0`, `0-1,3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuset: Option<String>,
    /// Memory limit of the whole tree, bytes (no swap beyond it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

impl Limits {
    /// From the flags' text; None leaves that resource unlimited.
    pub fn parse(cpus: Option<&str>, cpuset: Option<&str>, memory: Option<&str>) -> Result<Limits> {
        Ok(Limits {
            cpus: cpus.map(parse_cpus).transpose()?,
            cpuset: cpuset.map(parse_cpuset).transpose()?,
            memory_bytes: memory.map(parse_memory).transpose()?,
        })
    }

    pub fn is_none(&self) -> bool {
        self == &Limits::default()
    }

    /// The CFS quota (µs per [`PERIOD_US`]), when --cpus was given.
    pub fn quota_us(&self) -> Option<u64> {
        self.cpus
            .map(|c| ((c * PERIOD_US as f64).round() as u64).max(MIN_QUOTA_US))
    }

    /// `cpus 0.5, cpuset 0, memory 64 MiB` (empty without limits).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.cpus {
            parts.push(format!("cpus {c}"));
        }
        if let Some(s) = &self.cpuset {
            parts.push(format!("cpuset {s}"));
        }
        if let Some(b) = self.memory_bytes {
            parts.push(format!("memory {}", bytes(b)));
        }
        parts.join(", ")
    }
}

/// "out of memory (limit 64 MiB): a process in its tree was killed by the memory
/// limit (1 kill)": how a run the memory limit killed fails. `kills` 0: a record
/// from before the count was kept.
pub fn oom_cause(limit_bytes: u64, kills: u64) -> String {
    let mut s = format!("out of memory (limit {})", bytes(limit_bytes));
    if kills > 0 {
        s += &format!(": {}", oom_kills_text(kills));
    }
    s
}

/// "a process in its tree was killed by the memory limit (2 kills)".
pub fn oom_kills_text(kills: u64) -> String {
    let plural = if kills == 1 { "" } else { "s" };
    format!("a process in its tree was killed by the memory limit ({kills} kill{plural})")
}

/// A size as a person reads it: `64 MiB`, `1.5 GiB`, `512 KiB`.
pub fn bytes(b: u64) -> String {
    const GIB: u64 = 1 << 30;
    let (unit, div) = if b >= GIB {
        ("GiB", GIB)
    } else if b >= MIB {
        ("MiB", MIB)
    } else if b >= 1024 {
        ("KiB", 1024)
    } else {
        return format!("{b} B");
    };
    if b.is_multiple_of(div) {
        format!("{} {unit}", b / div)
    } else {
        let v = format!("{:.2}", b as f64 / div as f64);
        format!("{} {unit}", v.trim_end_matches('0').trim_end_matches('.'))
    }
}

fn parse_cpus(s: &str) -> Result<f64> {
    let v: f64 = s.trim().parse().unwrap_or(f64::NAN);
    // The quota has 1 ms of 100 ms as its floor: 0.01 CPUs.
    if !(0.01..=MAX_CPUS).contains(&v) {
        bail!("bad --cpus '{s}': write a number of CPUs from 0.01 to {MAX_CPUS}, e.g. 0.5 or 2");
    }
    Ok(v)
}

fn parse_cpuset(s: &str) -> Result<String> {
    let bad = || anyhow::anyhow!("bad --cpuset '{s}': write CPU numbers and ranges, e.g. 0 or 0-1,3");
    let list = s.trim();
    if list.is_empty() {
        return Err(bad());
    }
    for part in list.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let lo: u32 = lo.trim().parse().map_err(|_| bad())?;
        let hi: u32 = hi.trim().parse().map_err(|_| bad())?;
        if lo > hi || hi >= 1 << 16 {
            return Err(bad());
        }
    }
    Ok(list.replace(' ', ""))
}

fn parse_memory(s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => bail!("bad --memory '{s}': write a size such as 256M, 1G or 65536K"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| anyhow::anyhow!("bad --memory '{s}': write a size such as 256M, 1G or 65536K"))?;
    let b = v * scale as f64;
    if !b.is_finite() || b > (1u64 << 50) as f64 {
        bail!("bad --memory '{s}': write a size such as 256M, 1G or 65536K");
    }
    let b = b as u64;
    if b < MIB {
        // A bare number is bytes: `--memory 256` is almost surely a missing unit.
        bail!(
            "--memory '{s}' is {}: a process cannot start in that; give a unit, e.g. {s}M",
            bytes(b)
        );
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_flag() {
        let l = Limits::parse(Some("0.5"), Some("0-1,3"), Some("256M")).unwrap();
        assert_eq!(l.cpus, Some(0.5));
        assert_eq!(l.quota_us(), Some(50_000));
        assert_eq!(l.cpuset.as_deref(), Some("0-1,3"));
        assert_eq!(l.memory_bytes, Some(256 << 20));
        assert_eq!(l.describe(), "cpus 0.5, cpuset 0-1,3, memory 256 MiB");
        assert!(Limits::parse(None, None, None).unwrap().is_none());
        assert_eq!(
            Limits::parse(None, None, Some("1.5g")).unwrap().memory_bytes,
            Some(3 << 29)
        );
        assert_eq!(
            Limits::parse(None, None, Some("65536K")).unwrap().memory_bytes,
            Some(64 << 20)
        );
        assert_eq!(
            Limits::parse(Some("2"), None, None).unwrap().quota_us(),
            Some(200_000)
        );
    }

    #[test]
    fn bad_values_are_one_line_naming_the_flag() {
        for (c, s, m, flag) in [
            (Some("0"), None, None, "--cpus"),
            (Some("-1"), None, None, "--cpus"),
            (Some("half"), None, None, "--cpus"),
            (Some("NaN"), None, None, "--cpus"),
            (None, Some(""), None, "--cpuset"),
            (None, Some("2-1"), None, "--cpuset"),
            (None, Some("a"), None, "--cpuset"),
            (None, None, Some("256"), "--memory"),
            (None, None, Some("lots"), "--memory"),
            (None, None, Some("12X"), "--memory"),
            (None, None, Some("1e30G"), "--memory"),
        ] {
            let e = Limits::parse(c, s, m).unwrap_err().to_string();
            assert!(e.contains(flag) && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(64 << 20), "64 MiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
        assert_eq!(bytes(512 << 10), "512 KiB");
        assert_eq!(bytes(100), "100 B");
    }
}
