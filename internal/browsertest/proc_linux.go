//go:build linux

package browsertest

import "syscall"

// sysProcAttr has the kernel kill chromium when the test binary dies (a
// -timeout panic skips t.Cleanup), and gives it its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
