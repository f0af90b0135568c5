//! The one clock: CLOCK_MONOTONIC in nanoseconds (the SDKs and tracer use the same),
//! and wall-clock seconds as a UTC date.

/// Nanoseconds on CLOCK_MONOTONIC.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC, ns: converts another program's wall-clock
/// instant (a container engine's record) to our clock once. Read between two
/// monotonic readings; of three tries the tightest pair is kept, and its width
/// (ns) is returned as the conversion's uncertainty.
pub fn realtime_offset_ns() -> (i128, u64) {
    let mut best: Option<(i128, u64)> = None;
    for _ in 0..3 {
        let before = now_ns();
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes into the timespec we own; CLOCK_REALTIME always exists on Linux.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        let after = now_ns();
        let real = ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128;
        let width = after - before;
        let offset = real - (before / 2 + after / 2) as i128;
        if best.is_none_or(|(_, w)| width < w) {
            best = Some((offset, width));
        }
    }
    best.unwrap_or((0, u64::MAX))
}

/// `YYYY-MM-DD HH:MM` (UTC) from Unix seconds (civil-from-days, proleptic
/// Gregorian): the history's dates and the Lambda telemetry's timestamps.
pub fn utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}", rem / 3600, rem % 3600 / 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_realtime_offset_converts_a_wall_clock_reading_to_monotonic() {
        let (offset, width) = super::realtime_offset_ns();
        assert!(width < 10_000_000, "{width}");
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i128;
        let mono = super::now_ns() as i128;
        assert!(
            (wall - offset - mono).abs() < 50_000_000,
            "{}",
            wall - offset - mono
        );
    }

    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00");
        assert_eq!(super::utc(951_782_400), "2000-02-29 00:00");
        assert_eq!(super::utc(1_795_000_000), "2026-11-18 11:06");
    }
}
