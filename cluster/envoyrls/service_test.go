package envoyrls

import (
	"context"
	"math"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	"testing"
	"time"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const serviceYAML = `
domain: web
descriptors:
  - key: client
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: path
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: shady
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: open
    rate_limit: {unlimited: true}
  - key: plan
    value: gold
    rate_limit: {unit: minute, requests_per_unit: 5, name: gold, replaces: [{name: basic}]}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 2, name: basic}
  - key: q1
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: q2
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: month
    rate_limit: {unit: month, requests_per_unit: 1}
`

func TestFixedWindowCountsEveryHit(t *testing.T) {
	h := newHarness(t, serviceYAML)
	h.clk.Advance(20 * time.Second)
	want := []brief{{ok, 3, 2}, {ok, 3, 1}, {ok, 3, 0}, {over, 3, 0}, {over, 3, 0}}
	for i, w := range want {
		r := h.ask(t, "web", 0, desc("client", "a"))
		if got := briefOf(r.Statuses[0]); got != w || r.OverallCode != w.code {
			t.Fatalf("call %d: got %+v overall %v, want %+v", i, got, r.OverallCode, w)
		}
		if got := r.Statuses[0].DurationUntilReset.AsDuration(); got != 40*time.Second {
			t.Fatalf("call %d: duration_until_reset %v, want 40s (the minute ends at :00)", i, got)
		}
	}
	// Refused hits counted: a read (hits 0) sees 5 > 3.
	if got := briefOf(h.ask(t, "web", 0, withHits(desc("client", "a"), 0)).Statuses[0]); got != (brief{over, 3, 0}) {
		t.Errorf("read after refusals: got %+v, want over", got)
	}
	// Another value has its own counter.
	if got := briefOf(h.ask(t, "web", 0, desc("client", "b")).Statuses[0]); got != (brief{ok, 3, 2}) {
		t.Errorf("other value: got %+v", got)
	}
	// The next minute starts at the clock's minute boundary.
	h.clk.Advance(40 * time.Second)
	if got := briefOf(h.ask(t, "web", 0, desc("client", "a")).Statuses[0]); got != (brief{ok, 3, 2}) {
		t.Errorf("next window: got %+v, want a fresh count", got)
	}
}

func TestHitsAddend(t *testing.T) {
	h := newHarness(t, serviceYAML)
	// The request's hits_addend applies to every descriptor without its own.
	r := h.ask(t, "web", 2, desc("client", "a"), withHits(desc("client", "b"), 3), withHits(desc("client", "c"), 0))
	got := []brief{briefOf(r.Statuses[0]), briefOf(r.Statuses[1]), briefOf(r.Statuses[2])}
	want := []brief{{ok, 3, 1}, {ok, 3, 0}, {ok, 3, 3}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("descriptor %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if r := h.ask(t, "web", 4, desc("client", "d")); briefOf(r.Statuses[0]) != (brief{over, 3, 0}) {
		t.Errorf("hits 4 on a limit of 3: got %+v, want over", briefOf(r.Statuses[0]))
	}
}

func TestDescriptorsDecidedIndependently(t *testing.T) {
	h := newHarness(t, serviceYAML)
	h.ask(t, "web", 2, desc("path", "/x"))
	// path is now over; client still counts this request.
	r := h.ask(t, "web", 0, desc("path", "/x"), desc("client", "a"))
	if r.OverallCode != over || briefOf(r.Statuses[0]) != (brief{over, 2, 0}) || briefOf(r.Statuses[1]) != (brief{ok, 3, 2}) {
		t.Fatalf("got %v %+v %+v", r.OverallCode, briefOf(r.Statuses[0]), briefOf(r.Statuses[1]))
	}
	if got := briefOf(h.ask(t, "web", 0, desc("client", "a")).Statuses[0]); got != (brief{ok, 3, 1}) {
		t.Errorf("client after a request refused elsewhere: got %+v, want its hit counted", got)
	}
}

func TestShadowUnlimitedReplacesUnmatched(t *testing.T) {
	h := newHarness(t, serviceYAML)
	h.ask(t, "web", 0, desc("shady", "x"))
	r := h.ask(t, "web", 0, desc("shady", "x"), desc("open", "y"), desc("nothing", "z"))
	if r.OverallCode != ok {
		t.Errorf("overall %v, want OK (shadow)", r.OverallCode)
	}
	if got := briefOf(r.Statuses[0]); got != (brief{ok, 1, 0}) {
		t.Errorf("shadow: got %+v, want OK with its limit and nothing left", got)
	}
	if st := r.Statuses[1]; st.Code != ok || st.LimitRemaining != math.MaxUint32 || st.CurrentLimit != nil {
		t.Errorf("unlimited: got %+v", st)
	}
	if st := r.Statuses[2]; st.Code != ok || st.LimitRemaining != 0 || st.CurrentLimit != nil || st.DurationUntilReset != nil {
		t.Errorf("unmatched: got %+v", st)
	}
	if s := h.svc.Stats().Limits["web.shady"]; s.Shadow != 1 || s.Over != 1 || s.Within != 1 {
		t.Errorf("shadow stats %+v, want 1 within, 1 over in shadow", s)
	}
	// gold replaces basic in the same request; basic alone applies.
	r = h.ask(t, "web", 3, desc("plan", "gold"), desc("user", "u"))
	if briefOf(r.Statuses[0]) != (brief{ok, 5, 2}) || r.Statuses[1].CurrentLimit != nil || r.OverallCode != ok {
		t.Errorf("replaces: got %+v %+v", briefOf(r.Statuses[0]), r.Statuses[1])
	}
	if r := h.ask(t, "web", 3, desc("user", "u")); r.OverallCode != over {
		t.Errorf("basic alone: got %v, want OVER_LIMIT", r.OverallCode)
	}
}

func TestQuotaMode(t *testing.T) {
	h := newHarness(t, serviceYAML)
	h.ask(t, "web", 0, desc("q1", "a"))
	if r := h.ask(t, "web", 0, desc("q1", "a"), desc("q2", "a")); r.OverallCode != ok || r.Statuses[0].Code != over {
		t.Errorf("one quota over: got %v / %v, want OK overall, the descriptor over", r.OverallCode, r.Statuses[0].Code)
	}
	if r := h.ask(t, "web", 0, desc("q1", "a"), desc("q2", "a")); r.OverallCode != over {
		t.Errorf("every quota over: got %v, want OVER_LIMIT", r.OverallCode)
	}
}

func TestResponseHeaders(t *testing.T) {
	h := newHarness(t, serviceYAML, WithResponseHeaders(HeaderNames{}))
	h.clk.Advance(50 * time.Second)
	r := h.ask(t, "web", 0, desc("client", "a"), desc("path", "/p"), desc("open", "o"))
	want := map[string]string{"RateLimit-Limit": "2", "RateLimit-Remaining": "1", "RateLimit-Reset": "1"}
	if len(r.ResponseHeadersToAdd) != 3 {
		t.Fatalf("headers %v, want 3", r.ResponseHeadersToAdd)
	}
	for _, hv := range r.ResponseHeadersToAdd {
		if want[hv.Key] != hv.Value {
			t.Errorf("%s: %s, want %s", hv.Key, hv.Value, want[hv.Key])
		}
	}
	if r := h.ask(t, "web", 0, desc("open", "o")); len(r.ResponseHeadersToAdd) != 0 {
		t.Errorf("no limited descriptor: got headers %v", r.ResponseHeadersToAdd)
	}
	if r := newHarness(t, serviceYAML).ask(t, "web", 0, desc("client", "a")); len(r.ResponseHeadersToAdd) != 0 {
		t.Errorf("headers off by default: got %v", r.ResponseHeadersToAdd)
	}
}

func TestLongUnitsAlignOnTheEpoch(t *testing.T) {
	h := newHarness(t, serviceYAML)
	r := h.ask(t, "web", 0, desc("month", "m"))
	now := t0.Unix()
	if got, want := r.Statuses[0].DurationUntilReset.GetSeconds(), 30*86400-now%(30*86400); got != want {
		t.Errorf("month reset in %ds, want %ds (30-day windows since 1970)", got, want)
	}
}

func TestRequestErrors(t *testing.T) {
	h := newHarness(t, serviceYAML)
	for _, tc := range []struct {
		req  *rlspb.RateLimitRequest
		code codes.Code
	}{
		{&rlspb.RateLimitRequest{Descriptors: nil, Domain: "web"}, codes.InvalidArgument},
		{&rlspb.RateLimitRequest{Descriptors: nil}, codes.InvalidArgument},
	} {
		_, err := h.client.ShouldRateLimit(context.Background(), tc.req)
		if status.Code(err) != tc.code {
			t.Errorf("%v: got %v, want %v", tc.req, err, tc.code)
		}
	}
	huge := &rlspb.RateLimitRequest{Domain: "web", Descriptors: []*rlv3.RateLimitDescriptor{withHits(desc("client", "a"), 1<<63)}}
	if _, err := h.client.ShouldRateLimit(context.Background(), huge); status.Code(err) != codes.InvalidArgument {
		t.Errorf("hits_addend 2^63: got %v, want InvalidArgument", err)
	}
	empty := newHarness(t, "")
	_, err := empty.client.ShouldRateLimit(context.Background(), &rlspb.RateLimitRequest{Domain: "web", Descriptors: nil})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("got %v", err)
	}
	_, err = empty.client.ShouldRateLimit(context.Background(), &rlspb.RateLimitRequest{Domain: "web", Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("no config: got %v, want Unavailable", err)
	}
	if r := h.ask(t, "other", 0, desc("client", "a")); r.OverallCode != ok || r.Statuses[0].CurrentLimit != nil {
		t.Errorf("unknown domain: got %+v, want OK without a limit", r)
	}
}
