package envoyrls

import (
	"context"
	"sync"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// TestLocalStoreConcurrent: concurrent hits on one counter all count.
func TestLocalStoreConcurrent(t *testing.T) {
	s := NewLocalStore()
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				in := []Incr{{Key: "k", Hits: 1, Now: 100, TTL: 60}}
				if err := s.Incr(context.Background(), in); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	in := []Incr{{Key: "k", Hits: 0, Now: 100, TTL: 60}}
	s.Incr(context.Background(), in)
	if in[0].Count != workers*each {
		t.Errorf("count %d, want %d", in[0].Count, workers*each)
	}
}

// TestLocalStoreForgetsEndedWindows: counters go once their window ends.
func TestLocalStoreForgetsEndedWindows(t *testing.T) {
	s := NewLocalStore()
	for i := range 1000 {
		in := []Incr{{Key: "k" + itoa(int64(i)) + "_60", Hits: 1, Now: 100, TTL: 60}}
		s.Incr(context.Background(), in)
	}
	if s.Len() != 1000 {
		t.Fatalf("len %d, want 1000", s.Len())
	}
	// One call per shard in the next window sweeps them all.
	for i := range 5000 {
		s.Incr(context.Background(), []Incr{{Key: "n" + itoa(int64(i)) + "_120", Hits: 1, Now: 120, TTL: 60}})
	}
	if got := s.Len(); got != 5000 {
		t.Errorf("len %d, want the 5000 counters of the current window only", got)
	}
}

func BenchmarkShouldRateLimit(b *testing.B) {
	svc := NewService()
	cfg, err := Parse(File{Name: "b.yaml", Data: []byte(serviceYAML)})
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.Load(cfg); err != nil {
		b.Fatal(err)
	}
	req := &rlspb.RateLimitRequest{Domain: "web", Descriptors: []*rlv3.RateLimitDescriptor{desc("client", "a"), desc("path", "/x")}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := svc.ShouldRateLimit(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
