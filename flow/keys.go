package flow

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the key inspection methods (errors.Is).
var (
	// ErrNoRule: no rule with that id is in force.
	ErrNoRule = errors.New("flow: no rule with that id")
	// ErrNotKeyed: the rule is not a user or ip rule, so it tracks no keys.
	ErrNotKeyed = errors.New("flow: rule is not keyed (level user or ip)")
)

// Defaults of WithTopKeys.
const (
	DefaultTopKeyCounters = 512
	DefaultTopKeyWindow   = time.Minute
)

// WithTopKeys sizes the summary of refused keys each user or ip rule keeps
// for TopKeys: counters bounds the keys tracked per window (rounded up to a
// multiple of 8; at most 2*counters are held, for the current window and
// the previous one), and a window is how long a summary spans. Defaults:
// DefaultTopKeyCounters, DefaultTopKeyWindow. A rule's summary is created
// at its first refusal of a key, so rules that never refuse cost nothing.
// counters <= 0 turns the recording off.
func WithTopKeys(counters int, window time.Duration) Option {
	return func(cf *config) {
		cf.topKeys, cf.topWindow = max(counters, -1), window
		if counters <= 0 {
			cf.topKeys = -1
		}
	}
}

func (cf *config) topKeySettings() (perShard int, window int64) {
	k := cf.topKeys
	switch {
	case k < 0:
		return 0, 0
	case k == 0:
		k = DefaultTopKeyCounters
	}
	w := cf.topWindow
	if w <= 0 {
		w = DefaultTopKeyWindow
	}
	return (k + topShards - 1) / topShards, int64(w)
}

// recordRefusal counts a refusal of key by cr for TopKeys. It is the only
// cost top keys add to Entry: a hash and one shard lock, on refusals only.
func (e *Engine) recordRefusal(cr *compiledRule, key string, now int64) {
	t := cr.top.Load()
	if t == nil {
		per, window := e.cf.topKeySettings()
		if per == 0 {
			return
		}
		t = newTopKeys(per, window, now)
		if !cr.top.CompareAndSwap(nil, t) {
			t = cr.top.Load()
		}
	}
	t.record(key, now)
}

// RuleTopKeys is the TopKeys report of one user or ip rule.
type RuleTopKeys struct {
	RuleID, Resource string
	Level            Level
	// Span is how much history Keys cover: between one and two windows
	// (WithTopKeys), the current window and the one before.
	Span time.Duration
	Keys []KeyCount // most refused first
}

// TopKeys reports, for every user and ip rule in force, the n keys (users,
// client IPs) it refused most over the last window, from a bounded
// Space-Saving summary (see WithTopKeys): a key refused more than
// 1/counters of all the rule's refusals is always listed, and each count is
// at most its MaxError too high. n < 0 lists every key held.
func (e *Engine) TopKeys(n int) []RuleTopKeys {
	now := e.now()
	_, window := e.cf.topKeySettings()
	var out []RuleTopKeys
	for _, cr := range e.rules.Load().compiled {
		if !cr.keyed {
			continue
		}
		rt := RuleTopKeys{RuleID: cr.rule.ID, Resource: cr.rule.Resource, Level: cr.rule.Level, Keys: []KeyCount{}}
		if t := cr.top.Load(); t != nil {
			s := &t.shards[0]
			s.mu.Lock()
			t.rotate(s, now)
			rt.Span = time.Duration(min(now-s.start+window, now-t.created))
			s.mu.Unlock()
			rt.Keys = t.top(n, now)
		}
		out = append(out, rt)
	}
	return out
}

// KeyState is what a user or ip rule holds for one key now.
type KeyState struct {
	RuleID, Resource string
	Level            Level
	Key              string
	// Tracked is false when the rule holds no limiter for the key (never
	// seen, evicted, idle past IdleTTL, or reset): its next call starts
	// with a full quota.
	Tracked bool
	Limit   float64 // the rule's effective limit
	// Remaining is the permits the key could take now (as a fresh
	// limiter would allow when not tracked); -1 for algorithms that do not
	// count permits left (concurrency, adaptive_concurrency, breakers).
	Remaining float64
	// Refused is the key's count in the TopKeys summary (0 when it is not
	// among the keys the summary holds).
	Refused uint64
}

// InspectKey reports rule ruleID's state for key without changing it. The
// error is ErrNoRule or ErrNotKeyed (errors.Is).
func (e *Engine) InspectKey(ruleID, key string) (KeyState, error) {
	cr, err := e.keyedRule(ruleID)
	if err != nil {
		return KeyState{}, err
	}
	now := e.now()
	ks := KeyState{RuleID: cr.rule.ID, Resource: cr.rule.Resource, Level: cr.rule.Level, Key: key, Limit: cr.limit()}
	ks.Remaining = -1
	if lim := cr.peekKey(key, now); lim != nil {
		ks.Tracked = true
		if r, ok := lim.(remainer); ok {
			ks.Remaining = r.Remaining(now)
		}
	} else if fresh, err := cr.newLimiter(now); err == nil {
		if r, ok := fresh.(remainer); ok {
			ks.Remaining = r.Remaining(now)
		}
	}
	if t := cr.top.Load(); t != nil {
		ks.Refused = t.refusedOf(key, now)
	}
	return ks, nil
}

// ResetKey forgets rule ruleID's state for key, so the key's next call
// starts afresh with a full quota, and drops it from the TopKeys summary.
// It reports whether a limiter was held for the key. Concurrency permits
// the key holds are released into the forgotten limiter (as on eviction,
// see the keyTable doc). The error is ErrNoRule or ErrNotKeyed.
func (e *Engine) ResetKey(ruleID, key string) (bool, error) {
	cr, err := e.keyedRule(ruleID)
	if err != nil {
		return false, err
	}
	if t := cr.top.Load(); t != nil {
		t.forget(key)
	}
	return cr.keys.Forget(key), nil
}

// remainer is a limiter that reports the permits left at now (the rate
// and window algorithms; see limiter).
type remainer interface{ Remaining(now int64) float64 }

func (e *Engine) keyedRule(ruleID string) (*compiledRule, error) {
	for _, cr := range e.rules.Load().compiled {
		if cr.rule.ID != ruleID {
			continue
		}
		if !cr.keyed || cr.keys == nil {
			return nil, fmt.Errorf("%w: %q is level %s", ErrNotKeyed, ruleID, cr.rule.Level)
		}
		return cr, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrNoRule, ruleID)
}
