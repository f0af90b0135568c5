//! What an experiment was run with, as the store keeps it and the JSON export
//! shows it (`settings`, docs/json-schema.md), and which kind of experiment it
//! is. Typed here; the JSON form (`runs` as text, durations in ms and µs) is the
//! documented schema's.

use super::plan::{CiOf, Order, Plan, StopRule};
use super::sweep::Sweep;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which command made an experiment: what its variants are (bench's targets,
/// explain's arms, tune's candidates, lambda's functions) and how it is shown.
/// A sweep is no kind of its own: bench and lambda both sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Bench,
    Explain,
    Tune,
    Lambda,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Bench, Kind::Explain, Kind::Tune, Kind::Lambda];

    /// As the store's `kind` column and `history` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Bench => "bench",
            Kind::Explain => "explain",
            Kind::Tune => "tune",
            Kind::Lambda => "lambda",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How many runs each variant was planned: a fixed count, or adaptive stopping
/// between two counts (see `StopRule`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Runs {
    Fixed(usize),
    Adaptive { min: usize, max: usize, of: CiOf },
}

impl From<&StopRule> for Runs {
    fn from(rule: &StopRule) -> Runs {
        match *rule {
            StopRule::Fixed { runs } => Runs::Fixed(runs),
            StopRule::Adaptive {
                min_runs,
                max_runs,
                of,
                ..
            } => Runs::Adaptive {
                min: min_runs,
                max: max_runs,
                of,
            },
        }
    }
}

/// What an adaptive stop waits for, in the schema's words.
fn ci_of_words(of: CiOf) -> String {
    match of {
        CiOf::Median => "target CI of the median".into(),
        CiOf::Shift => "target CI of the shift".into(),
        // In percent, rounded to 4 decimals: 0.07 prints as 7, not 7.000000000000001.
        CiOf::Verdict { noise } => format!("{VERDICT_WORDS}{}%", (noise * 1e6).round() / 1e4),
    }
}

const VERDICT_WORDS: &str = "until each verdict is decided against ±";

/// The schema's text: `20`, `10..200 (target CI of the median)`, or tune's
/// `4..40 (until each verdict is decided against ±1%)`.
impl std::fmt::Display for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Runs::Fixed(n) => write!(f, "{n}"),
            Runs::Adaptive { min, max, of } => {
                write!(f, "{min}..{max} ({})", ci_of_words(*of))
            }
        }
    }
}

impl std::str::FromStr for Runs {
    type Err = String;

    /// Also the older `10..200 (target CI)`, which narrowed the median.
    fn from_str(s: &str) -> Result<Runs, String> {
        let bad = || format!("bad runs '{s}': expected N or MIN..MAX (target CI of the median|shift)");
        let count = |t: &str| t.trim().parse::<usize>().map_err(|_| bad());
        let Some((min, rest)) = s.split_once("..") else {
            return count(s).map(Runs::Fixed);
        };
        let (max, note) = rest.split_once(" (").unwrap_or((rest, ""));
        let note = note.trim_end_matches(')');
        let of = match note {
            "target CI of the shift" => CiOf::Shift,
            "" | "target CI" | "target CI of the median" => CiOf::Median,
            _ => match note
                .strip_prefix(VERDICT_WORDS)
                .and_then(|p| p.strip_suffix('%'))
                .and_then(|p| p.parse::<f64>().ok())
            {
                Some(p) => CiOf::Verdict { noise: p / 100.0 },
                None => return Err(bad()),
            },
        };
        Ok(Runs::Adaptive {
            min: count(min)?,
            max: count(max)?,
            of,
        })
    }
}

impl Serialize for Runs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Runs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Runs, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The settings an experiment records, with `K`: what its kind adds (tune's
/// candidates, lambda's function), whose fields stand beside these in the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSettings<K = ()> {
    pub runs: Runs,
    pub warmup: usize,
    pub order: Order,
    /// A run's limit (lambda's: the init timeout).
    #[serde(rename = "timeout_ms", with = "millis")]
    pub timeout: Duration,
    /// How often readiness is polled.
    #[serde(rename = "poll_interval_us", with = "micros")]
    pub poll_interval: Duration,
    /// Requests after ready.
    pub requests: usize,
    /// Reproduces the shuffled order.
    pub seed: u64,
    /// The noise threshold the comparisons used (fraction of the baseline median).
    #[serde(default = "default_noise")]
    pub noise: f64,
    /// What was swept (parameters, their values, resources, --compare-along).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
    #[serde(flatten)]
    pub of_kind: K,
}

fn default_noise() -> f64 {
    coldstart_stats::DEFAULT_NOISE
}

impl<K> ExperimentSettings<K> {
    /// The settings of `plan`, run with these runner settings, judged with `noise`.
    pub fn new(
        plan: &Plan,
        timeout: Duration,
        poll_interval: Duration,
        requests: usize,
        noise: f64,
        of_kind: K,
    ) -> Self {
        ExperimentSettings {
            runs: Runs::from(&plan.stop),
            warmup: plan.warmup,
            order: plan.order,
            timeout,
            poll_interval,
            requests,
            seed: plan.seed,
            noise,
            sweep: None,
            of_kind,
        }
    }
}

/// A duration as whole milliseconds.
mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// A duration as whole microseconds.
mod micros {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_micros() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_micros)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_read_back_as_written_and_as_older_coldstarts_wrote_them() {
        for runs in [
            Runs::Fixed(20),
            Runs::Adaptive {
                min: 10,
                max: 200,
                of: CiOf::Median,
            },
            Runs::Adaptive {
                min: 5,
                max: 50,
                of: CiOf::Shift,
            },
            Runs::Adaptive {
                min: 4,
                max: 40,
                of: CiOf::Verdict { noise: 0.01 },
            },
        ] {
            assert_eq!(runs.to_string().parse::<Runs>(), Ok(runs));
        }
        assert_eq!(Runs::Fixed(20).to_string(), "20");
        assert_eq!(
            "10..200 (target CI)".parse::<Runs>(),
            Ok(Runs::Adaptive {
                min: 10,
                max: 200,
                of: CiOf::Median
            })
        );
        assert!("many".parse::<Runs>().is_err());
        assert!("1..2 (target CI of the mean)".parse::<Runs>().is_err());
    }

    /// The documented JSON (docs/json-schema.md) reads into the typed settings
    /// and writes back the same.
    #[test]
    fn the_documented_json_round_trips() {
        let json = serde_json::json!({
            "runs": "10..200 (target CI of the median)", "warmup": 1, "order": "shuffled",
            "timeout_ms": 30000, "poll_interval_us": 200, "requests": 0, "seed": 123, "noise": 0.01
        });
        let s: ExperimentSettings = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(s.timeout, Duration::from_secs(30));
        assert_eq!(s.poll_interval, Duration::from_micros(200));
        assert_eq!(s.order, Order::Shuffled);
        assert_eq!(serde_json::to_value(&s).unwrap(), json);
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
    }
}
