package tokenrpc

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/internal/wire"
	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// stubTS is a token server that answers res/err and records requests; with
// gate set, Acquire waits for it to close (after signalling entered).
type stubTS struct {
	mu      sync.Mutex
	reqs    []flow.TokenRequest
	rels    []flow.TokenRequest // Release calls, see Release
	res     flow.TokenResult
	err     error
	gate    chan struct{}
	entered chan struct{}
}

func (s *stubTS) Acquire(ctx context.Context, req flow.TokenRequest) (flow.TokenResult, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	gate, entered := s.gate, s.entered
	s.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done(): // Stop cancels the calls it cuts
			return flow.TokenResult{}, ctx.Err()
		}
	}
	return s.res, s.err
}

// Release records the request with the lease it was given in Key's place
// ("key|lease"), so a test sees both.
func (s *stubTS) Release(_ context.Context, req flow.TokenRequest, res flow.TokenResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	req.Key += "|" + res.Lease
	s.rels = append(s.rels, req)
	return nil
}

func (s *stubTS) Instances() int { return 1 }

func (s *stubTS) last() flow.TokenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs[len(s.reqs)-1]
}

// serve starts srv on a loopback port and returns a connection to it;
// both end with the test.
func serve(t *testing.T, srv *Server) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		srv.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return cc
}

func rule(id, res string) flow.Rule {
	return flow.Rule{ID: id, Resource: res, Algorithm: flow.AlgoFixedWindow, Limit: 10, Window: time.Second,
		Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "deny"}}.WithDefaults()
}

func acquireReq(res string, rules ...flow.Rule) *tokenpb.AcquireRequest {
	in := &tokenpb.AcquireRequest{Resource: res, Tokens: 1}
	for i := range rules {
		in.Rules = append(in.Rules, wire.FromRule(&rules[i]))
		in.RuleIds = append(in.RuleIds, rules[i].ID)
	}
	return in
}
