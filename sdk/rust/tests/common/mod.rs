//! Test support: a small JSON reader (this crate has no dependencies besides
//! libc, in tests too) and pipe / clock helpers shared by the test files.
#![allow(dead_code)]

use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(BTreeMap<String, Json>),
}

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.get(key),
            _ => None,
        }
    }
    pub fn str(&self) -> &str {
        match self {
            Json::Str(s) => s,
            other => panic!("not a string: {other:?}"),
        }
    }
    pub fn arr(&self) -> &[Json] {
        match self {
            Json::Arr(a) => a,
            other => panic!("not an array: {other:?}"),
        }
    }
    pub fn num(&self) -> f64 {
        match self {
            Json::Num(n) => *n,
            other => panic!("not a number: {other:?}"),
        }
    }
}

pub fn parse(text: &str) -> Json {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let v = p.value();
    p.ws();
    assert_eq!(p.i, p.s.len(), "trailing data");
    v
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && b" \t\r\n".contains(&self.s[self.i]) {
            self.i += 1;
        }
    }
    fn eat(&mut self, lit: &str) -> bool {
        if self.s[self.i..].starts_with(lit.as_bytes()) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }
    fn value(&mut self) -> Json {
        self.ws();
        let c = self.s[self.i];
        match c {
            b'"' => Json::Str(self.string()),
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat("]") {
                    return Json::Arr(items);
                }
                loop {
                    items.push(self.value());
                    self.ws();
                    if self.eat(",") {
                        continue;
                    }
                    assert!(self.eat("]"), "expected ] at {}", self.i);
                    return Json::Arr(items);
                }
            }
            b'{' => {
                self.i += 1;
                let mut map = BTreeMap::new();
                self.ws();
                if self.eat("}") {
                    return Json::Obj(map);
                }
                loop {
                    self.ws();
                    let k = self.string();
                    self.ws();
                    assert!(self.eat(":"), "expected : at {}", self.i);
                    map.insert(k, self.value());
                    self.ws();
                    if self.eat(",") {
                        continue;
                    }
                    assert!(self.eat("}"), "expected }} at {}", self.i);
                    return Json::Obj(map);
                }
            }
            _ if self.eat("null") => Json::Null,
            _ if self.eat("true") => Json::Bool(true),
            _ if self.eat("false") => Json::Bool(false),
            _ => {
                let start = self.i;
                while self.i < self.s.len() && b"-+.eE0123456789".contains(&self.s[self.i]) {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                Json::Num(t.parse().unwrap_or_else(|_| panic!("bad number {t:?}")))
            }
        }
    }
    fn hex4(&mut self) -> u32 {
        let t = std::str::from_utf8(&self.s[self.i..self.i + 4]).unwrap();
        self.i += 4;
        u32::from_str_radix(t, 16).unwrap()
    }
    /// Lone surrogates (which Rust strings cannot hold) become U+FFFD; the
    /// vectors that use them are skipped for Rust anyway.
    fn string(&mut self) -> String {
        assert!(self.eat("\""), "expected string at {}", self.i);
        let mut out = Vec::new();
        loop {
            let c = self.s[self.i];
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(out).unwrap(),
                b'\\' => {
                    let e = self.s[self.i];
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let mut cp = self.hex4();
                            if (0xD800..0xDC00).contains(&cp) && self.s[self.i..].starts_with(b"\\u") {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4();
                                if (0xDC00..0xE000).contains(&lo) {
                                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                } else {
                                    self.i = save;
                                }
                            }
                            char::from_u32(cp).unwrap_or('\u{FFFD}')
                        }
                        other => panic!("bad escape {}", other as char),
                    };
                    let mut b = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                }
                _ => out.push(c),
            }
        }
    }
}

pub fn vectors() -> Json {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../vectors/checkpoint.json");
    parse(&std::fs::read_to_string(path).expect("read sdk/vectors/checkpoint.json"))
}

/// Concatenate name/expect segments: strings and {"repeat": s, "times": n}.
pub fn segments(parts: &Json) -> String {
    let mut out = String::new();
    for p in parts.arr() {
        match p {
            Json::Str(s) => out.push_str(s),
            obj => out.push_str(
                &obj.get("repeat")
                    .unwrap()
                    .str()
                    .repeat(obj.get("times").unwrap().num() as usize),
            ),
        }
    }
    out
}

pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A packet-mode pipe (each read returns one write), read end non-blocking: (read, write).
pub fn packet_pipe() -> (i32, i32) {
    let mut p = [0i32; 2];
    assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_DIRECT) }, 0);
    unsafe {
        libc::fcntl(
            p[0],
            libc::F_SETFL,
            libc::fcntl(p[0], libc::F_GETFL) | libc::O_NONBLOCK,
        )
    };
    (p[0], p[1])
}

pub fn close(fd: i32) {
    unsafe { libc::close(fd) };
}

/// One read: the bytes of one packet, or None when nothing is there.
pub fn read_packet(fd: i32) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 8192];
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 {
        return None;
    }
    buf.truncate(n as usize);
    Some(buf)
}

/// The next packet must be exactly `cs1 <ns> <expect>\n` with ns in [t0, t1], and nothing after it.
pub fn expect_line(r: i32, expect: &str, t0: u64, t1: u64) -> Result<(), String> {
    let line = read_packet(r).ok_or("no line written")?;
    let rest = line.strip_prefix(b"cs1 ").ok_or("no 'cs1 ' prefix")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 20 || (digits > 1 && rest[0] == b'0') {
        return Err("bad timestamp".into());
    }
    let ts: u64 = std::str::from_utf8(&rest[..digits])
        .unwrap()
        .parse()
        .map_err(|_| "timestamp overflow")?;
    let mut want = vec![b' '];
    want.extend_from_slice(expect.as_bytes());
    want.push(b'\n');
    if rest[digits..] != want[..] {
        return Err(format!(
            "name mismatch: got {:?}",
            String::from_utf8_lossy(&rest[digits..])
        ));
    }
    if ts < t0 || ts > t1 {
        return Err(format!("timestamp {ts} outside CLOCK_MONOTONIC [{t0}, {t1}]"));
    }
    if read_packet(r).is_some() {
        return Err("more than one write".into());
    }
    Ok(())
}

pub fn expect_nothing(r: i32) -> Result<(), String> {
    match read_packet(r) {
        Some(p) => Err(format!("unexpected write: {:?}", String::from_utf8_lossy(&p))),
        None => Ok(()),
    }
}
