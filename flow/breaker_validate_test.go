package flow

import (
	"strings"
	"testing"
	"time"
)

func TestBreakerValidation(t *testing.T) {
	ok := Rule{ID: "b", Resource: "r", Algorithm: AlgoCircuitBreaker, Strategy: BreakerErrorRatio,
		Threshold: 0.5, OpenFor: time.Second}
	tests := []struct {
		name string
		edit func(r *Rule)
		want []string // every problem, by its text
	}{
		{"valid", func(r *Rule) {}, nil},
		{"valid slow", func(r *Rule) { r.Strategy, r.SlowCall = BreakerSlowRatio, time.Millisecond }, nil},
		{"valid count", func(r *Rule) { r.Strategy, r.Threshold = BreakerErrorCount, 10 }, nil},
		{"limit on a breaker", func(r *Rule) { r.Limit = 5 }, []string{"limit: not for circuit_breaker"}},
		{"burst, maxWait", func(r *Rule) { r.Burst, r.MaxWait = 1, time.Second },
			[]string{"burst: only for token_bucket", "maxWait: not for circuit_breaker"}},
		{"cluster", func(r *Rule) { r.Cluster = &ClusterSpec{} }, []string{"cluster: not for circuit_breaker rules: breakers are per instance"}},
		{"missing", func(r *Rule) { r.Strategy, r.Threshold, r.OpenFor = 0, 0, 0 },
			[]string{"strategy: required", "threshold: required", "openFor: required"}},
		{"ratio above 1", func(r *Rule) { r.Threshold = 1.5 }, []string{"threshold: must be a ratio in (0, 1]"}},
		{"count not whole", func(r *Rule) { r.Strategy, r.Threshold = BreakerErrorCount, 2.5 }, []string{"threshold: must be a whole count"}},
		{"slowCall missing", func(r *Rule) { r.Strategy = BreakerSlowRatio }, []string{"slowCall: required for slow_ratio"}},
		{"slowCall elsewhere", func(r *Rule) { r.SlowCall = time.Second }, []string{"slowCall: only for the slow_ratio strategy"}},
		{"probes", func(r *Rule) { r.Probes = MaxProbes + 1 }, []string{"probes: must be in [1, 1000]"}},
		{"short window", func(r *Rule) { r.Window = time.Millisecond }, []string{"window: must be at least 10ms"}},
		{"tumbling window", func(r *Rule) { r.Buckets = 1 }, nil},
		{"1ms buckets", func(r *Rule) { r.Window, r.Buckets = 60*time.Millisecond, 60 }, nil},
		{"buckets under 1ms", func(r *Rule) { r.Window, r.Buckets = 60*time.Millisecond, 61 },
			[]string{"buckets: at most 60 for a 60ms window (buckets of at least 1ms), not 61"}},
		{"short window, buckets", func(r *Rule) { r.Window, r.Buckets = time.Millisecond, 2 }, []string{"window: must be at least 10ms"}},
		{"buckets out of range", func(r *Rule) { r.Buckets = -1 }, []string{"buckets: must be in [1, 3600]"}},
		{"breaker fields elsewhere", func(r *Rule) { r.Algorithm, r.Limit = AlgoTokenBucket, 1 },
			[]string{"strategy: only for circuit_breaker", "threshold: only for circuit_breaker", "openFor: only for circuit_breaker"}},
	}
	for _, tt := range tests {
		r := ok
		tt.edit(&r)
		err := ValidateRules([]Rule{r})
		if len(tt.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error, want %q", tt.name, tt.want)
			continue
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != len(tt.want) {
			t.Errorf("%s: %d problems, want %d:\n%v", tt.name, len(lines), len(tt.want), err)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), `rules[0] (id "b"): `+w) {
				t.Errorf("%s: %v\nwant a line with %q", tt.name, err, w)
			}
		}
	}
}
