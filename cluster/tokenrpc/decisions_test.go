package tokenrpc

import (
	"context"
	"testing"

	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
)

// TestSnapshotCountsDecisions: Snapshot holds what the server granted and
// refused per resource (refusals at the rules' level); calls the server
// answered without deciding (bad requests) are not decisions.
func TestSnapshotCountsDecisions(t *testing.T) {
	ts := &stubTS{res: flow.TokenResult{Allowed: true, Refused: -1}}
	srv, _ := NewServer(ts, nil)
	ctx := context.Background()
	r := rule("a", "res")
	for range 3 {
		srv.Acquire(ctx, acquireReq("res", r))
	}
	ts.mu.Lock()
	ts.res = flow.TokenResult{Allowed: false, Refused: 0}
	ts.mu.Unlock()
	srv.Acquire(ctx, acquireReq("res", r))
	u := rule("u", "other")
	u.Level = flow.LevelUser
	in := acquireReq("other", u)
	in.Level, in.Key = tokenpb.Level_LEVEL_USER, "alice"
	if out, _ := srv.Acquire(ctx, in); out.Status != tokenpb.Status_STATUS_BLOCKED {
		t.Fatalf("user-level call: %v %s, want blocked", out.Status, out.Message)
	}
	srv.Acquire(ctx, &tokenpb.AcquireRequest{Resource: "res"}) // no rules: bad request

	snap := srv.Snapshot()
	if len(snap.Resources) != 2 {
		t.Fatalf("Snapshot has %d resources, want 2: %+v", len(snap.Resources), snap.Resources)
	}
	other, res := snap.Resources[0], snap.Resources[1]
	if res.Resource != "res" || res.Passed != 3 || res.Blocked[flow.LevelGlobal] != 1 {
		t.Errorf("res: %+v, want 3 passed and 1 blocked at global", res)
	}
	if other.Resource != "other" || other.Passed != 0 || other.Blocked[flow.LevelUser] != 1 {
		t.Errorf("other: %+v, want 1 blocked at user", other)
	}
}

// BenchmarkRecord is the cost counting adds to each decided acquire (one
// Redis round trip, tens of microseconds).
func BenchmarkRecord(b *testing.B) {
	var d decisions
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d.record("GET /orders", flow.LevelGlobal, true)
		}
	})
}
