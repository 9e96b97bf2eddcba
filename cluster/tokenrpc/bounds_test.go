package tokenrpc

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
	"google.golang.org/protobuf/proto"
)

// Each bound refuses a request one byte (or one rule) over it with
// BAD_REQUEST, names the field and reads the bound from its constant; a
// request at every bound passes. Refused requests reach neither the token
// server nor the namespace counters.
func TestRequestBounds(t *testing.T) {
	ts := &stubTS{res: flow.TokenResult{Allowed: true, Refused: -1}}
	srv, err := NewServer(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if out, _ := srv.Acquire(ctx, requestAtBounds()); out.Status != tokenpb.Status_STATUS_OK {
		t.Fatalf("a request at every bound: %v %s, want OK", out.Status, out.Message)
	}
	seen := len(ts.reqs)
	for _, tc := range []struct {
		want string
		edit func(in *tokenpb.AcquireRequest)
	}{
		{fmt.Sprintf("namespace: %d bytes, at most %d (tokenrpc.MaxNamespaceBytes)", MaxNamespaceBytes+1, MaxNamespaceBytes),
			func(in *tokenpb.AcquireRequest) { in.Namespace += "n" }},
		{fmt.Sprintf("resource: %d bytes, at most %d (tokenrpc.MaxResourceBytes)", MaxResourceBytes+1, MaxResourceBytes),
			func(in *tokenpb.AcquireRequest) { in.Resource += "r" }},
		{fmt.Sprintf("key: %d bytes, at most %d (tokenrpc.MaxKeyBytes)", MaxKeyBytes+1, MaxKeyBytes),
			func(in *tokenpb.AcquireRequest) { in.Key += "k" }},
		{fmt.Sprintf("param: %d bytes, at most %d (tokenrpc.MaxNameBytes)", MaxNameBytes+1, MaxNameBytes),
			func(in *tokenpb.AcquireRequest) { in.Param += "p" }},
		{fmt.Sprintf("rules[3].id: %d bytes, at most %d (tokenrpc.MaxNameBytes)", MaxNameBytes+1, MaxNameBytes),
			func(in *tokenpb.AcquireRequest) { in.Rules[3].Id += "i" }},
		{fmt.Sprintf("rules[0].resource: %d bytes, at most %d (tokenrpc.MaxResourceBytes)", 1<<20, MaxResourceBytes),
			func(in *tokenpb.AcquireRequest) { in.Rules[0].Resource = strings.Repeat("r", 1<<20) }},
		{fmt.Sprintf("rules[1].algorithm: %d bytes", MaxNameBytes+1),
			func(in *tokenpb.AcquireRequest) { in.Rules[1].Algorithm = strings.Repeat("a", MaxNameBytes+1) }},
		{fmt.Sprintf("rules: %d rules in one request, at most %d (tokenrpc.MaxRulesPerRequest)", MaxRulesPerRequest+1, MaxRulesPerRequest),
			func(in *tokenpb.AcquireRequest) { in.Rules = append(in.Rules, in.Rules[0]) }},
		{fmt.Sprintf("rules: 20000 rules in one request, at most %d", MaxRulesPerRequest),
			func(in *tokenpb.AcquireRequest) { in.Rules = nil; in.RuleIds = make([]string, 20000) }},
		{"and 89 more over their bounds", // 16 rules with 6 names each, and the resource: 8 listed
			func(in *tokenpb.AcquireRequest) {
				for _, r := range in.Rules {
					r.Id, r.Resource, r.Param, r.Algorithm, r.Threshold, r.Fallback = r.Id+"i", r.Resource+"r", r.Param+"p", strings.Repeat("a", 200), strings.Repeat("t", 200), strings.Repeat("f", 200)
				}
				in.Resource += "r"
			}},
	} {
		in := requestAtBounds()
		tc.edit(in)
		out, err := srv.Acquire(ctx, in)
		if err != nil || out.Status != tokenpb.Status_STATUS_BAD_REQUEST || !strings.Contains(out.Message, tc.want) {
			t.Errorf("want BAD_REQUEST %q, got %v %v %q", tc.want, err, out.GetStatus(), out.GetMessage())
		}
		rel, _ := srv.Release(ctx, &tokenpb.ReleaseRequest{Request: in, Refund: true})
		if rel.Status != tokenpb.Status_STATUS_BAD_REQUEST || !strings.Contains(rel.Message, tc.want) {
			t.Errorf("release: want BAD_REQUEST %q, got %v %q", tc.want, rel.Status, rel.Message)
		}
	}
	if len(ts.reqs) != seen || len(ts.rels) != 0 {
		t.Errorf("refused requests reached the token server: %d acquires, %d releases", len(ts.reqs)-seen, len(ts.rels))
	}
	if n := len(*srv.guard.counters.Load()); n != 1 {
		t.Errorf("%d namespaces counted, want 1 (refused requests count in none)", n)
	}
}

// requestAtBounds is a param-level request with every name at its bound
// and MaxRulesPerRequest inline rules.
func requestAtBounds() *tokenpb.AcquireRequest {
	res := strings.Repeat("r", MaxResourceBytes)
	r := rule(strings.Repeat("i", MaxNameBytes), res)
	r.Level, r.Param = flow.LevelParam, strings.Repeat("p", MaxNameBytes)
	in := acquireReq(res, r)
	in.RuleIds = nil
	in.Namespace, in.Level, in.Key, in.Param = strings.Repeat("n", MaxNamespaceBytes), tokenpb.Level_LEVEL_PARAM, strings.Repeat("k", MaxKeyBytes), r.Param
	for len(in.Rules) < MaxRulesPerRequest {
		c := proto.Clone(in.Rules[0]).(*tokenpb.Rule)
		c.Id = fmt.Sprintf("%0*d", MaxNameBytes, len(in.Rules))
		in.Rules = append(in.Rules, c)
	}
	return in
}

// The caches keyed by what clients send hold at most their bound, in
// entries and in bytes, however many distinct requests at the bounds
// arrive: interned rule sets (4096 sets, defaultMaxRuleSetBytes), decision
// counts (maxResources resources) and namespace counters (maxNamespaces).
func TestCachesBounded(t *testing.T) {
	ts := &stubTS{res: flow.TokenResult{Allowed: true, Refused: -1}}
	srv, err := NewServer(ts, nil, WithMaxQPS(1<<40))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Past every count bound; the first requests carry the most rules,
	// enough to pass the rule sets' byte budget many times over.
	const distinct, full = maxResources + 1000, 1000
	before := liveHeap()
	for i := range distinct {
		res := fmt.Sprintf("%0*d", MaxResourceBytes, i)
		in := &tokenpb.AcquireRequest{Namespace: fmt.Sprintf("%0*d", MaxNamespaceBytes, i), Resource: res, Tokens: 1}
		n := 1
		if i < full {
			n = MaxRulesPerRequest
		}
		for j := range n {
			r := rule(fmt.Sprintf("%0*d", MaxNameBytes, j), res)
			in.Rules = append(in.Rules, acquireReq(res, r).Rules[0])
		}
		if out, _ := srv.Acquire(ctx, in); out.Status != tokenpb.Status_STATUS_OK {
			t.Fatalf("request %d: %v %s", i, out.Status, out.Message)
		}
		ts.reqs = ts.reqs[:0] // the stub's own record is not the server's
		srv.sets.mu.RLock()
		sets, bytes := len(srv.sets.sets), srv.sets.bytes
		srv.sets.mu.RUnlock()
		if sets > srv.cf.maxRuleSet || bytes > defaultMaxRuleSetBytes {
			t.Fatalf("after %d requests the rule sets hold %d sets, %d bytes; bounds %d, %d", i+1, sets, bytes, srv.cf.maxRuleSet, defaultMaxRuleSetBytes)
		}
	}
	if n := srv.dec.n.Load(); n != maxResources {
		t.Errorf("decision counts for %d resources, want the bound %d", n, maxResources)
	}
	if n := len(*srv.guard.counters.Load()); n != maxNamespaces {
		t.Errorf("%d namespace counters, want the bound %d", n, maxNamespaces)
	}
	// What the caches may hold at their bounds: the rule sets' budget,
	// each decision count's resource and counters, each namespace's
	// counter; the estimate of a set (setBytes) is checked against the
	// heap by the total.
	bound := int64(defaultMaxRuleSetBytes + maxResources*(MaxResourceBytes+256) + maxNamespaces*(MaxNamespaceBytes+256))
	grown := int64(liveHeap()) - int64(before)
	t.Logf("%d distinct requests at the bounds (%d of %d rules): heap %+d KiB (bound %d KiB)", distinct, full, MaxRulesPerRequest, grown>>10, bound>>10)
	if grown > bound {
		t.Errorf("heap grew %d KiB, want < %d KiB", grown>>10, bound>>10)
	}
	runtime.KeepAlive(srv)
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
