//! `--read-set`: which of its image's files a container read until ready. The
//! image's files (every regular file in its layer directories) are evicted from
//! the page cache before the spawn, outside the timed window (posix_fadvise,
//! no privilege needed, checked with mincore); at ready, the files with pages
//! in the cache are the ones the run read. Overlay reads land in the page cache
//! of the layer's own file, so this needs no tracer inside the container.

use crate::sample::read_set::{ReadFile, ReadSet, Untouched};
use anyhow::{Context, Result};
use coldstart_sys::pagecache;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The regular files of an image, from its layer directories.
pub struct ImageFiles {
    layers: usize,
    files: Vec<ImageFile>,
    /// Indices of files whose pages stayed through the eviction.
    stuck: Vec<usize>,
}

struct ImageFile {
    /// Its path inside the image ("/usr/bin/python3").
    path: String,
    on_disk: PathBuf,
    size: u64,
}

/// How many untouched parts of the image are named.
const UNTOUCHED_SHOWN: usize = 5;

impl ImageFiles {
    /// Every regular file under each layer directory (symbolic links, whiteouts
    /// and other special files are not content).
    pub fn list(layers: &[PathBuf]) -> Result<ImageFiles> {
        let mut files = Vec::new();
        for layer in layers {
            walk(layer, layer, &mut files)
                .with_context(|| format!("listing the image's layer {}", layer.display()))?;
        }
        Ok(ImageFiles {
            layers: layers.len(),
            files,
            stuck: Vec::new(),
        })
    }

    /// Drop every file's pages from the page cache (a file with dirty pages is
    /// synced and dropped again); the files whose pages stayed are remembered.
    pub fn evict(&mut self) {
        self.stuck.clear();
        for (i, f) in self.files.iter().enumerate() {
            let Ok(file) = File::open(&f.on_disk) else {
                continue;
            };
            let _ = pagecache::drop_pages(&file);
            let mut left = pagecache::residency(&file).map_or(0, |r| r.resident);
            if left > 0 && file.sync_data().is_ok() {
                let _ = pagecache::drop_pages(&file);
                left = pagecache::residency(&file).map_or(0, |r| r.resident);
            }
            if left > 0 {
                self.stuck.push(i);
            }
        }
    }

    /// What is in the page cache now, as the run's reads.
    pub fn read_set(&self) -> ReadSet {
        let page = pagecache::page_size();
        let mut files = Vec::new();
        let mut read = vec![false; self.files.len()];
        for (i, f) in self.files.iter().enumerate() {
            if self.stuck.contains(&i) {
                continue;
            }
            let Ok(file) = File::open(&f.on_disk) else {
                continue;
            };
            let resident = pagecache::residency(&file).map_or(0, |r| r.resident);
            if resident > 0 {
                read[i] = true;
                files.push(ReadFile {
                    path: f.path.clone(),
                    read_bytes: (resident * page).min(f.size),
                    size: f.size,
                });
            }
        }
        files.sort_by(|a, b| b.read_bytes.cmp(&a.read_bytes).then_with(|| a.path.cmp(&b.path)));
        let entries: Vec<(&str, u64, bool)> = self
            .files
            .iter()
            .zip(&read)
            .map(|(f, r)| (f.path.as_str(), f.size, *r))
            .collect();
        ReadSet {
            layers: self.layers,
            image_files: self.files.len() as u64,
            image_bytes: self.files.iter().map(|f| f.size).sum(),
            read_bytes: files.iter().map(|f| f.read_bytes).sum(),
            files,
            untouched: untouched(&entries),
            unknown: self.stuck.iter().map(|i| self.files[*i].path.clone()).collect(),
        }
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<ImageFile>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?; // of the entry itself: links are not followed
        let path = entry.path();
        if meta.is_dir() {
            walk(root, &path, out)?;
        } else if meta.is_file() {
            let inside = path.strip_prefix(root).unwrap_or(&path);
            out.push(ImageFile {
                path: format!("/{}", inside.display()),
                on_disk: path,
                size: meta.len(),
            });
        }
    }
    Ok(())
}

/// The largest parts of the image with nothing read under them whose parent
/// had something read (or that sit at the top): (path, size, read) per file in.
fn untouched(files: &[(&str, u64, bool)]) -> Vec<Untouched> {
    // Every file and each directory above it: bytes, files, whether any was read.
    let mut parts: BTreeMap<&str, (u64, u64, bool)> = BTreeMap::new();
    for (path, size, read) in files {
        let mut at = *path;
        loop {
            let e = parts.entry(at).or_default();
            e.0 += size;
            e.1 += 1;
            e.2 |= read;
            match at.rfind('/') {
                Some(0) | None => break,
                Some(i) => at = &at[..i],
            }
        }
    }
    let parent_read = |p: &str| match p.rfind('/') {
        Some(0) | None => true,
        Some(i) => parts.get(&p[..i]).is_some_and(|e| e.2),
    };
    let mut out: Vec<Untouched> = parts
        .iter()
        .filter(|(p, e)| !e.2 && parent_read(p))
        .map(|(p, e)| Untouched {
            path: p.to_string(),
            bytes: e.0,
            files: e.1,
        })
        .collect();
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.path.cmp(&b.path)));
    out.truncate(UNTOUCHED_SHOWN);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_untouched_parts_are_the_largest_unread_subtrees_under_read_parents() {
        let files = [
            ("/bin/app", 100, true),
            ("/usr/lib/a.so", 50, true),
            ("/usr/lib/big.so", 500, false),
            ("/usr/share/doc/x", 300, false),
            ("/usr/share/doc/y", 300, false),
            ("/pad", 1000, false),
        ];
        let u = untouched(&files);
        let got: Vec<(&str, u64, u64)> = u.iter().map(|u| (u.path.as_str(), u.bytes, u.files)).collect();
        assert_eq!(
            got,
            [
                ("/pad", 1000, 1),
                ("/usr/share", 600, 2),
                ("/usr/lib/big.so", 500, 1)
            ]
        );
    }

    /// Layers under the target directory (/tmp may be tmpfs, whose pages cannot be dropped).
    fn layers() -> (tempfile::TempDir, Vec<PathBuf>) {
        let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/read-set-tests");
        std::fs::create_dir_all(&base).expect("test dir");
        let dir = tempfile::tempdir_in(&base).expect("tempdir");
        let lower = dir.path().join("lower");
        let upper = dir.path().join("upper");
        std::fs::create_dir_all(lower.join("etc")).expect("mkdir");
        std::fs::create_dir_all(upper.join("srv")).expect("mkdir");
        std::fs::write(lower.join("etc/conf"), vec![b'c'; 10_000]).expect("write");
        std::fs::write(lower.join("pad"), vec![b'p'; 300_000]).expect("write");
        std::fs::write(upper.join("srv/data"), vec![b'd'; 50_000]).expect("write");
        std::os::unix::fs::symlink("/etc/conf", upper.join("link")).expect("symlink");
        (dir, vec![upper, lower])
    }

    #[test]
    fn after_an_eviction_exactly_the_files_read_are_in_the_read_set() {
        let (dir, dirs) = layers();
        let mut image = ImageFiles::list(&dirs).unwrap();
        assert_eq!(image.files.len(), 3, "regular files only");
        image.evict();
        assert!(image.stuck.is_empty());
        assert_eq!(image.read_set().files, []);
        // The oracle: what this test itself read.
        let mut buf = Vec::new();
        File::open(dir.path().join("lower/etc/conf"))
            .unwrap()
            .read_to_end(&mut buf)
            .unwrap();
        let r = image.read_set();
        assert_eq!(
            r.files,
            [ReadFile {
                path: "/etc/conf".into(),
                read_bytes: 10_000,
                size: 10_000
            }]
        );
        assert_eq!((r.layers, r.image_files, r.image_bytes), (2, 3, 360_000));
        assert_eq!(r.read_bytes, 10_000);
        let untouched: Vec<&str> = r.untouched.iter().map(|u| u.path.as_str()).collect();
        assert_eq!(untouched, ["/pad", "/srv"]);
    }
}
