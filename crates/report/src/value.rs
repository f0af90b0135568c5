//! A section's typed values (facts, table cells, span arguments) as text: the
//! one place their numbers get units and precision.

use crate::format;
use coldstart_core::sample::section::Value;

/// `value` as the terminal, Markdown, HTML and the Chrome trace show it.
pub fn text(value: &Value) -> String {
    let mut out = String::new();
    push(&mut out, value);
    out
}

fn push(out: &mut String, value: &Value) {
    match value {
        Value::Ns(ns) | Value::AtNs(ns) => out.push_str(&format::ms(*ns as f64 / 1e6)),
        Value::Count(n) => out.push_str(&n.to_string()),
        Value::Bytes(b) => out.push_str(&bytes(*b)),
        Value::Percent(p) => out.push_str(&format!("{p:.1} %")),
        Value::Parts(parts) => parts.iter().for_each(|p| push(out, p)),
        Value::Text(s) => out.push_str(s),
    }
}

/// Bytes in binary units, with a precision that suits the size.
pub(crate) fn bytes(b: u64) -> String {
    let b = b as f64;
    if b < 1024.0 {
        format!("{b} B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_get_their_units_here() {
        assert_eq!(text(&Value::Ns(456_000)), "456 µs");
        assert_eq!(text(&Value::AtNs(12_300_000)), "12.3 ms");
        assert_eq!(text(&Value::Count(57)), "57");
        assert_eq!(text(&Value::Bytes(512)), "512 B");
        assert_eq!(text(&Value::Bytes(46_080)), "45.0 KiB");
        assert_eq!(text(&Value::Bytes(3 << 20)), "3.0 MiB");
        let parts = Value::Parts(vec![
            Value::Count(3),
            " in ".into(),
            Value::Ns(1_200_000),
            " (".into(),
            Value::Bytes(46_080),
            ")".into(),
        ]);
        assert_eq!(text(&parts), "3 in 1.20 ms (45.0 KiB)");
    }
}
