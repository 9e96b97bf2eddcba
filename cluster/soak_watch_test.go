package cluster

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// watchSlow dumps every goroutine's stack (at most 8 times) when a call
// has been in flight for over 150ms, into FLOWGATE_SOAK_STACKS; off when
// that is unset. Under load the dumps showed a third to half of the
// process's goroutines runnable and the slow call runnable or waiting on a
// dial its deadline bounds: the machine, not a lock.
func watchSlow(stop *atomic.Bool, inflight []atomic.Int64) {
	dir := os.Getenv("FLOWGATE_SOAK_STACKS")
	if dir == "" {
		return
	}
	n := 0
	buf := make([]byte, 8<<20)
	for !stop.Load() && n < 8 {
		time.Sleep(20 * time.Millisecond)
		now := time.Now().UnixNano()
		for i := range inflight {
			if s := inflight[i].Load(); s != 0 && now-s > int64(150*time.Millisecond) {
				k := runtime.Stack(buf, true)
				_ = os.WriteFile(fmt.Sprintf("%s/stack-%d.txt", dir, n), buf[:k], 0o644)
				n++
				time.Sleep(300 * time.Millisecond)
				break
			}
		}
	}
}
