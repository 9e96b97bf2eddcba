package flowhttp

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

func TestCeilSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		-time.Second: 0, 0: 0, 1: 1, time.Millisecond: 1, time.Second: 1,
		time.Second + 1: 2, 2500 * time.Millisecond: 3, time.Hour: 3600,
	} {
		if got := ceilSeconds(d); got != want {
			t.Errorf("ceilSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestFloorCount(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want int64
	}{{2.9, 2}, {0.5, 0}, {-3, 0}, {math.NaN(), 0}, {math.Inf(1), math.MaxInt64}, {100, 100}} {
		if got := floorCount(tc.in); got != tc.want {
			t.Errorf("floorCount(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestPolicyFormatting(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  float64
		window time.Duration
		want   string
	}{
		{"orders", 100, time.Minute, `"orders";q=100;w=60`},
		{"orders", 72.6, time.Second, `"orders";q=72;w=1`},
		{"half", 5, 500 * time.Millisecond, `"half";q=10;w=1`},
		{"odd", 3, 1500 * time.Millisecond, `"odd";q=4;w=2`},
		{"conc", 8, 0, `"conc";q=8`},
		{`a"b\c`, 1, time.Second, `"a\"b\\c";q=1;w=1`},
		{"é\n", 1, time.Second, `"???";q=1;w=1`},
	} {
		got := string(appendPolicy(nil, makePolicy(tc.name, tc.limit, tc.window)))
		if got != tc.want {
			t.Errorf("policy(%q, %v, %v) = %s, want %s", tc.name, tc.limit, tc.window, got, tc.want)
		}
	}
	if got, want := string(appendRateLimit(nil, "x", 5, -1)), `"x";r=5`; got != want {
		t.Errorf("RateLimit without reset = %s, want %s", got, want)
	}
}

func TestSetBlockedHeaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		be   flow.BlockError
		want map[string]string
	}{
		{"rate", flow.BlockError{Refuser: &flow.Refuser{RuleID: "r", Window: 10 * time.Second}, RetryAfter: 1500 * time.Millisecond, Limit: 10},
			map[string]string{"Retry-After": "2", "RateLimit-Policy": `"r";q=10;w=10`, "RateLimit": `"r";r=0;t=2`,
				"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "2"}},
		{"tiny wait still says 1", flow.BlockError{Refuser: &flow.Refuser{RuleID: "r", Window: time.Second}, RetryAfter: time.Nanosecond, Limit: 1},
			map[string]string{"Retry-After": "1", "RateLimit": `"r";r=0;t=1`}},
		{"unknown wait", flow.BlockError{Refuser: &flow.Refuser{RuleID: "c", Window: time.Second, Reason: flow.ReasonConcurrency}, Limit: 4},
			map[string]string{"Retry-After": "", "RateLimit-Policy": `"c";q=4`, "RateLimit": `"c";r=0`, "X-RateLimit-Reset": ""}},
		{"never", flow.BlockError{Refuser: &flow.Refuser{RuleID: "n", Window: time.Second}, Never: true, RetryAfter: flow.Never, Limit: 1},
			map[string]string{"Retry-After": "", "RateLimit": `"n";r=0`}},
		{"system guard", flow.BlockError{Refuser: &flow.Refuser{Level: flow.LevelSystem, Reason: flow.ReasonSystemOverload}},
			map[string]string{"Retry-After": "", "RateLimit-Policy": "", "RateLimit": "", "X-RateLimit-Limit": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			SetBlockedHeaders(h, &tc.be)
			wantHeaders(t, h, tc.want)
		})
	}
}

func TestQuotaHeadersDoNotShareBackingArrays(t *testing.T) {
	h := http.Header{}
	SetQuotaHeaders(h, flow.Quota{RuleID: "q", Limit: 10, Window: time.Minute, Remaining: 4, Reset: 1500 * time.Millisecond})
	wantHeaders(t, h, map[string]string{"RateLimit-Policy": `"q";q=10;w=60`, "RateLimit": `"q";r=4;t=2`,
		"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "4", "X-RateLimit-Reset": "2"})
	h.Add(HeaderRateLimitPolicy, `"other";q=1`)
	if got := h.Values(HeaderRateLimit); len(got) != 1 || got[0] != `"q";r=4;t=2` {
		t.Errorf("adding a second policy changed RateLimit to %q", got)
	}
	SetQuotaHeaders(h, flow.Quota{RuleID: "none"}) // no limit known: nothing written
	if got := h.Get(HeaderRateLimit); got != `"q";r=4;t=2` {
		t.Errorf("a quota without a limit overwrote RateLimit with %q", got)
	}
}
