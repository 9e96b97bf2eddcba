package flowhttp

import (
	"net/http"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/forwarded"
)

// DefaultPriorityHeader is the request header that carries a call's
// priority: "critical", "high", "normal" or "low" (flow.ParsePriority).
const DefaultPriorityHeader = "X-Priority"

// WithPriorityHeader sets the header read for the call's priority (see
// flow.WithPriority). Default DefaultPriorityHeader; "" ignores priorities.
// The header is believed only from a trusted proxy (WithTrustedProxies) or
// with WithTrustPriority(true): a client that could mark itself critical
// would defeat the shedding.
func WithPriorityHeader(name string) Option {
	return func(cf *config) { cf.prioHeader = http.CanonicalHeaderKey(name) }
}

// WithTrustPriority(true) believes the priority header from every peer,
// for services only reachable by callers you control. Default false.
func WithTrustPriority(all bool) Option {
	return func(cf *config) { cf.prioTrustAll = all }
}

// priority is the request's priority when the header is set, believed and
// valid; an unknown value is ignored (normal), not refused.
func (h *handler) priority(r *http.Request) (flow.Priority, bool) {
	if h.cf.prioHeader == "" {
		return flow.PriorityNormal, false
	}
	v := r.Header.Get(h.cf.prioHeader)
	if v == "" || (!h.cf.prioTrustAll && !forwarded.Trusted(h.cf.trusted, forwarded.ParseHostPort(r.RemoteAddr))) {
		return flow.PriorityNormal, false
	}
	return flow.ParsePriority(v)
}
