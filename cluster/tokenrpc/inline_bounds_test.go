package tokenrpc

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/internal/wire"
	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
)

// TestInlineRulesBoundedAsDocuments (issue 33, B12): inline rules are held
// to the bounds a rules document has, by the same check (flow's
// ValidateRules, which package rules runs on every document): limit 1e300,
// a window of math.MaxInt64 ns and a limit whose one permit takes longer
// than flow.MaxPermitInterval are bad requests naming the field and the
// bound; the token server is never asked.
func TestInlineRulesBoundedAsDocuments(t *testing.T) {
	ts := &stubTS{res: flow.TokenResult{Allowed: true, Refused: -1}}
	srv, err := NewServer(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, field, bound string
		edit               func(*flow.Rule)
	}{
		{"limit 1e300", "limit", "1e15", func(r *flow.Rule) { r.Limit = 1e300 }},
		{"window MaxInt64", "window", "8784h", func(r *flow.Rule) { r.Window = math.MaxInt64 }},
		{"limit 4.9e-324", "limit", "8784h", func(r *flow.Rule) { r.Limit = 4.9e-324 }},
		{"burst 1e300", "burst", "1e15", func(r *flow.Rule) { r.Algorithm, r.Burst = flow.AlgoTokenBucket, 1e300 }},
		{"maxWait MaxInt64", "maxWait", "8784h", func(r *flow.Rule) { r.MaxWait = math.MaxInt64 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rule("a", "res")
			tc.edit(&r)
			in := &tokenpb.AcquireRequest{Resource: "res", Tokens: 1, Rules: []*tokenpb.Rule{wire.FromRule(&r)}}
			out, err := srv.Acquire(context.Background(), in)
			if err != nil || out.Status != tokenpb.Status_STATUS_BAD_REQUEST ||
				!strings.Contains(out.Message, tc.field+": ") || !strings.Contains(out.Message, tc.bound) {
				t.Fatalf("got %v, %v; want a bad request naming %s and %s", out, err, tc.field, tc.bound)
			}
			// The same problem, word for word, as a document's rule gets.
			var re *flow.RuleError
			if !errors.As(flow.ValidateRules([]flow.Rule{r}), &re) || !strings.Contains(out.Message, re.Msg) {
				t.Fatalf("inline: %q; document: %v", out.Message, re)
			}
		})
	}
	if n := len(ts.reqs); n != 0 {
		t.Fatalf("the token server was asked %d times, want never", n)
	}
	// At the bounds, a rule is served.
	r := rule("a", "res")
	r.Limit, r.Window = 1, flow.MaxDuration
	out, err := srv.Acquire(context.Background(), &tokenpb.AcquireRequest{Resource: "res", Tokens: 1, Rules: []*tokenpb.Rule{wire.FromRule(&r)}})
	if err != nil || out.Status != tokenpb.Status_STATUS_OK {
		t.Fatalf("limit 1 per %v: %v, %v; want OK", time.Duration(flow.MaxDuration), out, err)
	}
}
