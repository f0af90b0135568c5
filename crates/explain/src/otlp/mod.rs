//! The target's own OpenTelemetry spans: an OTLP/HTTP receiver on loopback.
//!
//! [`Receiver::start`] binds 127.0.0.1 on a free port and serves `POST /v1/traces`
//! (protobuf or OTLP/JSON, optionally gzip/deflate) on its own thread and
//! current-thread tokio runtime; [`Receiver::env`] points the SDKs' default
//! exporters at it; [`Receiver::finish`] stops serving and turns what arrived into
//! a [`Section`] on the run's clock.
//!
//! OTLP times are wall clock (unix ns). They are moved onto CLOCK_MONOTONIC with
//! the offset CLOCK_REALTIME − CLOCK_MONOTONIC, sampled when the receiver starts
//! and when it finishes (the run lies between), so the alignment is as good as the
//! two clocks' agreement: NTP slewing during the run (ms-level at worst) is ignored.
//!
//! `/v1/metrics` and `/v1/logs` are accepted and dropped: `OTEL_EXPORTER_OTLP_ENDPOINT`
//! sends every signal here, and an exporter whose requests fail retries with
//! backoff, which would stretch the target's shutdown and so the measurement.
//!
//! Four parts: `receiver` serves and keeps what arrives in `kept` (within its
//! limits), `decode` turns a request body (protobuf or OTLP/JSON, compressed or
//! not) into spans, `section` turns what was kept into the run's [`Section`].
//!
//! [`Section`]: coldstart_core::sample::Section

mod decode;
mod kept;
mod receiver;
mod section;

pub use receiver::Receiver;

#[cfg(test)]
#[path = "../otlp_tests.rs"]
mod tests;
