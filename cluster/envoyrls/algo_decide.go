package envoyrls

import (
	"errors"
	"math"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/flowgate/flowgate/flow"
)

// algoRules are the engine rules of c's algorithm descriptors by their
// lease (the zero Lease: none, or leasing off); with cluster set, each is
// decided by the token server, falling back to a local decision while it
// cannot answer.
func (c *Config) algoRules(cluster, leasing bool) map[Lease][]flow.Rule {
	out := map[Lease][]flow.Rule{}
	var walk func(n *node)
	walk = func(n *node) {
		if n.limit != nil && n.limit.algo != nil {
			r := n.limit.algo.rule
			if cluster {
				r.Cluster = &flow.ClusterSpec{Threshold: "global", Fallback: "local"}
			}
			var ls Lease
			if leasing && n.limit.algo.lease != nil {
				ls = *n.limit.algo.lease
			}
			out[ls] = append(out[ls], r)
		}
		for _, ch := range n.children {
			walk(ch)
		}
	}
	for _, d := range c.domains {
		walk(d)
	}
	return out
}

// algorithm decides descriptor i with the engine: the rule is the
// descriptor's, the key its entries' values (share_threshold patterns
// standing for the values they match), hits the permits asked. A
// descriptor asking 0 hits is answered OK without being counted: a flow
// rule cannot be read without taking from it.
func (c *call) algorithm(i int, m match) (*rlspb.RateLimitResponse_DescriptorStatus, error) {
	l := m.limit
	st := &rlspb.RateLimitResponse_DescriptorStatus{Code: rlspb.RateLimitResponse_OK, CurrentLimit: l.current}
	hits := c.hits(i)
	key := string(appendCounterKey(nil, "", c.req.GetDomain(), c.descriptor(i), m.share, 0))
	if l.algo.settle {
		return c.settle(i, l, key, hits, st)
	}
	if hits == 0 {
		return st, nil
	}
	p, err := c.s.engine(l).Entry(l.path, flow.WithUser(key), flow.WithTokens(int(min(hits, math.MaxInt32))))
	var be *flow.BlockError
	switch {
	case errors.As(err, &be):
		st.Code = rlspb.RateLimitResponse_OVER_LIMIT
		if be.RetryAfter > 0 {
			st.DurationUntilReset = durationpb.New(be.RetryAfter)
		}
	case err != nil:
		return nil, status.Errorf(codes.Unavailable, "descriptor %s: %v", l.path, err)
	default:
		if q, ok := p.Quota(); ok {
			st.LimitRemaining = uint32(max(0, min(math.Floor(q.Remaining), math.MaxUint32)))
			if q.Reset > 0 {
				st.DurationUntilReset = durationpb.New(q.Reset)
			}
		}
		p.Exit()
	}
	c.record(i, l, st.Code, hits)
	if st.Code == rlspb.RateLimitResponse_OVER_LIMIT && l.shadow {
		st.Code = rlspb.RateLimitResponse_OK
	}
	return st, nil
}

// settle decides a settle descriptor: 0 hits check (one permit taken and
// given back: refused while nothing is left or a debt is owed), more
// charge (one permit taken, then the call settled at its hits, the rest a
// debt of at most max_debt) and are answered OK, since Envoy ignores the
// answer to a call made when the stream is done. A charge that finds
// nothing left is refused by the engine and so not added: the descriptor
// is already refusing, and the debt it would have added is what max_debt
// caps (it is counted over in the metrics).
func (c *call) settle(i int, l *limit, key string, hits uint64, st *rlspb.RateLimitResponse_DescriptorStatus) (*rlspb.RateLimitResponse_DescriptorStatus, error) {
	p, err := c.s.engine(l).Entry(l.path, flow.WithUser(key))
	var be *flow.BlockError
	switch {
	case errors.As(err, &be):
		c.record(i, l, rlspb.RateLimitResponse_OVER_LIMIT, max(hits, 1))
		if hits == 0 && !l.shadow {
			st.Code = rlspb.RateLimitResponse_OVER_LIMIT
			if be.RetryAfter > 0 {
				st.DurationUntilReset = durationpb.New(be.RetryAfter)
			}
		}
		return st, nil
	case err != nil:
		return nil, status.Errorf(codes.Unavailable, "descriptor %s: %v", l.path, err)
	}
	if q, ok := p.Quota(); ok && hits == 0 {
		st.LimitRemaining = uint32(max(0, min(math.Floor(q.Remaining)+1, math.MaxUint32)))
	}
	p.Exit(flow.WithActualCost(int(min(hits, math.MaxInt32))))
	c.record(i, l, rlspb.RateLimitResponse_OK, hits)
	return st, nil
}
