//go:build linux

package checkpoint

import (
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

const (
	stateUninit   = -2
	stateDisabled = -1
)

var (
	state  atomic.Int32 // >= 0: the fd; else stateUninit or stateDisabled
	initMu sync.Mutex
	fdDev  atomic.Uint64 // identity of the fd at first use
	fdIno  atomic.Uint64
)

// The zero value of state would mean fd 0.
func init() { state.Store(stateUninit) }

func checkpoint(name string) {
	fd := state.Load()
	if fd == stateDisabled {
		return // the no-op path
	}
	if fd < 0 {
		if fd = initFD(); fd < 0 {
			return
		}
	}
	writeLine(int(fd), name)
}

// reset forgets the cached COLDSTART_FD (tests only).
func reset() {
	initMu.Lock()
	state.Store(stateUninit)
	initMu.Unlock()
}

func initFD() int32 {
	initMu.Lock()
	defer initMu.Unlock()
	if s := state.Load(); s != stateUninit {
		return s
	}
	result := int32(stateDisabled)
	if fd, ok := parseFD(os.Getenv("COLDSTART_FD")); ok {
		fl, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
		mode := int(fl) & syscall.O_ACCMODE
		var st syscall.Stat_t
		if errno == 0 && (mode == syscall.O_WRONLY || mode == syscall.O_RDWR) && syscall.Fstat(fd, &st) == nil {
			fdDev.Store(uint64(st.Dev))
			fdIno.Store(st.Ino)
			result = int32(fd)
		}
	}
	state.Store(result)
	return result
}

func monotonicNanos() (uint64, bool) {
	var ts syscall.Timespec
	_, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return uint64(ts.Sec)*1e9 + uint64(ts.Nsec), true
}

func writeLine(fd int, name string) {
	ns, ok := monotonicNanos()
	if !ok {
		return
	}
	var buf [4 + 20 + 1 + MaxNameBytes + 1]byte
	line := append(buf[:0], "cs1 "...)
	line = strconv.AppendUint(line, ns, 10)
	line = append(line, ' ')
	line = appendName(line, name)
	line = append(line, '\n')

	// The fd must still be the file it was at first use: a program may have
	// closed it and reused the number, and its data must never get our line.
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || uint64(st.Dev) != fdDev.Load() || st.Ino != fdIno.Load() {
		state.CompareAndSwap(int32(fd), stateDisabled)
		return
	}
	for {
		_, err := syscall.Write(fd, line)
		if err != syscall.EINTR {
			return
		}
	}
}
