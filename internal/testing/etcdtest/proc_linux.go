//go:build linux

package etcdtest

import "syscall"

// sysProcAttr kills etcd when the test binary dies, so a crashed test run
// leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
