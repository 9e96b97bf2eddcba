package adaptive

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

func TestInFlightBound(t *testing.T) {
	win := func(completed uint64, span, minRT time.Duration) flow.ResourceStats {
		return flow.ResourceStats{Recent: flow.WindowStats{Completed: completed, Span: span, MinRT: minRT}}
	}
	cases := []struct {
		name string
		rs   []flow.ResourceStats
		want float64
	}{
		{"none", nil, 0},
		{"one", []flow.ResourceStats{win(100, time.Second, 10*time.Millisecond)}, 1},
		// Per resource: a slow resource is not judged by a fast one's RT.
		{"two", []flow.ResourceStats{win(100, time.Second, 10*time.Millisecond), win(2000, 2*time.Second, 50*time.Millisecond)}, 51},
		{"idle resource ignored", []flow.ResourceStats{win(0, time.Second, 0), win(10, time.Second, time.Second)}, 10},
	}
	for _, c := range cases {
		if got := inFlightBound(c.rs); got != c.want {
			t.Errorf("%s: inFlightBound = %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		best float64
		min  int64
		want int64
	}{{0, 1, 2}, {0.7, 1, 2}, {19.6, 1, 20}, {3, 5, 6}} {
		if got := guardLimit(c.best, c.min); got != c.want {
			t.Errorf("guardLimit(%v, %d) = %d, want %d", c.best, c.min, got, c.want)
		}
	}
}
