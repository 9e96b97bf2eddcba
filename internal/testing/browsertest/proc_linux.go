//go:build linux

package browsertest

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts chromium in a process group of its own, so that stopping
// it ends its renderer and utility processes too, and has the kernel kill it
// when the test binary dies (a -timeout panic skips t.Cleanup).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills chromium's process group (its pid, see sysProcAttr).
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
