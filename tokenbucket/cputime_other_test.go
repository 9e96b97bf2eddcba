//go:build !unix

package tokenbucket

import "time"

// cpuTime is not measured here; the CPU-time metrics then read 0.
func cpuTime() time.Duration { return 0 }
