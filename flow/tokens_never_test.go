package flow

import (
	"errors"
	"math"
	"testing"
	"time"
)

// neverRules are one rule of every algorithm that counts permits, limit 5
// per second (in flight for the concurrency caps), on resource "r": what
// issue 33's B1 asked of each.
func neverRules() []Rule {
	base := Rule{ID: "x", Resource: "r", Limit: 5, Window: time.Second}
	var rs []Rule
	for _, a := range []Algorithm{AlgoTokenBucket, AlgoWarmUp, AlgoLeakyBucket, AlgoFixedWindow, AlgoSlidingWindow,
		AlgoSlidingLog, AlgoConcurrency, AlgoSentinelWindow, AlgoSentinelWarmUp, AlgoSentinelHotspot, AlgoAdaptiveConcurrency} {
		r := base
		r.Algorithm = a
		switch a {
		case AlgoWarmUp, AlgoSentinelWarmUp:
			r.Warmup = 10 * time.Second
		case AlgoConcurrency:
			r.Window = 0
		case AlgoAdaptiveConcurrency:
			r.Limit, r.Window, r.InitialLimit = 0, 0, 5
		}
		rs = append(rs, r)
		if a == AlgoLeakyBucket || a == AlgoTokenBucket || a == AlgoFixedWindow {
			r.MaxWait = time.Hour // queueing does not make the impossible possible
			rs = append(rs, r)
		}
	}
	return rs
}

// TestTokensBeyondRuleNever (issue 33, B1): WithTokens(math.MaxInt32) on a
// rule of limit 5 is refused at once as never, on every algorithm, and
// takes nothing: the next call of one token passes, and so do the whole
// limit's tokens on a fresh rule.
func TestTokensBeyondRuleNever(t *testing.T) {
	for _, r := range neverRules() {
		name := r.Algorithm.String()
		if r.MaxWait > 0 {
			name += "/maxWait"
		}
		t.Run(name, func(t *testing.T) {
			e, _ := newTestEngine(t, r)
			for _, n := range []int{6, math.MaxInt32, math.MaxInt} {
				_, err := e.Entry("r", WithTokens(n))
				var be *BlockError
				if !errors.As(err, &be) || !be.Never || be.RetryAfter != Never || be.RuleID != "x" {
					t.Fatalf("WithTokens(%d): got %v, want a never refusal by rule x", n, err)
				}
			}
			p, err := e.Entry("r")
			if err != nil {
				t.Fatalf("one token after the refusals: %v (the refusals took something)", err)
			}
			p.Exit()
		})
	}
}

// TestTokensBelowOneCountAsOne: WithTokens(0) and negative counts ask for
// one token, as WithTokens documents, on every algorithm.
func TestTokensBelowOneCountAsOne(t *testing.T) {
	for _, r := range neverRules() {
		t.Run(r.Algorithm.String(), func(t *testing.T) {
			one, _ := newTestEngine(t, r)
			p, err := one.Entry("r", WithTokens(1))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := p.Quota()
			for _, n := range []int{0, -1, math.MinInt} {
				e, _ := newTestEngine(t, r)
				p, err := e.Entry("r", WithTokens(n))
				if err != nil {
					t.Fatalf("WithTokens(%d): %v, want one token admitted", n, err)
				}
				if got, _ := p.Quota(); got.Remaining != want.Remaining {
					t.Fatalf("WithTokens(%d): remaining %v, want %v as for one token", n, got.Remaining, want.Remaining)
				}
			}
		})
	}
}

// TestTokensWholeLimitPasses: the largest request a rule can grant is not
// refused as never: the limit per window (a token bucket's larger burst).
func TestTokensWholeLimitPasses(t *testing.T) {
	for _, r := range neverRules() {
		t.Run(r.Algorithm.String(), func(t *testing.T) {
			if r.Algorithm == AlgoSentinelWarmUp {
				t.Skip("cold: Sentinel's warm-up admits the whole limit only once warm")
			}
			e, _ := newTestEngine(t, r)
			p, err := e.Entry("r", WithTokens(5))
			if err != nil {
				t.Fatalf("WithTokens(5) of limit 5: %v", err)
			}
			p.Exit()
		})
	}
	r := Rule{ID: "b", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 5, Burst: 8, Window: time.Second}
	e, _ := newTestEngine(t, r)
	if _, err := e.Entry("r", WithTokens(8)); err != nil {
		t.Fatalf("WithTokens(8) of burst 8: %v", err)
	}
	var be *BlockError
	if _, err := e.Entry("r", WithTokens(9)); !errors.As(err, &be) || !be.Never {
		t.Fatalf("WithTokens(9) of burst 8: %v, want never", err)
	}
}
