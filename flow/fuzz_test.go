package flow

import (
	"testing"
	"time"
)

// FuzzValidateAgreesWithLoad: whatever Validate accepts, LoadRules accepts
// (every limiter constructor takes every valid rule), and Validate never
// panics.
func FuzzValidateAgreesWithLoad(f *testing.F) {
	f.Add(uint8(0), uint8(0), 10.0, int64(time.Second), 0.0, int64(0), 0.0, 0, int64(0), 0, int64(0))
	f.Add(uint8(1), uint8(1), 100.0, int64(time.Minute), 0.0, int64(time.Second), 3.0, 0, int64(0), 5, int64(time.Minute))
	f.Add(uint8(4), uint8(2), 5e8, int64(10), 0.0, int64(0), 0.0, 10, int64(0), 0, int64(0))
	f.Add(uint8(5), uint8(0), 1e6, int64(time.Hour), 0.0, int64(0), 0.0, 0, int64(time.Second), 0, int64(0))
	f.Fuzz(func(t *testing.T, algo, level uint8, limit float64, window int64, burst float64, warmup int64,
		cold float64, buckets int, maxWait int64, maxKeys int, idle int64) {
		r := Rule{ID: "x", Resource: "r", Algorithm: Algorithm(algo % (uint8(numAlgorithms) + 1)), Level: Level(level % uint8(NumLevels+1)),
			Limit: limit, Window: time.Duration(window), Burst: burst, Warmup: time.Duration(warmup), ColdFactor: cold,
			Buckets: buckets, MaxWait: time.Duration(maxWait), MaxKeys: maxKeys % (1 << 20), IdleTTL: time.Duration(idle)}
		if r.Algorithm == AlgoSlidingLog && r.Limit > 4096 {
			t.Skip("large logs cost memory, not coverage")
		}
		if err := r.Validate(); err != nil {
			return
		}
		e := NewEngine()
		if err := e.LoadRules([]Rule{r}); err != nil {
			t.Fatalf("valid rule %+v refused by LoadRules: %v", r, err)
		}
	})
}
