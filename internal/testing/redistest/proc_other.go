//go:build unix && !linux

package redistest

import (
	"os"
	"syscall"
)

// sysProcAttr has no parent-death signal outside Linux; t.Cleanup alone stops
// the server, so a test binary killed by -timeout can leave one behind.
func sysProcAttr() *syscall.SysProcAttr { return nil }

const (
	stopSignal = syscall.SIGSTOP
	contSignal = syscall.SIGCONT
)

// flock takes an exclusive lock on f, waiting for it.
func flock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
