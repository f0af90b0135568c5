//! What a container read of its image until ready (Slacker's metric): the
//! image's files whose pages were in the page cache at ready after all of them
//! had been evicted before the spawn. Page granularity, readahead included:
//! what the run made the kernel read, not what the program asked for.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadSet {
    /// The image's layers (directories in the engine's store).
    pub layers: usize,
    /// Regular files in its layers, and their bytes (what a pull unpacks).
    pub image_files: u64,
    pub image_bytes: u64,
    /// Bytes of the image's files in the page cache at ready (whole pages).
    pub read_bytes: u64,
    /// The files read, largest read first.
    pub files: Vec<ReadFile>,
    /// The largest parts of the image not read at all: directories (or files)
    /// with nothing read under them, whose parent had something read.
    pub untouched: Vec<Untouched>,
    /// Files whose pages could not be evicted before the run (mapped by a
    /// running process, such as another container of the image): whether the
    /// run read them is unknown, and they are not in `files`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadFile {
    /// Its path inside the image.
    pub path: String,
    pub read_bytes: u64,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Untouched {
    pub path: String,
    pub bytes: u64,
    pub files: u64,
}
