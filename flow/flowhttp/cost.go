package flowhttp

import (
	"net/http"
	"strconv"
	"strings"
)

// WithCost has each request reserve estimate(r) permits at admission
// (flow.WithTokens; a result below 1 counts as 1) and settle its actual
// cost once the handler returned: the cost the handler reported with
// SetCost, else the integer in the response header WithCostHeader names,
// else nothing is settled and the estimate stands. Use it where a limit
// counts a cost known only after the call (LLM tokens, bytes, CPU time):
// see docs/cost.md. The rate-limit headers then count in the cost's unit.
func WithCost(estimate func(*http.Request) int) Option {
	return func(cf *config) { cf.estimate = estimate }
}

// WithCostHeader names a response header whose integer value is the
// request's actual cost, for handlers (or an upstream behind a proxy)
// that report it there rather than with SetCost. Default: none.
func WithCostHeader(name string) Option {
	return func(cf *config) { cf.costHeader = http.CanonicalHeaderKey(name) }
}

// SetCost reports the actual cost of the request being served on w, to be
// settled when the handler returns (see WithCost). w is the writer the
// middleware handed the handler, or one wrapping it (found through
// Unwrap). It reports false when w was not served by the middleware.
func SetCost(w http.ResponseWriter, n int) bool {
	for w != nil {
		if sw, ok := w.(*statusWriter); ok {
			sw.cost, sw.costSet = max(n, 0), true
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
	return false
}

// actualCost is the cost to settle for a request served on sw, and
// whether there is one.
func (cf *config) actualCost(sw *statusWriter) (int, bool) {
	if sw.costSet {
		return sw.cost, true
	}
	if cf.costHeader == "" {
		return 0, false
	}
	v := strings.TrimSpace(sw.Header().Get(cf.costHeader))
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
