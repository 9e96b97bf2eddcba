//go:build linux

package promtest

import "syscall"

// sysProcAttr makes the kernel SIGKILL prometheus when the test binary dies
// (a -timeout panic skips t.Cleanup).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
