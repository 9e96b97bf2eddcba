package envoyrls

import (
	"math"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// headers describes the descriptor that limits the request most: the last
// one over its limit (outside quota mode), else the one with the least
// left. None when no descriptor had a limit.
func (c *call) headers() []*corev3.HeaderValue {
	var pick *rlspb.RateLimitResponse_DescriptorStatus
	least := uint32(math.MaxUint32)
	for i, st := range c.out {
		if st.CurrentLimit != nil && st.LimitRemaining < least {
			pick, least = st, st.LimitRemaining
		}
		if st.Code == rlspb.RateLimitResponse_OVER_LIMIT && !c.matches[i].limit.quota {
			pick, least = st, 0
		}
	}
	if pick == nil {
		return nil
	}
	n := c.s.cf.headers
	unit := unitSeconds(pick.CurrentLimit.Unit)
	return []*corev3.HeaderValue{
		{Key: n.Limit, Value: strconv.FormatUint(uint64(pick.CurrentLimit.RequestsPerUnit), 10)},
		{Key: n.Remaining, Value: strconv.FormatUint(uint64(pick.LimitRemaining), 10)},
		{Key: n.Reset, Value: strconv.FormatInt(unit-c.now%max(unit, 1), 10)},
	}
}
