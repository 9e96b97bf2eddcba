package envoyrls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"sync"
	"sync/atomic"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/flowgate/flowgate/flow"
)

// Service answers ShouldRateLimit with the Config it holds. Create it with
// NewService, give it a Config with Load (a Watcher does that for a path).
type Service struct {
	rlspb.UnimplementedRateLimitServiceServer

	cf  options
	cfg atomic.Pointer[Config]
	eng *flow.Engine // decides descriptors with an algorithm and no lease
	// leased are the engines of leased descriptors, one per Lease, over a
	// leasing token server each; replaced whole by Load (under mu).
	leased atomic.Pointer[map[Lease]*flow.Engine]
	mu     sync.Mutex // serialises Load
	stat   *stats
}

var _ rlspb.RateLimitServiceServer = (*Service)(nil)

// NewService returns a service with no Config: until Load succeeds it
// answers every call with codes.Unavailable.
func NewService(opts ...Option) *Service {
	cf := defaultOptions()
	for _, o := range opts {
		if o != nil {
			o(&cf)
		}
	}
	s := &Service{cf: cf, stat: newStats(cf.maxVals)}
	s.eng = s.newEngine(cf.ts)
	s.leased.Store(&map[Lease]*flow.Engine{})
	return s
}

// newEngine returns an engine deciding its cluster rules with ts (none:
// locally).
func (s *Service) newEngine(ts flow.TokenServer) *flow.Engine {
	engOpts := []flow.Option{flow.WithClock(s.cf.clk)}
	if ts != nil {
		engOpts = append(engOpts, flow.WithTokenServer(ts))
	}
	if s.cf.log != nil {
		engOpts = append(engOpts, flow.WithLogger(s.cf.log))
	}
	return flow.NewEngine(engOpts...)
}

// Load makes c the configuration in force. The rules of its algorithm
// descriptors reach the engine first; if the engine refuses them nothing
// changes.
func (s *Service) Load(c *Config) error {
	if c == nil {
		return errors.New("envoyrls: nil config")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	byLease := c.algoRules(s.cf.ts != nil, s.leasing())
	engines := maps.Clone(*s.leased.Load())
	for ls := range byLease {
		if ls == (Lease{}) || engines[ls] != nil {
			continue
		}
		ts, err := s.cf.leasing(ls)
		if err != nil {
			return fmt.Errorf("envoyrls: leasing token server for %+v: %w", ls, err)
		}
		engines[ls] = s.newEngine(ts)
	}
	// The rules were validated when the configuration was parsed; an
	// engine that refuses them anyway leaves the others as loaded.
	if err := s.eng.LoadRules(byLease[Lease{}]); err != nil {
		return err
	}
	for ls, eng := range engines {
		if err := eng.LoadRules(byLease[ls]); err != nil {
			return err
		}
	}
	s.leased.Store(&engines)
	s.cfg.Store(c)
	return nil
}

// leasing reports whether lease settings take effect: a token server to
// lease from and a way to build a leasing one.
func (s *Service) leasing() bool { return s.cf.ts != nil && s.cf.leasing != nil }

// engine is the engine deciding l, an algorithm descriptor.
func (s *Service) engine(l *limit) *flow.Engine {
	if ls := l.algo.lease; ls != nil && s.leasing() {
		if e := (*s.leased.Load())[*ls]; e != nil {
			return e
		}
	}
	return s.eng
}

// Config returns the configuration in force (nil before the first Load).
func (s *Service) Config() *Config { return s.cfg.Load() }

// ShouldRateLimit implements rlspb.RateLimitServiceServer. Each descriptor
// is decided on its own: every limit counts its hits whatever the others
// answer, and the overall code is OVER_LIMIT when any descriptor (outside
// shadow and quota mode) is, or when every quota-mode descriptor is.
func (s *Service) ShouldRateLimit(ctx context.Context, req *rlspb.RateLimitRequest) (*rlspb.RateLimitResponse, error) {
	if req.GetDomain() == "" {
		return nil, status.Error(codes.InvalidArgument, "domain: empty")
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "descriptors: empty")
	}
	cfg := s.cfg.Load()
	if cfg == nil {
		return nil, status.Error(codes.Unavailable, "no rate limit configuration loaded")
	}
	c := s.newCall(cfg, req)
	if err := c.decide(ctx); err != nil {
		s.stat.errors.Add(1)
		return nil, err
	}
	return c.response(), nil
}

// call is one request on its way through the service.
type call struct {
	s       *Service
	req     *rlspb.RateLimitRequest
	now     int64 // Unix seconds: windows and resets are computed from it
	matches []match
	unlim   []bool
	out     []*rlspb.RateLimitResponse_DescriptorStatus
}

// newCall matches every descriptor, then applies unlimited and replaces:
// a limit named in another matched limit's replaces is dropped.
func (s *Service) newCall(cfg *Config, req *rlspb.RateLimitRequest) *call {
	ds := req.GetDescriptors()
	c := &call{s: s, req: req, now: s.cf.clk.Now().Unix(), matches: make([]match, len(ds)),
		unlim: make([]bool, len(ds)), out: make([]*rlspb.RateLimitResponse_DescriptorStatus, len(ds))}
	var replaced map[string]bool
	for i, d := range ds {
		m := cfg.match(req.GetDomain(), d)
		if m.limit != nil {
			for _, r := range m.limit.replaces {
				if replaced == nil {
					replaced = map[string]bool{}
				}
				replaced[r] = true
			}
			if m.limit.unlimited {
				c.unlim[i], m.limit = true, nil
			}
		}
		c.matches[i] = m
	}
	for i := range c.matches {
		if l := c.matches[i].limit; l != nil && l.name != "" && replaced[l.name] {
			c.matches[i].limit = nil
		}
	}
	return c
}

// maxHits bounds one descriptor's hits: Redis counters are signed 64-bit
// integers, and a sum past them must not wrap to a small count.
const maxHits = 1 << 53

// hits is what descriptor i adds: its own hits_addend when set (0 only
// reads), else the request's, where 0 means 1.
func (c *call) hits(i int) uint64 {
	if h := c.req.GetDescriptors()[i].GetHitsAddend(); h != nil {
		return h.GetValue()
	}
	return uint64(max(1, c.req.GetHitsAddend()))
}

// decide counts the fixed-window descriptors in one Store call, then
// decides the algorithm descriptors, filling c.out.
func (c *call) decide(ctx context.Context) error {
	var incrs []Incr
	var at []int
	for i, m := range c.matches {
		if m.limit == nil || m.limit.algo != nil {
			continue
		}
		if m.limit.unitLength == 0 {
			return status.Errorf(codes.InvalidArgument, "descriptors[%d].limit: unit %v is not a rate-limit unit", i, m.limit.unit)
		}
		if c.hits(i) > maxHits {
			return status.Errorf(codes.InvalidArgument, "descriptors[%d]: hits_addend %d is over %d", i, c.hits(i), uint64(maxHits))
		}
		key := appendCounterKey(nil, c.s.cf.prefix, c.counterDomain(), c.req.GetDescriptors()[i], m.share, c.now-c.now%m.limit.unitLength)
		incrs = append(incrs, Incr{Key: string(key), Hits: c.hits(i), Now: c.now, TTL: m.limit.unitLength})
		at = append(at, i)
	}
	if len(incrs) > 0 {
		if err := c.s.cf.store.Incr(ctx, incrs); err != nil {
			c.s.logWarn("envoyrls: counting failed", slog.String("err", err.Error()))
			return status.Errorf(codes.Unavailable, "rate limit store: %v", err)
		}
	}
	for j, i := range at {
		c.out[i] = c.fixed(i, c.matches[i].limit, incrs[j].Count, c.hits(i))
	}
	for i, m := range c.matches {
		if m.limit != nil && m.limit.algo != nil {
			st, err := c.algorithm(i, m)
			if err != nil {
				return err
			}
			c.out[i] = st
		}
	}
	return nil
}

// counterDomain is the domain as the counter keys name it: in a hash tag
// with WithDomainHashTag, so that all of a domain's counters share one
// Redis Cluster slot.
func (c *call) counterDomain() string {
	if c.s.cf.hashTag {
		return "{" + c.req.GetDomain() + "}"
	}
	return c.req.GetDomain()
}

// fixed is the status of fixed-window descriptor i whose counter reads
// count after this request's hits.
func (c *call) fixed(i int, l *limit, count, hits uint64) *rlspb.RateLimitResponse_DescriptorStatus {
	st := &rlspb.RateLimitResponse_DescriptorStatus{
		Code: rlspb.RateLimitResponse_OK, CurrentLimit: l.current,
		DurationUntilReset: &durationpb.Duration{Seconds: l.unitLength - c.now%l.unitLength},
	}
	if count > uint64(l.perUnit) {
		st.Code = rlspb.RateLimitResponse_OVER_LIMIT
	} else {
		st.LimitRemaining = l.perUnit - uint32(count)
	}
	c.record(i, l, st.Code, hits)
	if st.Code == rlspb.RateLimitResponse_OVER_LIMIT && l.shadow {
		st.Code = rlspb.RateLimitResponse_OK
	}
	return st
}

// response assembles the answer from c.out.
func (c *call) response() *rlspb.RateLimitResponse {
	resp := &rlspb.RateLimitResponse{OverallCode: rlspb.RateLimitResponse_OK, Statuses: c.out}
	over, quota, quotaOver := 0, 0, 0
	for i, st := range c.out {
		switch {
		case c.unlim[i]:
			c.out[i] = &rlspb.RateLimitResponse_DescriptorStatus{Code: rlspb.RateLimitResponse_OK, LimitRemaining: math.MaxUint32}
			continue
		case st == nil:
			c.out[i] = &rlspb.RateLimitResponse_DescriptorStatus{Code: rlspb.RateLimitResponse_OK}
			continue
		}
		isOver := st.Code == rlspb.RateLimitResponse_OVER_LIMIT
		if c.matches[i].limit.quota {
			quota++
			if isOver {
				quotaOver++
			}
		} else if isOver {
			over++
		}
	}
	if over > 0 || (quota > 0 && quota == quotaOver) {
		resp.OverallCode = rlspb.RateLimitResponse_OVER_LIMIT
	}
	if c.s.cf.headers != nil {
		resp.ResponseHeadersToAdd = c.headers()
	}
	c.s.stat.requests.Add(1)
	return resp
}

// descriptors is the request's descriptors, for the algorithm path.
func (c *call) descriptor(i int) *rlv3.RateLimitDescriptor { return c.req.GetDescriptors()[i] }
