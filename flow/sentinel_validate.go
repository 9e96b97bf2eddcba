package flow

import (
	"math"
	"time"
)

// validateSentinelWarmUp checks what only sentinel_warm_up requires.
func (r Rule) validateSentinelWarmUp(bad func(field, format string, args ...any)) {
	if r.Algorithm != AlgoSentinelWarmUp {
		return
	}
	if d := r.WithDefaults(); d.Window != time.Second {
		bad("window", "must be 1s for sentinel_warm_up (Sentinel syncs its tokens per second), not %v", d.Window)
	}
	if r.Cluster != nil {
		bad("cluster", "not supported for sentinel_warm_up (the token server keeps no Sentinel warm-up state; Sentinel's own cluster flow checker has no warm-up either)")
	}
}

// validateSentinelHotspot checks what only sentinel_hotspot requires.
func (r Rule) validateSentinelHotspot(bad func(field, format string, args ...any)) {
	if r.Algorithm != AlgoSentinelHotspot {
		return
	}
	if d := r.WithDefaults(); d.Window <= 0 || d.Window%time.Millisecond != 0 {
		bad("window", "must be a positive whole number of milliseconds for sentinel_hotspot (Sentinel's clock), not %v", d.Window)
	}
	if r.Burst != math.Trunc(r.Burst) {
		bad("burst", "must be a whole number for sentinel_hotspot (Sentinel's burstCount), not %v", r.Burst)
	}
	if r.Cluster != nil {
		bad("cluster", "not supported for sentinel_hotspot (the token server keeps no Sentinel hotspot state)")
	}
}
