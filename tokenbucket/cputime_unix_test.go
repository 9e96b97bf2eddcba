//go:build unix

package tokenbucket

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time used by the whole process so far. On a machine
// whose CPUs are shared, it measures a call's cost better than wall time,
// which also counts the time other processes held the CPU.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
