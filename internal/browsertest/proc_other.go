//go:build !linux

package browsertest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
