package tokenrpc

import (
	"context"
	"testing"

	"github.com/flowgate/flowgate/cluster/tokenpb"
)

// TestReleaseCarriesRefund: the refund flag reaches the token server as
// sent, and a release without a lease (what clients before the flag sent
// for a refund) is a refund.
func TestReleaseCarriesRefund(t *testing.T) {
	ts := &stubTS{}
	srv, err := NewServer(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := tokenpb.NewTokenServiceClient(serve(t, srv))
	r := rule("r", "res")
	for i, tc := range []struct {
		lease  string
		refund bool
		want   bool
	}{
		{"L1", false, false}, // Exit: concurrency permits only
		{"L2", true, true},   // a later level refused: everything back
		{"", false, true},    // no lease: only a refund makes sense
	} {
		out, err := c.Release(context.Background(), &tokenpb.ReleaseRequest{Request: acquireReq("res", r), Lease: tc.lease, Refund: tc.refund})
		if err != nil || out.GetStatus() != tokenpb.Status_STATUS_OK {
			t.Fatalf("case %d: %v %v", i, out, err)
		}
		ts.mu.Lock()
		got := ts.rels[len(ts.rels)-1]
		ts.mu.Unlock()
		if got.Refund != tc.want || got.Key != "|"+tc.lease {
			t.Errorf("case %d: token server got Refund %v, lease %q; want %v, %q", i, got.Refund, got.Key[1:], tc.want, tc.lease)
		}
	}
}
