package envoyrls

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/flowgate/flowgate/clock"
)

// t0 is a minute boundary: windows of every unit up to the hour start here.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// harness is a Service served on loopback, reached by the generated client
// as Envoy reaches it.
type harness struct {
	svc    *Service
	clk    *clock.Fake
	client rlspb.RateLimitServiceClient
	conn   *grpc.ClientConn
}

func newHarness(t *testing.T, yaml string, opts ...Option) *harness {
	t.Helper()
	clk := clock.NewFake(t0)
	svc := NewService(append([]Option{WithClock(clk)}, opts...)...)
	if yaml != "" {
		if err := svc.Load(mustParse(t, yaml)); err != nil {
			t.Fatal(err)
		}
	}
	srv := NewServer(svc, "")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &harness{svc: svc, clk: clk, client: rlspb.NewRateLimitServiceClient(conn), conn: conn}
}

// ask sends one request; each descriptor is a list of key, value pairs.
func (h *harness) ask(t *testing.T, domain string, hits uint32, ds ...*rlv3.RateLimitDescriptor) *rlspb.RateLimitResponse {
	t.Helper()
	resp, err := h.client.ShouldRateLimit(context.Background(), &rlspb.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Statuses) != len(ds) {
		t.Fatalf("got %d statuses for %d descriptors", len(resp.Statuses), len(ds))
	}
	return resp
}

func withHits(d *rlv3.RateLimitDescriptor, n uint64) *rlv3.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

// brief is what the side-by-side comparison looks at in a status.
type brief struct {
	code      rlspb.RateLimitResponse_Code
	perUnit   uint32
	remaining uint32
}

func briefOf(st *rlspb.RateLimitResponse_DescriptorStatus) brief {
	return brief{st.Code, st.GetCurrentLimit().GetRequestsPerUnit(), st.LimitRemaining}
}

const (
	ok   = rlspb.RateLimitResponse_OK
	over = rlspb.RateLimitResponse_OVER_LIMIT
)

func itoa(v int64) string { return string(strconv.AppendInt(nil, v, 10)) }

// redisStore is a RedisStore over rdb, closed when the test ends.
func redisStore(t *testing.T, rdb redis.UniversalClient, opts ...RedisOption) *RedisStore {
	t.Helper()
	s := NewRedisStore(rdb, opts...)
	t.Cleanup(func() { s.Close() })
	return s
}
