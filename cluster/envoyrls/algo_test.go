package envoyrls

import (
	"testing"
	"time"
)

const algoYAML = `
domain: api
descriptors:
  - key: fixed
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: sliding
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: sliding_window}
  - key: bucket
    rate_limit: {unit: second, requests_per_unit: 2, algorithm: token_bucket, burst: 4}
  - key: trial
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1, algorithm: sliding_log}
`

// admitted sends n requests for one descriptor and counts the OK answers.
func (h *harness) admitted(t *testing.T, n int, key string) int {
	t.Helper()
	got := 0
	for range n {
		if h.ask(t, "api", 0, desc(key, "v")).Statuses[0].Code == ok {
			got++
		}
	}
	return got
}

func TestSlidingWindowHoldsAcrossTheEdge(t *testing.T) {
	h := newHarness(t, algoYAML)
	h.clk.Advance(50 * time.Second)
	before := map[string]int{"fixed": h.admitted(t, 10, "fixed"), "sliding": h.admitted(t, 10, "sliding")}
	h.clk.Advance(11 * time.Second) // one second past the minute
	after := map[string]int{"fixed": h.admitted(t, 10, "fixed"), "sliding": h.admitted(t, 10, "sliding")}
	if got := before["fixed"] + after["fixed"]; got != 20 {
		t.Errorf("fixed window admitted %d in 11s, want 20 (twice its limit across the edge)", got)
	}
	if before["sliding"] != 10 {
		t.Errorf("sliding window admitted %d of its first 10", before["sliding"])
	}
	// 10 hits 11s ago still weigh on the window: at most what left it.
	t.Logf("sliding window: %d then %d; fixed: %d then %d", before["sliding"], after["sliding"], before["fixed"], after["fixed"])
	if got := before["sliding"] + after["sliding"]; got > 12 {
		t.Errorf("sliding window admitted %d in 11s, want about its limit of 10", got)
	}
}

func TestTokenBucketDescriptor(t *testing.T) {
	h := newHarness(t, algoYAML)
	// Guava's SmoothBursty: the 4 stored permits, plus one call the next
	// one pays for.
	if got := h.admitted(t, 6, "bucket"); got != 5 {
		t.Errorf("burst: admitted %d, want 5", got)
	}
	h.clk.Advance(time.Second)
	r := h.ask(t, "api", 0, desc("bucket", "v"))
	if got := briefOf(r.Statuses[0]); got.code != ok || got.perUnit != 2 {
		t.Errorf("after a second's refill: got %+v, want OK under 2 per second", got)
	}
	r = h.ask(t, "api", 0, desc("bucket", "v"), desc("bucket", "v"))
	if r.Statuses[0].Code != ok || r.Statuses[1].Code != over || r.OverallCode != over {
		t.Errorf("got %v %v overall %v, want the second refused", r.Statuses[0].Code, r.Statuses[1].Code, r.OverallCode)
	}
	if d := r.Statuses[1].DurationUntilReset.AsDuration(); d <= 0 || d > time.Second {
		t.Errorf("refused: duration_until_reset %v, want the wait for a token (0, 1s]", d)
	}
}

func TestAlgorithmShadow(t *testing.T) {
	h := newHarness(t, algoYAML)
	if got := h.admitted(t, 3, "trial"); got != 3 {
		t.Errorf("shadow: %d of 3 answered OK", got)
	}
	if s := h.svc.Stats().Limits["api.trial"]; s.Within != 1 || s.Shadow != 2 {
		t.Errorf("stats %+v, want 1 within and 2 over in shadow", s)
	}
}

// TestReloadKeepsAlgorithmState: reloading a config whose descriptor rule
// is unchanged keeps what its algorithm has counted.
func TestReloadKeepsAlgorithmState(t *testing.T) {
	h := newHarness(t, algoYAML)
	if got := h.admitted(t, 10, "sliding"); got != 10 {
		t.Fatalf("admitted %d of 10", got)
	}
	if err := h.svc.Load(mustParse(t, algoYAML+"  - key: added\n    rate_limit: {unit: second, requests_per_unit: 1}\n")); err != nil {
		t.Fatal(err)
	}
	if got := h.admitted(t, 1, "sliding"); got != 0 {
		t.Errorf("after a reload: admitted %d, want 0 (the window still full)", got)
	}
}
