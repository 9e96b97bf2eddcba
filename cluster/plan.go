package cluster

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/flowgate/flowgate/flow"
)

// plan is what a TokenRequest's rules turn into, computed once per rule
// set, adaptive factor and instance count, and shared by every call: the
// per-rule script parameters, already boxed, so a call copies them.
type plan struct {
	first     *flow.Rule // identity of the rule slice
	n         int
	factor    float64
	instances int

	suffixes []string // ":" + rule id, appended to the key's tag
	params   []any    // per rule: code, then spec(code).nparams values; boxed strings
	paramAt  []int    // where each rule's part of params starts (and ends, last)
	debts    []any    // per rule: its maxDebt in permits (see maxDebtOf), boxed, for settle.lua
	numkeys  any
	conc     []int // indexes of concurrency rules
	nonce    bool  // a rule needs a per-call nonce (sliding_log, concurrency)
	mask     int   // the algorithms used (bit code-1), picks the script
	code1    int   // the first rule's algorithm code (a one-rule plan's script)
	concMask int   // the same for the concurrency rules alone
	leasable bool  // every rule may be served from a lease (see LeaseConfig)
	// bucketsOnly: every rule is a token bucket, whose permits count the
	// same in any lease batch (see leaseTable.absorb).
	bucketsOnly bool
	// most is the largest request every rule can grant (see mostTokens),
	// mostAt the rule with the smallest: a request for more is refused as
	// never before Redis or a lease is asked, so it changes no state.
	most   int64
	mostAt int
	// global holds the boxed keys of a request without Key (the global
	// level), built once; keyed requests build theirs per call.
	global   []any
	prefix   string
	resource string
	level    flow.Level
	tag      string // the level in keys: "global", "user", "ip", or "param:<name>"
	// stripes are the plans of a striped rule's stripes, whose global keys
	// carry each stripe's tag; rr picks the next (see stripe.go).
	stripes []*plan
	rr      atomic.Uint64
}

func (p *plan) matches(req *flow.TokenRequest, instances int) bool {
	return p.first == req.Rules[0] && p.n == len(req.Rules) && p.factor == req.Factor &&
		p.instances == instances && p.resource == req.Resource && p.level == req.Level
}

// newPlan computes each rule's parameters as Redis needs them: limits
// after the threshold and the adaptive factor, times in microseconds. A
// striped global request (see stripe.go) gets one plan per stripe.
func newPlan(prefix string, req *flow.TokenRequest, instances int, concTTL int64) (*plan, error) {
	p, err := newPlanPart(prefix, req, instances, concTTL, stripe{})
	if err != nil || req.Key != "" || len(req.Rules) != 1 || req.Rules[0].Stripes <= 1 {
		return p, err
	}
	n := req.Rules[0].Stripes
	for i, tag := range stripeTags(req.Resource, p.tag, n) {
		sp, err := newPlanPart(prefix, req, instances, concTTL, stripe{i: i, of: n, key: tag})
		if err != nil {
			return nil, err
		}
		p.stripes = append(p.stripes, sp)
	}
	return p, nil
}

func newPlanPart(prefix string, req *flow.TokenRequest, instances int, concTTL int64, st stripe) (*plan, error) {
	p := &plan{first: req.Rules[0], n: len(req.Rules), factor: req.Factor, instances: instances,
		resource: req.Resource, level: req.Level, leasable: true, bucketsOnly: true, prefix: prefix, most: math.MaxInt64}
	p.numkeys = strconv.Itoa(p.n)
	p.tag = p.level.String()
	if p.level == flow.LevelParam {
		// The engine asks for a param rule alone (its values are its own
		// keys); the parameter's name keeps two params' values apart even
		// when their rules have no id.
		p.tag += ":" + req.Rules[0].Param
	}
	var errs []error
	for i, r := range req.Rules {
		code, ok := codeOf(r.Algorithm)
		if !ok {
			errs = append(errs, fmt.Errorf("rules[%d] (id %q): algorithm: %v not supported by the token server", i, r.ID, r.Algorithm))
			continue
		}
		p.suffixes = append(p.suffixes, suffix(i, r))
		limit := st.share(r, effectiveLimit(r, req.Factor, instances))
		vals, err := ruleParams(r, limit, concTTL)
		if err != nil {
			errs = append(errs, fmt.Errorf("rules[%d] (id %q): %w", i, r.ID, err))
			continue
		}
		p.debts = append(p.debts, strconv.FormatFloat(st.maxDebtOf(r, limit), 'g', 17, 64))
		if m := mostTokens(r, limit); m < p.most {
			p.most, p.mostAt = m, i
		}
		p.mask |= 1 << (code - 1)
		if i == 0 {
			p.code1 = code
		}
		p.paramAt = append(p.paramAt, len(p.params))
		p.params = append(p.params, strconv.Itoa(code))
		for _, v := range vals[:spec(code).nparams] {
			p.params = append(p.params, v)
		}
		p.nonce = p.nonce || spec(code).members
		if r.Algorithm == flow.AlgoConcurrency {
			p.concMask = 1 << (code - 1)
			p.conc = append(p.conc, i)
		}
		p.leasable = p.leasable && leasable(r)
		p.bucketsOnly = p.bucketsOnly && r.Algorithm == flow.AlgoTokenBucket
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p.paramAt = append(p.paramAt, len(p.params))
	if req.Key == "" {
		ks := p.keys(st.key)
		p.global = make([]any, len(ks))
		for i, k := range ks {
			p.global[i] = k
		}
	}
	return p, nil
}

// suffix is rule i's part of its key: ":" and its id, or its index when
// it has none.
func suffix(i int, r *flow.Rule) string {
	if r.ID == "" {
		return ":#" + strconv.Itoa(i)
	}
	return ":" + r.ID
}

// keys builds the state key of every rule: prefix{resource|level|key}:id,
// one per user, IP or param value (level "param:<name>").
func (p *plan) keys(key string) []string {
	ks := make([]string, 0, p.n)
	p.eachKey(key, func(_ int, k string) { ks = append(ks, k) })
	return ks
}

// eachKey calls f with every rule's key. All keys share the {hash tag}, so
// Redis Cluster takes them in one call; they are slices of one string, one
// allocation for all.
func (p *plan) eachKey(key string, f func(i int, k string)) {
	lvl := p.tag
	one := len(p.prefix) + len(p.resource) + len(lvl) + len(key) + 4
	size := 0
	for _, s := range p.suffixes {
		size += one + len(s)
	}
	var b strings.Builder
	b.Grow(size)
	for _, s := range p.suffixes {
		b.WriteString(p.prefix)
		b.WriteByte('{')
		b.WriteString(p.resource)
		b.WriteByte('|')
		b.WriteString(lvl)
		b.WriteByte('|')
		b.WriteString(key)
		b.WriteByte('}')
		b.WriteString(s)
	}
	all, at := b.String(), 0
	for i, s := range p.suffixes {
		f(i, all[at:at+one+len(s)])
		at += one + len(s)
	}
}

// effectiveLimit is the rule's cluster-wide limit: per_instance limits
// grow with the live instances, adaptive ones scale by the factor.
func effectiveLimit(r *flow.Rule, factor float64, instances int) float64 {
	l := r.Limit
	if r.Cluster != nil && r.Cluster.Threshold == "per_instance" {
		l *= float64(max(1, instances))
	}
	if r.Adaptive && factor > 0 && factor <= 1 {
		l *= factor
	}
	return l
}

// maxDebtOf is the most a settlement may leave owed at r (flow.Rule.MaxDebt,
// or one effective limit when not set), as stripe st's share of it.
func (st stripe) maxDebtOf(r *flow.Rule, limit float64) float64 {
	if r.MaxDebt <= 0 {
		return limit // limit is already the stripe's share
	}
	return r.MaxDebt / float64(max(1, st.of))
}

// capacity is the whole number of permits a window holds, as flow's local
// limiters count it: at least 1.
func capacity(limit float64) int64 {
	return max(1, int64(math.Floor(limit+1e-9)))
}

// ruleParams returns p1..p7 for one rule (see each .lua file's header);
// only the first spec(code).nparams are sent.
func ruleParams(r *flow.Rule, limit float64, concTTL int64) ([7]string, error) {
	var v [7]string
	win := float64(r.Window.Microseconds())
	if limit <= 0 || math.IsNaN(limit) || math.IsInf(limit, 0) {
		return v, fmt.Errorf("limit: %v cannot be decided by the token server", limit)
	}
	if win <= 0 {
		return v, fmt.Errorf("window: %v is under a microsecond", r.Window)
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 17, 64) }
	i := func(x int64) string { return strconv.FormatInt(x, 10) }
	maxWait := r.MaxWait.Microseconds()
	stable := win / limit
	most := i(mostTokens(r, limit))
	switch r.Algorithm {
	case flow.AlgoTokenBucket:
		v = [7]string{f(stable), f(burstOf(r, limit)), i(maxWait), most, "0", "0", "0"}
	case flow.AlgoWarmUp:
		cold := r.ColdFactor
		if cold <= 1 {
			cold = 3
		}
		period := float64(r.Warmup.Microseconds())
		threshold := 0.5 * period / stable
		maxp := threshold + 2*period/(stable+stable*cold)
		slope, coolDown := 0.0, stable
		if maxp > threshold {
			slope = (stable*cold - stable) / (maxp - threshold)
		}
		if maxp > 0 {
			coolDown = period / maxp
		}
		v = [7]string{f(stable), f(maxp), i(maxWait), f(threshold), f(slope), f(coolDown), most}
	case flow.AlgoLeakyBucket:
		v = [7]string{f(stable), i(maxWait), i(int64(win)), most, "0", "0", "0"}
	case flow.AlgoFixedWindow:
		v = [7]string{i(int64(win)), most, "0", "0", "0", "0", "0"}
	case flow.AlgoSlidingWindow:
		b := int64(max(1, r.Buckets))
		v = [7]string{i(max(1, int64(win)/b)), i(b), f(limit), "0", "0", "0", "0"}
	case flow.AlgoSlidingLog:
		v = [7]string{i(int64(win)), most, "0", "0", "0", "0", "0"}
	case flow.AlgoConcurrency:
		v = [7]string{most, i(concTTL), "0", "0", "0", "0", "0"}
	}
	return v, nil
}

// leasable reports whether a rule's permits may be taken in batches and
// spent locally: windows and the bursty token bucket count permits the same
// whenever they are spent within a lease period; leaky_bucket (spacing),
// warm_up (price depends on when), concurrency (must be released) and any
// queueing rule (MaxWait) are always decided by Redis.
func leasable(r *flow.Rule) bool {
	switch r.Algorithm {
	case flow.AlgoFixedWindow, flow.AlgoSlidingWindow, flow.AlgoSlidingLog, flow.AlgoTokenBucket:
		return r.MaxWait == 0
	}
	return false
}

// concKeys returns the keys of the concurrency rules for key.
func (p *plan) concKeys(key string) []string {
	ks := p.keys(key)
	out := make([]string, 0, len(p.conc))
	for _, i := range p.conc {
		out = append(out, ks[i])
	}
	return out
}
