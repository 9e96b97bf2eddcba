package tokenrpc

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/flowgate/flowgate/cluster/internal/wire"
	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
)

// ruleSets turns a request's rules (inline or by id) into the []*flow.Rule
// the token server sees, interned: the same rules give the same slice and
// pointers on every call, which is what the token server's per-rule-set
// caches key on. Bounded: past max entries, or past maxBytes held (see
// setBytes), it starts over.
type ruleSets struct {
	mu       sync.RWMutex
	sets     map[string]*ruleSet
	max      int
	maxBytes int
	bytes    int       // setBytes of the sets held
	pool     sync.Pool // *[]byte key buffers
}

// defaultMaxRuleSetBytes bounds the bytes the interned rule sets hold
// (setBytes): with the request bounds (MaxRulesPerRequest...) one set
// holds at most about 30 KiB, so this keeps a few hundred of the largest,
// or all 4096 of usual ones.
const defaultMaxRuleSetBytes = 8 << 20

// ruleBytes is what a flow.Rule takes without its strings and maps.
var ruleBytes = int(reflect.TypeFor[flow.Rule]().Size())

// setBytes estimates what keeping set under key holds: the key, each rule
// and its strings, and the map entry. A served document's rules are shared
// with the document, but counted all the same: the estimate is an upper
// bound.
func setBytes(key []byte, set []*flow.Rule) int {
	n := len(key) + 128
	for _, r := range set {
		n += ruleBytes + 8 + len(r.ID) + len(r.Resource) + len(r.Param)
	}
	return n
}

// ruleSet is one interned rule set. When a rule of it has Items (a
// served document's rule named by id), an item value is decided by the
// item's rule, as the client's engine decides it (flow.Rule.ForItem).
// Values whose items have the same limits share one set (the token
// server's plan cache keys on the first rule's pointer, and a rule may
// have 10 000 items); items remembers each value's, built on first use.
type ruleSet struct {
	rules    []*flow.Rule
	hasItems bool
	items    sync.Map // item value -> []*flow.Rule

	mu       sync.Mutex
	byLimits map[string][]*flow.Rule // the item limits of each rule (see forKey) -> set
}

func newRuleSets(max, maxBytes int) *ruleSets {
	return &ruleSets{sets: map[string]*ruleSet{}, max: max, maxBytes: maxBytes}
}

// forKey is the rule set that decides key: the set with key's items in
// place of their rules, or the set itself.
func (s *ruleSet) forKey(key string) []*flow.Rule {
	if !s.hasItems || key == "" {
		return s.rules
	}
	if v, ok := s.items.Load(key); ok {
		return v.([]*flow.Rule)
	}
	var limits []byte // per rule: "-" or the item's limit
	item := false
	for _, r := range s.rules {
		l, ok := r.Items[key]
		if !ok {
			limits = append(limits, '-')
			continue
		}
		item = true
		limits = strconv.AppendUint(append(limits, '+'), math.Float64bits(l), 16)
	}
	if !item {
		return s.rules // not an item value: nothing to keep
	}
	s.mu.Lock()
	set, ok := s.byLimits[string(limits)]
	if !ok {
		set = slices.Clone(s.rules)
		for i, r := range s.rules {
			if it, ok := r.ForItem(key); ok {
				set[i] = &it
			}
		}
		if s.byLimits == nil {
			s.byLimits = map[string][]*flow.Rule{}
		}
		s.byLimits[string(limits)] = set
	}
	s.mu.Unlock()
	s.items.Store(key, set)
	return set
}

// errNoRule marks a rule id the served document does not hold.
var errNoRule = errors.New("no such rule")

// resolve returns the rules of in, for its key (see ruleSet). byID may be
// nil (no document served).
func (rs *ruleSets) resolve(in *tokenpb.AcquireRequest, inline bool, byID func(string) (*flow.Rule, bool)) ([]*flow.Rule, error) {
	bp, _ := rs.pool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer rs.pool.Put(bp)
	var key []byte
	switch {
	case len(in.GetRules()) > 0:
		if !inline {
			return nil, errors.New("rules: inline rules are not accepted by this server; name them by id")
		}
		key = appendRulesKey((*bp)[:0], in.GetRules())
	case len(in.GetRuleIds()) > 0:
		if byID == nil {
			return nil, fmt.Errorf("rule_ids: %w: this server serves no rules document", errNoRule)
		}
		key = append((*bp)[:0], 0) // ids keys start with 0, inline ones with 1
		for _, id := range in.GetRuleIds() {
			key = append(append(key, id...), 0)
		}
	default:
		return nil, nil
	}
	*bp = key
	rs.mu.RLock()
	set, ok := rs.sets[string(key)]
	rs.mu.RUnlock()
	if ok && key[0] == 0 && !current(set.rules, in.GetRuleIds(), byID) {
		ok = false // the document was reloaded: resolve the ids again
	}
	if ok {
		return set.forKey(in.GetKey()), nil
	}
	rules, err := build(in, byID)
	if err != nil {
		return nil, err
	}
	set = &ruleSet{rules: rules}
	for _, r := range rules {
		set.hasItems = set.hasItems || len(r.Items) > 0
	}
	size := setBytes(key, rules)
	rs.mu.Lock()
	if len(rs.sets) >= rs.max || rs.bytes+size > rs.maxBytes {
		clear(rs.sets)
		rs.bytes = 0
	}
	if old, ok := rs.sets[string(key)]; ok { // resolved again after a reload
		rs.bytes -= setBytes(key, old.rules)
	}
	rs.sets[string(key)] = set
	rs.bytes += size
	rs.mu.Unlock()
	return set.forKey(in.GetKey()), nil
}

// current reports whether set still holds the rules the ids name now.
func current(set []*flow.Rule, ids []string, byID func(string) (*flow.Rule, bool)) bool {
	for i, id := range ids {
		if r, ok := byID(id); !ok || r != set[i] {
			return false
		}
	}
	return true
}

func build(in *tokenpb.AcquireRequest, byID func(string) (*flow.Rule, bool)) ([]*flow.Rule, error) {
	var set []*flow.Rule
	var errs []error
	if prs := in.GetRules(); len(prs) > 0 {
		for i, pr := range prs {
			r, err := wire.ToRule(pr)
			if err != nil {
				errs = append(errs, fmt.Errorf("rules[%d] (id %q): %w", i, pr.GetId(), err))
				continue
			}
			set = append(set, &r)
		}
	} else {
		for i, id := range in.GetRuleIds() {
			r, ok := byID(id)
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("rule_ids[%d] %q: %w", i, id, errNoRule))
			case r.Cluster == nil:
				errs = append(errs, fmt.Errorf("rule_ids[%d] %q: not a cluster rule", i, id))
			default:
				set = append(set, r)
			}
		}
	}
	return set, errors.Join(errs...)
}

// appendRulesKey appends a byte string that differs whenever two rule
// lists differ in a field the token server reads.
func appendRulesKey(b []byte, prs []*tokenpb.Rule) []byte {
	b = append(b, 1)
	for _, r := range prs {
		for _, s := range [...]string{r.GetId(), r.GetResource(), r.GetAlgorithm(), r.GetThreshold(), r.GetParam()} {
			b = append(strconv.AppendInt(b, int64(len(s)), 10), ':')
			b = append(b, s...)
		}
		for _, f := range [...]float64{r.GetLimit(), r.GetBurst(), r.GetColdFactor()} {
			b = strconv.AppendUint(append(b, ','), math.Float64bits(f), 16)
		}
		for _, n := range [...]int64{int64(r.GetLevel()), r.GetWindowNanos(), r.GetWarmupNanos(), int64(r.GetBuckets()), r.GetMaxWaitNanos()} {
			b = strconv.AppendInt(append(b, ','), n, 10)
		}
		if r.GetAdaptive() {
			b = append(b, 'a')
		}
		b = append(b, ';')
	}
	return b
}
