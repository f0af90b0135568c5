//! `log:REGEX`: ready when a stdout or stderr line matches; named groups are
//! captured as values (e.g. a "ready in (?P<ms>\d+)ms" the program prints itself).

use regex::Regex;
use std::collections::BTreeMap;

pub struct LogProbe {
    regex: Regex,
    pub captures: BTreeMap<String, String>,
}

impl LogProbe {
    pub fn new(regex: Regex) -> Self {
        LogProbe {
            regex,
            captures: BTreeMap::new(),
        }
    }

    pub fn on_line(&mut self, line: &str) -> bool {
        let Some(caps) = self.regex.captures(line) else {
            return false;
        };
        for name in self.regex.capture_names().flatten() {
            if let Some(m) = caps.name(name) {
                self.captures.insert(name.to_string(), m.as_str().to_string());
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_named_groups() {
        let mut p = LogProbe::new(Regex::new(r"ready in (?P<ms>\d+)ms on (?P<port>\d+)").unwrap());
        assert!(!p.on_line("starting"));
        assert!(p.on_line("ready in 42ms on 8080"));
        assert_eq!(p.captures["ms"], "42");
        assert_eq!(p.captures["port"], "8080");
    }
}
