package envoyrls

import (
	"fmt"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// yamlAlgo is flowgate's addition inside rate_limit: a descriptor may ask
// for one of our algorithms instead of envoyproxy/ratelimit's fixed
// window. Its rate is still requests_per_unit per unit.
type yamlAlgo struct {
	Algorithm  string      `yaml:"algorithm"`   // sliding_window, token_bucket, warm_up, leaky_bucket, sliding_log, fixed_window
	Burst      *float64    `yaml:"burst"`       // token_bucket: stored permits; default requests_per_unit
	Warmup     string      `yaml:"warmup"`      // warm_up: Go duration
	ColdFactor float64     `yaml:"cold_factor"` // warm_up; default 3
	Buckets    int         `yaml:"buckets"`     // sliding_window; default 10
	Lease      *yamlLease  `yaml:"lease"`       // take permits from Redis in batches
	Settle     *yamlSettle `yaml:"settle"`      // charge response-phase hits after the fact
}

// yamlSettle marks a descriptor whose cost Envoy reports when the stream
// is done (apply_on_stream_done): see the settle field of algoSpec.
type yamlSettle struct {
	MaxDebt *float64 `yaml:"max_debt"` // default requests_per_unit
}

// yamlLease asks for a descriptor's permits to be taken from Redis in
// batches and spent locally (see Lease).
type yamlLease struct {
	Period   string `yaml:"period"`    // Go duration; default 100ms
	MaxBatch int    `yaml:"max_batch"` // default 64
}

func (y *yamlAlgo) hasAlgo() bool {
	return y.Algorithm != "" || y.Burst != nil || y.Warmup != "" || y.ColdFactor != 0 || y.Buckets != 0 || y.Lease != nil || y.Settle != nil
}

// algoSpec is a descriptor decided by a flowgate algorithm: the flow rule
// that decides it, one key per distinct descriptor (its entries' values).
type algoSpec struct {
	rule  flow.Rule
	lease *Lease // nil: every call goes to the token server
	// settle: a call with hits is a charge, answered OK and charged in
	// full, into a debt of at most the rule's MaxDebt; a call with 0 hits
	// is a check, refused while nothing is left or a debt is owed.
	settle bool
}

// Lease is how a descriptor's permits are leased: a batch of at most
// MaxBatch permits taken from Redis in one round trip and spent locally
// for at most Period (the token server's leasing, cluster.LeaseConfig,
// says what that costs in accuracy). Descriptors with equal settings share
// one leasing token server.
type Lease struct {
	Period   time.Duration
	MaxBatch int
}

// leasedAlgorithms are the algorithms the token server serves from a
// lease; the others need Redis at every call (spacing, a price that
// depends on when a permit is taken).
var leasedAlgorithms = map[flow.Algorithm]bool{
	flow.AlgoFixedWindow: true, flow.AlgoSlidingWindow: true, flow.AlgoSlidingLog: true, flow.AlgoTokenBucket: true,
}

// envoyAlgorithms are the algorithms a descriptor may choose: those that
// limit a rate (concurrency needs an Exit Envoy never sends).
var envoyAlgorithms = map[flow.Algorithm]bool{
	flow.AlgoTokenBucket: true, flow.AlgoWarmUp: true, flow.AlgoLeakyBucket: true,
	flow.AlgoFixedWindow: true, flow.AlgoSlidingWindow: true, flow.AlgoSlidingLog: true,
}

// algo validates a rate_limit's algorithm fields; nil when it has none
// (the descriptor is then envoyproxy/ratelimit's fixed window, exactly).
func (p *parser) algo(where string, l *limit, y *yamlAlgo) *algoSpec {
	if !y.hasAlgo() {
		return nil
	}
	if y.Algorithm == "" && y.Lease != nil && !y.hasOtherThanLease() {
		// A leased plain descriptor is decided by our fixed window: the
		// same windows (aligned to the unit), counted by the token server.
		y.Algorithm = "fixed_window"
	}
	if y.Algorithm == "" && y.Settle != nil {
		p.fail(where, "settle: needs an algorithm (a descriptor without one counts every hit, response-phase ones too)")
		return nil
	}
	if y.Algorithm == "" {
		p.fail(where, "burst, warmup, cold_factor, buckets: need algorithm")
		return nil
	}
	a, err := flow.ParseAlgorithm(y.Algorithm)
	if err != nil || !envoyAlgorithms[a] {
		p.fail(where, "algorithm: %q is not one of sliding_window, token_bucket, warm_up, leaky_bucket, sliding_log, fixed_window", y.Algorithm)
		return nil
	}
	r := flow.Rule{
		ID: l.path, Resource: l.path, Level: flow.LevelUser, Algorithm: a,
		Limit: float64(l.perUnit), Window: time.Duration(l.unitLength) * time.Second,
		ColdFactor: y.ColdFactor, Buckets: y.Buckets,
	}
	if y.Burst != nil {
		r.Burst = *y.Burst
	}
	if y.Warmup != "" {
		d, err := time.ParseDuration(y.Warmup)
		if err != nil {
			p.fail(where, "warmup: %q: %v", y.Warmup, err)
			return nil
		}
		r.Warmup = d
	}
	if err := flow.ValidateRules([]flow.Rule{r}); err != nil {
		p.fail(where, "%s", ruleProblem(err))
		return nil
	}
	spec := &algoSpec{rule: r}
	if y.Settle != nil {
		if !p.settle(where+".settle", &spec.rule, y.Settle) {
			return nil
		}
		spec.settle = true
	}
	if y.Lease != nil {
		spec.lease = p.lease(where+".lease", l, a, y.Lease)
		if spec.lease == nil {
			return nil
		}
	}
	return spec
}

// settle validates a rate_limit's settle and sets the rule's MaxDebt.
func (p *parser) settle(where string, r *flow.Rule, y *yamlSettle) bool {
	if !settledAlgorithms[r.Algorithm] {
		p.fail(where, "%v does not settle (token_bucket, warm_up, leaky_bucket, fixed_window, sliding_window do)", r.Algorithm)
		return false
	}
	if y.MaxDebt != nil {
		r.MaxDebt = *y.MaxDebt
	}
	if err := flow.ValidateRules([]flow.Rule{*r}); err != nil {
		p.fail(where, "max_debt: %s", ruleProblem(err))
		return false
	}
	return true
}

// settledAlgorithms are those whose limiter takes a debt (flow's
// WithActualCost).
var settledAlgorithms = map[flow.Algorithm]bool{
	flow.AlgoTokenBucket: true, flow.AlgoWarmUp: true, flow.AlgoLeakyBucket: true,
	flow.AlgoFixedWindow: true, flow.AlgoSlidingWindow: true,
}

func (y *yamlAlgo) hasOtherThanLease() bool {
	z := *y
	z.Lease = nil
	return z.hasAlgo()
}

// lease validates a rate_limit's lease: a period shorter than the unit
// (a batch must not outlive the window it was counted in by much), an
// algorithm the token server leases.
func (p *parser) lease(where string, l *limit, a flow.Algorithm, y *yamlLease) *Lease {
	if !leasedAlgorithms[a] {
		p.fail(where, "%v is never leased (only fixed_window, sliding_window, sliding_log, token_bucket)", a)
		return nil
	}
	out := &Lease{Period: 100 * time.Millisecond, MaxBatch: 64}
	if y.Period != "" {
		d, err := time.ParseDuration(y.Period)
		if err != nil || d <= 0 {
			p.fail(where, "period: %q: want a positive Go duration", y.Period)
			return nil
		}
		out.Period = d
	}
	if unit := time.Duration(l.unitLength) * time.Second; out.Period >= unit {
		p.fail(where, "period: %v is not shorter than the unit (%v)", out.Period, unit)
		return nil
	}
	switch {
	case y.MaxBatch < 0:
		p.fail(where, "max_batch: %d: want >= 1", y.MaxBatch)
		return nil
	case y.MaxBatch > 0:
		out.MaxBatch = y.MaxBatch
	}
	return out
}

// ruleProblem words the engine's verdict on a rule for a YAML author:
// the engine's field names are the JSON document's, so say which ones.
func ruleProblem(err error) string {
	return fmt.Sprintf("algorithm fields refused by the engine (limit = requests_per_unit, window = unit): %v", err)
}
