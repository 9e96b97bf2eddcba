//go:build linux

package redistest

import (
	"os"
	"syscall"
)

// sysProcAttr makes the kernel SIGKILL redis-server when the thread that
// started it exits. The Go runtime only retires a thread when a goroutine
// locked to it ends, which the test framework does not do, so in practice this
// fires when the test binary dies (a -timeout panic skips t.Cleanup).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

const (
	stopSignal = syscall.SIGSTOP
	contSignal = syscall.SIGCONT
)

// flock takes an exclusive lock on f, waiting for it.
func flock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
