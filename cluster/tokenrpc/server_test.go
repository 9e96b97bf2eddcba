package tokenrpc

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
	"github.com/prometheus/client_golang/prometheus"
)

func TestAcquireStatuses(t *testing.T) {
	ts := &stubTS{}
	srv, err := NewServer(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := rule("a", "res"), rule("b", "res")
	cases := []struct {
		name  string
		res   flow.TokenResult
		err   error
		want  tokenpb.Status
		check func(*tokenpb.AcquireResponse) bool
	}{
		{"ok", flow.TokenResult{Allowed: true, Refused: -1, Remaining: 7}, nil, tokenpb.Status_STATUS_OK,
			func(o *tokenpb.AcquireResponse) bool { return o.Remaining == 7 && o.Refused == -1 }},
		{"should wait", flow.TokenResult{Allowed: true, Refused: -1, Wait: 3 * time.Millisecond}, nil, tokenpb.Status_STATUS_SHOULD_WAIT,
			func(o *tokenpb.AcquireResponse) bool { return o.WaitNanos == int64(3*time.Millisecond) }},
		{"blocked", flow.TokenResult{Refused: 1, RetryAfter: time.Second}, nil, tokenpb.Status_STATUS_BLOCKED,
			func(o *tokenpb.AcquireResponse) bool {
				return o.Refused == 1 && o.RefusedRuleId == "b" && o.RetryAfterNanos == int64(time.Second)
			}},
		{"redis down", flow.TokenResult{}, flow.ErrTokenServerUnavailable, tokenpb.Status_STATUS_FAIL,
			func(o *tokenpb.AcquireResponse) bool { return strings.Contains(o.Message, "unavailable") && !o.Partial }},
		{"one shard down", flow.TokenResult{}, fmt.Errorf("%w: %w", flow.ErrTokenServerUnavailable, shardDown{}), tokenpb.Status_STATUS_FAIL,
			func(o *tokenpb.AcquireResponse) bool { return o.Partial }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts.res, ts.err = tc.res, tc.err
			out, err := srv.Acquire(context.Background(), acquireReq("res", r1, r2))
			if err != nil || out.Status != tc.want || !tc.check(out) {
				t.Fatalf("got %v, %v; want status %v", out, err, tc.want)
			}
		})
	}
	if n := srv.st.backendErrors.Load(); n != 2 {
		t.Fatalf("backend errors %d, want 2", n)
	}
}

// shardDown is a backend failure confined to one Redis Cluster node, as
// cluster.NodeError with Partial reports it.
type shardDown struct{}

func (shardDown) Error() string       { return "redis node 127.0.0.1:1 (other nodes answer): EOF" }
func (shardDown) PartialOutage() bool { return true }

func TestResolveRules(t *testing.T) {
	ts := &stubTS{res: flow.TokenResult{Allowed: true, Refused: -1}}
	docA, docB := rule("a", "res"), rule("b", "res")
	local := rule("l", "res")
	local.Cluster = nil
	doc := map[string]*flow.Rule{"a": &docA, "b": &docB, "local": &local}
	srv, err := NewServer(ts, func(id string) (*flow.Rule, bool) { r, ok := doc[id]; return r, ok })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := func(in *tokenpb.AcquireRequest) *tokenpb.AcquireResponse {
		t.Helper()
		out, err := srv.Acquire(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// By id: the document's rules, the same slice every time.
	byID := &tokenpb.AcquireRequest{Resource: "res", Tokens: 1, RuleIds: []string{"a", "b"}}
	if out := call(byID); out.Status != tokenpb.Status_STATUS_OK {
		t.Fatalf("by id: %v", out)
	}
	first := ts.last().Rules
	call(byID)
	if second := ts.last().Rules; &second[0] != &first[0] || second[0] != &docA || second[1] != &docB {
		t.Fatalf("by id: rule sets %p then %p, want the document's rules, interned", first, second)
	}
	// A reload (new pointers) is seen.
	newA := rule("a", "res")
	doc["a"] = &newA
	call(byID)
	if got := ts.last().Rules[0]; got != &newA {
		t.Fatalf("after reload got rule %p, want the new one %p", got, &newA)
	}
	// Inline rules: interned too.
	in := acquireReq("res", docA)
	call(in)
	a := ts.last().Rules
	call(acquireReq("res", docA))
	if b := ts.last().Rules; &a[0] != &b[0] || a[0].Limit != 10 {
		t.Fatalf("inline rules not interned: %p, %p", a, b)
	}
	bad := rule("bad", "res")
	bad.Limit = 0
	other := rule("o", "other")
	for _, tc := range []struct {
		name string
		in   *tokenpb.AcquireRequest
		want tokenpb.Status
		msg  string
	}{
		{"unknown id", &tokenpb.AcquireRequest{Resource: "res", Tokens: 1, RuleIds: []string{"a", "nope"}}, tokenpb.Status_STATUS_NO_RULE_EXISTS, `rule_ids[1] "nope": no such rule`},
		{"not a cluster rule", &tokenpb.AcquireRequest{Resource: "res", Tokens: 1, RuleIds: []string{"local"}}, tokenpb.Status_STATUS_BAD_REQUEST, "not a cluster rule"},
		{"invalid inline rule", acquireReq("res", bad), tokenpb.Status_STATUS_BAD_REQUEST, `rules[0] (id "bad"): limit`},
		{"other resource", acquireReq("res", other), tokenpb.Status_STATUS_BAD_REQUEST, `is for "other"`},
		{"no tokens", &tokenpb.AcquireRequest{Resource: "res", RuleIds: []string{"a"}}, tokenpb.Status_STATUS_BAD_REQUEST, "tokens: 0"},
		{"bad level", &tokenpb.AcquireRequest{Resource: "res", Tokens: 1, Level: 9, RuleIds: []string{"a"}}, tokenpb.Status_STATUS_BAD_REQUEST, "level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out := call(tc.in); out.Status != tc.want || !strings.Contains(out.Message, tc.msg) {
				t.Fatalf("got %v %q, want %v containing %q", out.Status, out.Message, tc.want, tc.msg)
			}
		})
	}
	strict, _ := NewServer(ts, nil, WithInlineRules(false))
	if out, _ := strict.Acquire(ctx, acquireReq("res", docA)); out.Status != tokenpb.Status_STATUS_BAD_REQUEST {
		t.Fatalf("inline rules on a strict server: %v, want BAD_REQUEST", out)
	}
	if out, _ := strict.Acquire(ctx, byID); out.Status != tokenpb.Status_STATUS_NO_RULE_EXISTS {
		t.Fatalf("ids on a server without a document: %v, want NO_RULE_EXISTS", out)
	}
}

func TestMetricsCollector(t *testing.T) {
	ts := &stubTS{res: flow.TokenResult{Allowed: true, Refused: -1}}
	srv, _ := NewServer(ts, nil)
	r := rule("a", "res")
	for range 3 {
		srv.Acquire(context.Background(), acquireReq("res", r))
	}
	srv.Acquire(context.Background(), &tokenpb.AcquireRequest{Resource: "res"})
	reg := prometheus.NewRegistry()
	if err := reg.Register(srv.Collector()); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.Counter != nil:
				got[key] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				got[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		NameServerRequests + ",method=acquire,status=ok":          3,
		NameServerRequests + ",method=acquire,status=bad_request": 1,
		NameServerDuration + ",method=acquire":                    4,
		NameServerBackendErrors:                                   0,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestNewServerNil(t *testing.T) {
	if _, err := NewServer(nil, nil); err == nil || !strings.Contains(err.Error(), "nil token server") {
		t.Fatalf("NewServer(nil): %v", err)
	}
}
