//! What podman's image store records of a pull: each layer's record is written
//! when its blob has been fetched and its unpacking begins (its `created`), the
//! image's files (manifest, configuration) once every layer is in (their
//! modification times: the image record's own `created` is the image's build
//! date); each layer keeps its compressed size (the bytes fetched). Read from
//! the store's own files (containers/storage's `<driver>-images/` and
//! `<driver>-layers/layers.json`), which podman's CLI does not show.

use anyhow::{Context, Result};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

/// An image's pull as the store recorded it (Unix ns on the engine's clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The image's files written: the pull's end.
    pub image_stored: i128,
    /// Its layers, top first: when each was recorded, and its compressed size.
    pub layers: Vec<(i128, u64)>,
}

impl Stored {
    /// The layers recorded at or after `since` (those this run fetched): how
    /// many, their compressed bytes, and the last one's record.
    pub fn fetched_since(&self, since: i128) -> (usize, u64, Option<i128>) {
        let fresh: Vec<&(i128, u64)> = self.layers.iter().filter(|l| l.0 >= since).collect();
        (
            fresh.len(),
            fresh.iter().map(|l| l.1).sum(),
            fresh.iter().map(|l| l.0).max(),
        )
    }
}

#[derive(Deserialize)]
struct ImageRecord {
    id: String,
    layer: Option<String>,
}

#[derive(Deserialize)]
struct LayerRecord {
    id: String,
    parent: Option<String>,
    created: Option<String>,
    #[serde(rename = "compressed-size", default)]
    compressed_size: u64,
}

/// Image `id`'s record and its layer chain under `graphroot` (driver `driver`).
pub fn read(graphroot: &Path, driver: &str, id: &str) -> Result<Option<Stored>> {
    let images = graphroot.join(format!("{driver}-images/images.json"));
    let layers = graphroot.join(format!("{driver}-layers/layers.json"));
    let images: Vec<ImageRecord> = serde_json::from_slice(
        &std::fs::read(&images).with_context(|| format!("reading {}", images.display()))?,
    )
    .with_context(|| format!("parsing {}", images.display()))?;
    let layers: Vec<LayerRecord> = serde_json::from_slice(
        &std::fs::read(&layers).with_context(|| format!("reading {}", layers.display()))?,
    )
    .with_context(|| format!("parsing {}", layers.display()))?;
    let Some(stored) = first_written(&graphroot.join(format!("{driver}-images")).join(id)) else {
        return Ok(None);
    };
    Ok(chain(&images, &layers, id, stored))
}

/// The earliest modification time of the files in `dir` (Unix ns).
fn first_written(dir: &Path) -> Option<i128> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.metadata().ok()?.modified().ok())
        .filter_map(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128)
        .min()
}

fn chain(images: &[ImageRecord], layers: &[LayerRecord], id: &str, image_stored: i128) -> Option<Stored> {
    let image = images.iter().find(|i| i.id == id)?;
    let by_id: HashMap<&str, &LayerRecord> = layers.iter().map(|l| (l.id.as_str(), l)).collect();
    let mut out = Vec::new();
    let mut next = image.layer.as_deref();
    while let Some(l) = next.and_then(|id| by_id.get(id)) {
        out.push((l.created.as_deref().and_then(unix_ns)?, l.compressed_size));
        next = l.parent.as_deref();
        if out.len() > by_id.len() {
            return None; // a cycle: not a store's index
        }
    }
    Some(Stored {
        image_stored,
        layers: out,
    })
}

/// RFC 3339 (as Go writes times into JSON) → Unix ns.
fn unix_ns(s: &str) -> Option<i128> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As containers/storage wrote them for a two-layer image pulled at 02:19:16.
    const IMAGES: &str = r#"[{"id":"img1","digest":"sha256:5a","names":["127.0.0.1:5000/x/p:1"],
        "layer":"top","metadata":"{}","created":"2025-06-01T00:00:00Z"}]"#;
    const LAYERS: &str = r#"[
        {"id":"base","created":"2026-12-08T02:19:16.500000000Z","compressed-size":1000,"diff-size":3000},
        {"id":"top","parent":"base","created":"2026-12-08T02:19:16.826813118Z","compressed-size":100360915},
        {"id":"other","created":"2025-01-01T00:00:00Z","compressed-size":5}]"#;

    #[test]
    fn an_images_record_and_its_layer_chain_give_the_pull() {
        let images: Vec<ImageRecord> = serde_json::from_str(IMAGES).unwrap();
        let layers: Vec<LayerRecord> = serde_json::from_str(LAYERS).unwrap();
        let stored = 1_796_696_357_101_234_567;
        let s = chain(&images, &layers, "img1", stored).unwrap();
        // 2026-12-08T02:19:00Z is 1796696340 s (Python's datetime(2026, 12, 8, 2, 19).timestamp()).
        let at = |s_ns: i128| 1_796_696_340_000_000_000 + s_ns;
        assert_eq!(s.image_stored, at(17_101_234_567));
        assert_eq!(
            s.layers,
            [(at(16_826_813_118), 100360915), (at(16_500_000_000), 1000)]
        );
        // Only the top layer is this run's (the base was there before it).
        assert_eq!(
            s.fetched_since(at(16_600_000_000)),
            (1, 100360915, Some(at(16_826_813_118)))
        );
        assert_eq!(chain(&images, &layers, "nope", stored), None);
    }
}
