//! Just enough of 64-bit little-endian ELF to answer questions about a program
//! without loading it: is it static, and does it bind symbols at startup
//! (BIND_NOW)? Reads the header, the program headers and the dynamic segment.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const DT_NULL: u64 = 0;
const DT_BIND_NOW: u64 = 24;
const DT_FLAGS: u64 = 30;
const DT_FLAGS_1: u64 = 0x6fff_fffb;
const DF_BIND_NOW: u64 = 0x8;
const DF_1_NOW: u64 = 0x1;

struct ProgramHeader {
    p_type: u32,
    offset: u64,
    filesz: u64,
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(x)
}

/// The program headers of a 64-bit little-endian ELF file; None for anything else.
fn program_headers(f: &mut File) -> Option<Vec<ProgramHeader>> {
    let mut head = [0u8; 64];
    f.read_exact(&mut head).ok()?;
    if &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let (phoff, phentsize, phnum) = (
        u64_at(&head, 32),
        u16_at(&head, 54) as usize,
        u16_at(&head, 56) as usize,
    );
    if phentsize < 56 || phnum > 4096 {
        return None;
    }
    let mut bytes = vec![0u8; phnum * phentsize];
    f.seek(SeekFrom::Start(phoff)).ok()?;
    f.read_exact(&mut bytes).ok()?;
    Some(
        (0..phnum)
            .map(|i| {
                let o = i * phentsize;
                ProgramHeader {
                    p_type: u32_at(&bytes, o),
                    offset: u64_at(&bytes, o + 8),
                    filesz: u64_at(&bytes, o + 32),
                }
            })
            .collect(),
    )
}

/// An ELF executable without a PT_INTERP header is statically linked (the
/// dynamic loader, and so LD_PRELOAD and LD_DEBUG, never runs). Scripts and
/// unreadable files count as dynamic: their interpreter decides.
pub fn is_static(path: &Path) -> bool {
    let Ok(mut f) = File::open(path) else {
        return false;
    };
    match program_headers(&mut f) {
        Some(phs) => phs.iter().all(|p| p.p_type != PT_INTERP),
        None => false,
    }
}

/// Whether the dynamic loader resolves every symbol at startup (linked with
/// `-z now`: DT_BIND_NOW, DF_BIND_NOW or DF_1_NOW) instead of lazily at each
/// function's first call. None when `path` is not a dynamically linked ELF.
pub fn binds_now(path: &Path) -> Option<bool> {
    let mut f = File::open(path).ok()?;
    let phs = program_headers(&mut f)?;
    let dynamic = phs.iter().find(|p| p.p_type == PT_DYNAMIC)?;
    if dynamic.filesz > 1 << 20 {
        return None;
    }
    let mut bytes = vec![0u8; dynamic.filesz as usize];
    f.seek(SeekFrom::Start(dynamic.offset)).ok()?;
    f.read_exact(&mut bytes).ok()?;
    let mut now = false;
    for entry in bytes.chunks_exact(16) {
        let (tag, val) = (u64_at(entry, 0), u64_at(entry, 8));
        match tag {
            DT_NULL => break,
            DT_BIND_NOW => now = true,
            DT_FLAGS if val & DF_BIND_NOW != 0 => now = true,
            DT_FLAGS_1 if val & DF_1_NOW != 0 => now = true,
            _ => {}
        }
    }
    Some(now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn tells_static_from_dynamic() {
        assert!(!is_static(Path::new("/bin/sh")), "/bin/sh is dynamically linked");
        assert!(!is_static(Path::new("/etc/hostname")), "not an ELF");
        assert_eq!(binds_now(Path::new("/etc/hostname")), None);
    }

    /// The same C program linked lazily and with `-z now`: only the second binds now.
    #[test]
    fn sees_bind_now_from_the_linker_flag() {
        let Some(gcc) = crate::testkit::tool("GCC", "gcc") else {
            return;
        };
        let dir = tempfile::tempdir_in(crate::testkit::fixtures_dir()).expect("tempdir");
        let src = dir.path().join("m.c");
        std::fs::write(
            &src,
            "#include <stdio.h>\nint main(void){puts(\"hi\");return 0;}\n",
        )
        .expect("write");
        let build = |out: &str, flags: &[&str]| {
            let ok = Command::new(&gcc)
                .args(flags)
                .arg("-o")
                .arg(dir.path().join(out))
                .arg(&src)
                .status()
                .expect("gcc")
                .success();
            assert!(ok, "gcc failed");
            dir.path().join(out)
        };
        let lazy = build("lazy", &["-Wl,-z,lazy"]);
        let now = build("now", &["-Wl,-z,now"]);
        assert_eq!(binds_now(&lazy), Some(false));
        assert_eq!(binds_now(&now), Some(true));
        assert!(!is_static(&now));
    }
}
