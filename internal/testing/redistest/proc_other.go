//go:build unix && !linux

package redistest

import "syscall"

// sysProcAttr has no parent-death signal outside Linux; t.Cleanup alone stops
// the server, so a test binary killed by -timeout can leave one behind.
func sysProcAttr() *syscall.SysProcAttr { return nil }

const (
	stopSignal = syscall.SIGSTOP
	contSignal = syscall.SIGCONT
)
