//! Names for addresses: ELF symbol tables (with a separate debug file found by
//! build id when the binary is stripped), the kernel's /proc/kallsyms, and the
//! perf maps (`/tmp/perf-PID.map`) managed runtimes write for their JIT and
//! interpreter code. ELF tables are cached across runs (keyed by path); perf
//! maps belong to one run's processes and are read per run.

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Address ranges with names, sorted by start.
#[derive(Debug, Default)]
pub struct Table {
    entries: Vec<(u64, u64, String)>,
}

impl Table {
    /// From (start, size, name); a size of 0 extends to the next start.
    fn new(mut v: Vec<(u64, u64, String)>) -> Table {
        v.sort_by_key(|e| e.0);
        v.dedup_by_key(|e| e.0);
        let starts: Vec<u64> = v.iter().map(|e| e.0).collect();
        let entries = v
            .into_iter()
            .enumerate()
            .map(|(i, (start, size, name))| {
                let end = if size > 0 {
                    start + size
                } else {
                    starts.get(i + 1).copied().unwrap_or(u64::MAX)
                };
                (start, end, name)
            })
            .collect();
        Table { entries }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.entries.partition_point(|e| e.0 <= addr);
        let (_, end, name) = self.entries.get(i.checked_sub(1)?)?;
        (addr < *end).then_some(name.as_str())
    }
}

/// One ELF file's symbols and how its file offsets map to its addresses.
struct Elf {
    /// (file offset, file size, virtual address) of each loadable segment.
    segments: Vec<(u64, u64, u64)>,
    table: Table,
}

impl Elf {
    fn load(path: &Path) -> Option<Elf> {
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        let mut syms = symbols_of(&file);
        if !syms.iter().any(|s| s.1 > 0) || file.symbol_table().is_none() {
            // Stripped (Debian's libraries): the debug package's file, by build id.
            if let Some(debug) = file.build_id().ok().flatten().and_then(debug_file) {
                if let Ok(d) = std::fs::read(&debug) {
                    if let Ok(f) = object::File::parse(&*d) {
                        syms.extend(symbols_of(&f));
                    }
                }
            }
        }
        Some(Elf {
            segments,
            table: Table::new(syms),
        })
    }

    fn lookup(&self, file_offset: u64) -> Option<&str> {
        let (off, _, vaddr) = self
            .segments
            .iter()
            .find(|(off, size, _)| (*off..off + size).contains(&file_offset))?;
        self.table.lookup(file_offset - off + vaddr)
    }
}

fn symbols_of(file: &object::File) -> Vec<(u64, u64, String)> {
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
        .filter_map(|s| Some((s.address(), s.size(), demangle(s.name().ok()?))))
        .collect()
}

fn debug_file(build_id: &[u8]) -> Option<PathBuf> {
    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    let p = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        hex.get(..2)?,
        hex.get(2..)?
    ));
    p.exists().then_some(p)
}

/// Rust and C++ names demangled (C++ without parameter lists, as perf shows them).
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let opts = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
            if let Ok(d) = sym.demangle(&opts) {
                return d;
            }
        }
    }
    name.to_string()
}

/// The symbol caches of one profiling session (several runs of one target).
#[derive(Default)]
pub struct Symbols {
    elf: HashMap<PathBuf, Option<Arc<Elf>>>,
    kernel: Option<Table>,
}

impl Symbols {
    pub fn new() -> Symbols {
        Symbols::default()
    }

    /// The function at `file_offset` of the ELF file at `path`.
    pub fn elf(&mut self, path: &str, file_offset: u64) -> Option<String> {
        let elf = self
            .elf
            .entry(PathBuf::from(path))
            .or_insert_with(|| Elf::load(Path::new(path)).map(Arc::new))
            .clone()?;
        elf.lookup(file_offset).map(str::to_string)
    }

    /// The kernel function at `addr` (/proc/kallsyms; addresses hidden by
    /// kptr_restrict read as 0 and name nothing).
    pub fn kernel(&mut self, addr: u64) -> Option<String> {
        let table = self.kernel.get_or_insert_with(kallsyms);
        table.lookup(addr).map(str::to_string)
    }
}

fn kallsyms() -> Table {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let entries = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let addr = u64::from_str_radix(f.next()?, 16).ok()?;
            let kind = f.next()?;
            let name = f.next()?;
            (addr != 0 && matches!(kind, "t" | "T")).then(|| (addr, 0, name.to_string()))
        })
        .collect();
    Table::new(entries)
}

/// A perf map: `START SIZE name` per line, hex, as V8, the JVM and CPython write them.
pub fn perf_map(text: &str) -> Table {
    let entries = text
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ' ');
            let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
            let start = hex(f.next()?)?;
            let size = hex(f.next()?)?;
            let name = f.next()?.trim();
            (size > 0 && !name.is_empty()).then(|| (start, size, name.to_string()))
        })
        .collect();
    Table::new(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_perf_map_names_addresses_inside_its_ranges_only() {
        let t = perf_map("7f00 10 LazyCompile:~main app.js:1\n0x8000 0x20 Interpreter\nbad line\n");
        assert_eq!(t.lookup(0x7f00), Some("LazyCompile:~main app.js:1"));
        assert_eq!(t.lookup(0x7f0f), Some("LazyCompile:~main app.js:1"));
        assert_eq!(t.lookup(0x7f10), None);
        assert_eq!(t.lookup(0x801f), Some("Interpreter"));
        assert_eq!(t.lookup(0x10), None);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn names_are_demangled() {
        assert_eq!(
            demangle("_ZN7Threads9create_vmEP14JavaVMInitArgsPb"),
            "Threads::create_vm"
        );
        assert_eq!(demangle("main"), "main");
    }

    #[test]
    fn our_own_binary_is_symbolised_through_its_segments() {
        // This test binary's own code: its mapping in /proc/self/maps gives the
        // file offset of a function we know.
        let addr = names_are_demangled as *const () as usize as u64;
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let (start, off) = maps
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let (s, e) = f[0].split_once('-')?;
                let (s, e) = (u64::from_str_radix(s, 16).ok()?, u64::from_str_radix(e, 16).ok()?);
                (f.get(5) == Some(&exe.to_str()?) && (s..e).contains(&addr))
                    .then(|| (s, u64::from_str_radix(f[2], 16).unwrap()))
            })
            .expect("the test's code is mapped from its file");
        let name = Symbols::new()
            .elf(exe.to_str().unwrap(), addr - start + off)
            .unwrap();
        assert!(name.contains("names_are_demangled"), "{name}");
    }
}
