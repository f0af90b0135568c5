//go:build linux

package checkpoint

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// What a Go string can hold, in the vectors' terms.
var capabilities = map[string]bool{"bytes": true, "nul": true}

type vectorFile struct {
	Protocol     string `json:"protocol"`
	MaxNameBytes int    `json:"max_name_bytes"`
	Names        []struct {
		ID       string            `json:"id"`
		Requires []string          `json:"requires"`
		Name     []json.RawMessage `json:"name"`
		NameHex  []json.RawMessage `json:"name_hex"`
		Expect   []json.RawMessage `json:"expect"`
	} `json:"names"`
	Env []struct {
		ID     string  `json:"id"`
		Value  *string `json:"value"`
		Expect string  `json:"expect"`
	} `json:"env"`
	Lifecycle []struct {
		ID string `json:"id"`
	} `json:"lifecycle"`
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "vectors", "checkpoint.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v vectorFile
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if v.Protocol != "cs1" || v.MaxNameBytes != MaxNameBytes {
		t.Fatalf("vectors: protocol %q, max_name_bytes %d", v.Protocol, v.MaxNameBytes)
	}
	return v
}

// segments concatenates strings (hex-decoded when isHex) and {"repeat", "times"}.
func segments(t *testing.T, parts []json.RawMessage, isHex bool) string {
	t.Helper()
	var b strings.Builder
	for _, p := range parts {
		var s string
		times := 1
		if err := json.Unmarshal(p, &s); err != nil {
			var r struct {
				Repeat string `json:"repeat"`
				Times  int    `json:"times"`
			}
			if err := json.Unmarshal(p, &r); err != nil {
				t.Fatal(err)
			}
			s, times = r.Repeat, r.Times
		}
		if isHex {
			raw, err := hex.DecodeString(s)
			if err != nil {
				t.Fatal(err)
			}
			s = string(raw)
		}
		b.WriteString(strings.Repeat(s, times))
	}
	return b.String()
}

func monoNow() uint64 {
	ns, _ := monotonicNanos()
	return ns
}

// packetPipe: each read returns exactly one write; the read end does not block.
func packetPipe(t *testing.T) (r, w int) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_DIRECT|syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		t.Fatal(err)
	}
	return p[0], p[1]
}

func readPacket(fd int) []byte {
	buf := make([]byte, 8192)
	n, err := syscall.Read(fd, buf)
	if err != nil || n <= 0 {
		return nil
	}
	return buf[:n]
}

func expectLine(r int, want string, t0, t1 uint64) error {
	line := readPacket(r)
	if line == nil {
		return fmt.Errorf("no line written")
	}
	rest := strings.TrimPrefix(string(line), "cs1 ")
	if len(rest) == len(line) {
		return fmt.Errorf("no 'cs1 ' prefix: %q", line)
	}
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	if digits == 0 || digits > 20 || (digits > 1 && rest[0] == '0') {
		return fmt.Errorf("bad timestamp: %q", line)
	}
	ts, err := strconv.ParseUint(rest[:digits], 10, 64)
	if err != nil {
		return err
	}
	if rest[digits:] != " "+want+"\n" {
		return fmt.Errorf("name mismatch: got %q want %q", rest[digits:], " "+want+"\n")
	}
	if ts < t0 || ts > t1 {
		return fmt.Errorf("timestamp %d outside CLOCK_MONOTONIC [%d, %d]", ts, t0, t1)
	}
	if extra := readPacket(r); extra != nil {
		return fmt.Errorf("more than one write: %q", extra)
	}
	return nil
}

func expectNothing(r int) error {
	if p := readPacket(r); p != nil {
		return fmt.Errorf("unexpected write: %q", p)
	}
	return nil
}

func useFD(t *testing.T, value *string) {
	if value == nil {
		os.Unsetenv("COLDSTART_FD")
	} else {
		t.Setenv("COLDSTART_FD", *value)
	}
	reset()
}

func useFDNumber(t *testing.T, fd int) {
	s := strconv.Itoa(fd)
	useFD(t, &s)
}

func TestNames(t *testing.T) {
	v := loadVectors(t)
	ran := 0
	for _, c := range v.Names {
		skip := false
		for _, r := range c.Requires {
			skip = skip || !capabilities[r]
		}
		t.Run(c.ID, func(t *testing.T) {
			if skip {
				t.Skipf("needs %v", c.Requires)
			}
			name := segments(t, c.Name, false)
			if c.NameHex != nil {
				name = segments(t, c.NameHex, true)
			}
			want := segments(t, c.Expect, false)
			r, w := packetPipe(t)
			defer syscall.Close(r)
			defer syscall.Close(w)
			useFDNumber(t, w)
			t0 := monoNow()
			Checkpoint(name)
			t1 := monoNow()
			if err := expectLine(r, want, t0, t1); err != nil {
				t.Error(err)
			}
			ran++
		})
	}
	if ran < 20 {
		t.Errorf("only %d name vectors ran", ran)
	}
}

func TestEnv(t *testing.T) {
	for _, c := range loadVectors(t).Env {
		t.Run(c.ID, func(t *testing.T) {
			r, w := packetPipe(t)
			defer syscall.Close(r)
			defer syscall.Close(w)
			closed, _ := syscall.Open("/dev/null", syscall.O_RDONLY, 0)
			syscall.Close(closed)
			var value *string
			if c.Value != nil {
				s := strings.NewReplacer("{fd}", strconv.Itoa(w), "{closed_fd}", strconv.Itoa(closed),
					"{read_fd}", strconv.Itoa(r)).Replace(*c.Value)
				value = &s
			}
			useFD(t, value)
			t0 := monoNow()
			Checkpoint("env-case")
			t1 := monoNow()
			var err error
			if c.Expect == "line" {
				err = expectLine(r, "env-case", t0, t1)
			} else {
				err = expectNothing(r)
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	for _, c := range loadVectors(t).Lifecycle {
		t.Run(c.ID, func(t *testing.T) {
			switch c.ID {
			case "closed-after-first-use":
				r, w := packetPipe(t)
				defer syscall.Close(r)
				useFDNumber(t, w)
				Checkpoint("first")
				if err := expectLine(r, "first", 0, ^uint64(0)); err != nil {
					t.Fatal(err)
				}
				syscall.Close(w)
				Checkpoint("after-close")
			case "fd-number-reused":
				r, w := packetPipe(t)
				useFDNumber(t, w)
				Checkpoint("first")
				if err := expectLine(r, "first", 0, ^uint64(0)); err != nil {
					t.Fatal(err)
				}
				r2, w2 := packetPipe(t)
				if err := syscall.Dup3(w2, w, 0); err != nil {
					t.Fatal(err)
				}
				Checkpoint("must-not-arrive")
				if err := expectNothing(r2); err != nil {
					t.Error(err)
				}
				for _, fd := range []int{r, w, r2, w2} {
					syscall.Close(fd)
				}
			case "reader-gone":
				// In this process (SIGPIPE as the Go runtime sets it up) and in a child
				// writing to fd 1, where a write through os.Stdout would die of SIGPIPE.
				r, w := packetPipe(t)
				syscall.Close(r)
				useFDNumber(t, w)
				Checkpoint("into-a-broken-pipe")
				syscall.Close(w)
				runBrokenStdoutChild(t)
			case "env-read-once":
				r, w := packetPipe(t)
				defer syscall.Close(r)
				defer syscall.Close(w)
				useFDNumber(t, w)
				for _, step := range []struct{ name, env string }{{"first", "keep"}, {"after-unset", ""}, {"after-change", "junk"}} {
					switch step.env {
					case "":
						os.Unsetenv("COLDSTART_FD")
					case "junk":
						os.Setenv("COLDSTART_FD", "junk")
					}
					Checkpoint(step.name)
					if err := expectLine(r, step.name, 0, ^uint64(0)); err != nil {
						t.Error(err)
					}
				}
			default:
				t.Fatal("lifecycle case not implemented by the Go tests")
			}
		})
	}
}

// TestMain lets the test binary act as the child of runBrokenStdoutChild.
func TestMain(m *testing.M) {
	if os.Getenv("CS_GO_TEST_CHILD") == "broken-stdout" {
		Checkpoint("to-a-stdout-nobody-reads")
		Checkpoint("again")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runBrokenStdoutChild(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	syscall.Close(p[0])
	stdout := os.NewFile(uintptr(p[1]), "broken")
	defer stdout.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CS_GO_TEST_CHILD=broken-stdout", "COLDSTART_FD=1")
	cmd.Stdout = stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("child writing checkpoints to a broken stdout: %v", err)
	}
}

func TestGoroutinesWriteWholeLines(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_DIRECT|syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	useFDNumber(t, p[1])
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				Checkpoint(fmt.Sprintf("g%d-%d-padding-padding-padding-padding", g, i))
			}
		}(g)
	}
	buf := make([]byte, 8192)
	for i := 0; i < 1000; i++ {
		n, err := syscall.Read(p[0], buf)
		if err != nil {
			t.Fatal(err)
		}
		line := string(buf[:n])
		if !strings.HasPrefix(line, "cs1 ") || strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
			t.Fatalf("torn line %q", line)
		}
	}
	wg.Wait()
}

func TestNoAllocations(t *testing.T) {
	os.Unsetenv("COLDSTART_FD")
	reset()
	Checkpoint("first call reads the environment")
	if n := testing.AllocsPerRun(1000, func() { Checkpoint("disabled") }); n != 0 {
		t.Errorf("disabled: %v allocations per call", n)
	}
	null, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	useFDNumber(t, int(null.Fd()))
	Checkpoint("first")
	if n := testing.AllocsPerRun(1000, func() { Checkpoint("enabled, to /dev/null") }); n != 0 {
		t.Errorf("enabled: %v allocations per call", n)
	}
}

// TestClockIsCLOCK_MONOTONIC brackets a checkpoint between two readings of
// CLOCK_MONOTONIC by another program (sdk/tools/monoclock.c).
func TestClockIsCLOCK_MONOTONIC(t *testing.T) {
	monoclock := os.Getenv("COLDSTART_MONOCLOCK")
	if monoclock == "" {
		cc, err := exec.LookPath("cc")
		if err != nil {
			t.Skip("no COLDSTART_MONOCLOCK and no cc to build sdk/tools/monoclock.c")
		}
		monoclock = filepath.Join(t.TempDir(), "monoclock")
		if out, err := exec.Command(cc, "-O2", "-o", monoclock, "../tools/monoclock.c").CombinedOutput(); err != nil {
			t.Fatalf("cc: %v\n%s", err, out)
		}
	}
	read := func() uint64 {
		out, err := exec.Command(monoclock).Output()
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	r, w := packetPipe(t)
	defer syscall.Close(r)
	defer syscall.Close(w)
	useFDNumber(t, w)
	t0 := read()
	time.Sleep(time.Millisecond)
	Checkpoint("bracketed")
	time.Sleep(time.Millisecond)
	t1 := read()
	if err := expectLine(r, "bracketed", t0, t1); err != nil {
		t.Error(err)
	}
}
