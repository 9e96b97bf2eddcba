package flow

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestKeyTableConcurrent: 16 goroutines hit 64 users at once through the
// lock-free read path, while a second rule's table of 8 keys churns through
// eviction. Every user admits exactly its limit (one limiter per key, none
// lost or doubled), and the churning table never holds more than MaxKeys.
func TestKeyTableConcurrent(t *testing.T) {
	churn := fw("ip", "r", LevelIP, 1e9, time.Hour)
	churn.MaxKeys = 8
	e, _ := newTestEngine(t, fw("u", "r", LevelUser, 5, time.Hour), churn)
	const workers, users, calls = 16, 64, 400
	var passed [users]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				u := (w*7 + i) % users
				p, err := e.Entry("r", WithUser("user-"+strconv.Itoa(u)), WithIP(ipKey(w*calls+i)))
				if err == nil {
					passed[u].Add(1)
					p.Exit()
				}
				if n := keysOf(e, "ip"); n > 8 {
					t.Errorf("ip table holds %d keys, MaxKeys 8", n)
					return
				}
			}
		}()
	}
	wg.Wait()
	for u := range passed {
		if got := passed[u].Load(); got != 5 {
			t.Fatalf("user %d: %d passed, want exactly 5", u, got)
		}
	}
	if n := keysOf(e, "u"); n != users {
		t.Fatalf("user table holds %d keys, want %d", n, users)
	}
}
