// Package checkpoint records app checkpoints for coldstart, a cold-start lab
// for Linux programs: tell it when your program reaches a named point of its
// start-up.
//
//	checkpoint.Checkpoint("config-loaded")
//
// When the environment variable COLDSTART_FD names an open, writable file
// descriptor (plain decimal digits), each call writes one line
//
//	cs1 <CLOCK_MONOTONIC ns> <name>\n
//
// to it with a single write(2), so lines from several goroutines or processes
// never interleave. Otherwise the call does nothing.
//
// Cost: the first call reads COLDSTART_FD once and caches the result in an
// atomic; every later call with the variable unset or unusable is one atomic
// load and one compare. No call allocates: the line is built in a stack buffer,
// and the clock is read with the clock_gettime(CLOCK_MONOTONIC) system call
// (the Go runtime's own monotonic readings are relative to process start, so
// they cannot line up with the tool's).
//
// Errors are ignored: a closed descriptor, a reader that went away (EPIPE; the
// Go runtime does not let SIGPIPE kill a program for a write to a descriptor
// other than 1 or 2, nor for a raw write like this one to 1 or 2), or a
// descriptor number that the program closed and reused for something else
// (checked with fstat before each write; the SDK then stops writing).
//
// Names: '\n' and '\r' become ' '; bytes that are not UTF-8 become U+FFFD, one
// per maximal ill-formed subsequence; at most MaxNameBytes bytes are kept, cut
// at a character boundary. Shared test vectors live in sdk/vectors/.
//
// On systems other than Linux, Checkpoint does nothing.
package checkpoint

// MaxNameBytes is the longest name written, in bytes; longer names are cut at
// a character boundary.
const MaxNameBytes = 1024

// Checkpoint records the checkpoint name (see the package documentation).
func Checkpoint(name string) {
	checkpoint(name)
}

// parseFD accepts 1..10 ASCII digits with a value of at most 2^31-1.
func parseFD(s string) (int, bool) {
	if len(s) == 0 || len(s) > 10 {
		return 0, false
	}
	v := int64(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if v > 1<<31-1 {
		return 0, false
	}
	return int(v), true
}

// appendName appends name to dst following the protocol's rules: '\n' and
// '\r' become ' '; ill-formed UTF-8 becomes U+FFFD per maximal subpart (as
// Python's errors="replace" and Rust's from_utf8_lossy; note that ranging over
// a Go string would give one U+FFFD per byte instead); at most MaxNameBytes
// bytes; a character that does not fit ends the name.
func appendName(dst []byte, name string) []byte {
	limit := len(dst) + MaxNameBytes
	for i := 0; i < len(name); {
		c := name[i]
		if c < 0x80 {
			if len(dst)+1 > limit {
				break
			}
			if c == '\n' || c == '\r' {
				c = ' '
			}
			dst = append(dst, c)
			i++
			continue
		}
		need, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need = 2
		case c >= 0xE0 && c <= 0xEF:
			need = 3
			if c == 0xE0 {
				lo = 0xA0
			}
			if c == 0xED {
				hi = 0x9F
			}
		case c >= 0xF0 && c <= 0xF4:
			need = 4
			if c == 0xF0 {
				lo = 0x90
			}
			if c == 0xF4 {
				hi = 0x8F
			}
		}
		got := 1
		for need > 0 && got < need && i+got < len(name) {
			b := name[i+got]
			l, h := byte(0x80), byte(0xBF)
			if got == 1 {
				l, h = lo, hi
			}
			if b < l || b > h {
				break
			}
			got++
		}
		if need > 0 && got == need {
			if len(dst)+need > limit {
				break
			}
			dst = append(dst, name[i:i+need]...)
		} else {
			if len(dst)+3 > limit {
				break
			}
			dst = append(dst, 0xEF, 0xBF, 0xBD)
		}
		i += got
	}
	return dst
}
