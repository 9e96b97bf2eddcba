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
	Algorithm  string   `yaml:"algorithm"`   // sliding_window, token_bucket, warm_up, leaky_bucket, sliding_log, fixed_window
	Burst      *float64 `yaml:"burst"`       // token_bucket: stored permits; default requests_per_unit
	Warmup     string   `yaml:"warmup"`      // warm_up: Go duration
	ColdFactor float64  `yaml:"cold_factor"` // warm_up; default 3
	Buckets    int      `yaml:"buckets"`     // sliding_window; default 10
}

func (y *yamlAlgo) hasAlgo() bool {
	return y.Algorithm != "" || y.Burst != nil || y.Warmup != "" || y.ColdFactor != 0 || y.Buckets != 0
}

// algoSpec is a descriptor decided by a flowgate algorithm: the flow rule
// that decides it, one key per distinct descriptor (its entries' values).
type algoSpec struct {
	rule flow.Rule
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
	return &algoSpec{rule: r}
}

// ruleProblem words the engine's verdict on a rule for a YAML author:
// the engine's field names are the JSON document's, so say which ones.
func ruleProblem(err error) string {
	return fmt.Sprintf("algorithm fields refused by the engine (limit = requests_per_unit, window = unit): %v", err)
}
