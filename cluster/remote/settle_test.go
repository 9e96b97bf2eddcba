package remote

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"google.golang.org/grpc"
)

// TestSettleThroughReplica: a call's actual cost is settled through a
// replica as through the embedded server, in the Exit that releases its
// concurrency permit: a charge and a refund land on Redis's keys of the
// fixed window and the sliding log, and the permit is released.
func TestSettleThroughReplica(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	_, addrs := redisReplicas(t, srv, 1)
	for _, tc := range []struct {
		name string
		ts   func(t *testing.T) flow.TokenServer
	}{
		{"embedded", func(t *testing.T) flow.TokenServer { return newServer(t, srv.Client()) }},
		{"replica", func(t *testing.T) flow.TokenServer { return newRemote(t, addrs, WithTimeout(2*time.Second)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := uniq("settle-" + tc.name)
			user := func(r flow.Rule) flow.Rule { r.Level = flow.LevelUser; return r }
			conc := user(crule("cc", res, flow.AlgoConcurrency, 5, time.Second))
			fwin := user(crule("fw", res, flow.AlgoFixedWindow, 100, time.Hour))
			slog := user(crule("log", res, flow.AlgoSlidingLog, 100, time.Hour))
			e := newEngine(t, tc.ts(t), t0, conc, fwin, slog)
			key := func(id string) string { return "flowgate:{" + res + "|user|alice}:" + id }
			call := func(reserve, actual int) {
				t.Helper()
				p, err := e.Entry(res, flow.WithUser("alice"), flow.WithTokens(reserve))
				if err != nil {
					t.Fatal(err)
				}
				checkKeys(t, rdb, key, int64(reserve), -1, -1)
				p.Exit(flow.WithActualCost(actual))
			}
			call(2, 7) // 5 charged
			checkKeys(t, rdb, key, 0, 7, 7)
			call(5, 1) // 4 given back
			checkKeys(t, rdb, key, 0, 8, 8)
		})
	}
}

// oldReplica is a token service that predates Settle: it admits every
// call and counts its Releases.
type oldReplica struct {
	tokenpb.UnimplementedTokenServiceServer
	releases atomic.Int64
}

func (o *oldReplica) Acquire(context.Context, *tokenpb.AcquireRequest) (*tokenpb.AcquireResponse, error) {
	return &tokenpb.AcquireResponse{Status: tokenpb.Status_STATUS_OK, Refused: -1}, nil
}

func (o *oldReplica) Release(context.Context, *tokenpb.ReleaseRequest) (*tokenpb.ReleaseResponse, error) {
	o.releases.Add(1)
	return &tokenpb.ReleaseResponse{Status: tokenpb.Status_STATUS_OK}, nil
}

// TestSettleOldReplica: a replica without the Settle method answers
// UNIMPLEMENTED; its Release, which would read the settlement as a refund,
// is never called, and the answer does not count against its breaker.
func TestSettleOldReplica(t *testing.T) {
	old := &oldReplica{}
	g := grpc.NewServer()
	tokenpb.RegisterTokenServiceServer(g, old)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Serve(lis) }()
	t.Cleanup(func() { g.Stop(); <-done })
	ts := newRemote(t, []string{lis.Addr().String()}, WithTimeout(2*time.Second), WithBreaker(1, time.Hour))
	r := crule("r", uniq("old"), flow.AlgoFixedWindow, 10, time.Hour)
	req := flow.TokenRequest{Resource: r.Resource, Level: flow.LevelGlobal, Tokens: 1, Rules: []*flow.Rule{&r}, Factor: 1}
	res, err := ts.Acquire(context.Background(), req)
	if err != nil || !res.Allowed {
		t.Fatalf("acquire: %+v, %v", res, err)
	}
	req.Settle, req.Actual = true, 5
	for range 3 {
		err = ts.Release(context.Background(), req, res)
		var re *ReplicaError
		if !errors.As(err, &re) || re.Status != tokenpb.Status_STATUS_BAD_REQUEST {
			t.Fatalf("settle on an old replica: %v, want its BAD_REQUEST answer", err)
		}
	}
	if n := old.releases.Load(); n != 0 || ts.BreakerOpen() {
		t.Fatalf("%d Releases reached the old replica, breaker open %v; want none and closed", n, ts.BreakerOpen())
	}
}
