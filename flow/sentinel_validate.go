package flow

import "time"

// validateSentinelWarmUp checks the window of a sentinel_warm_up rule
// (the table of fields, rule_table.go, checks the rest).
// window is the rule's Window, its default filled.
func validateSentinelWarmUp(window time.Duration, bad func(field, format string, args ...any)) {
	if window != time.Second {
		bad("window", "must be 1s for sentinel_warm_up (Sentinel syncs its tokens per second), not %v", window)
	}
}

// validateSentinelHotspot checks the window of a sentinel_hotspot rule
// (the table of fields, rule_table.go, checks the rest).
// window is the rule's Window, its default filled.
func validateSentinelHotspot(window time.Duration, bad func(field, format string, args ...any)) {
	if window <= 0 || window%time.Millisecond != 0 {
		bad("window", "must be a positive whole number of milliseconds for sentinel_hotspot (Sentinel's clock), not %v", window)
	}
}
