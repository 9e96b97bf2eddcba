package flow

import (
	"errors"
	"testing"
	"time"
)

// hold enters res n times with opts and returns the permits and the first
// refusal (nil when all passed).
func hold(t *testing.T, e *Engine, res string, n int, opts ...EntryOption) ([]Permit, *BlockError) {
	t.Helper()
	var ps []Permit
	for range n {
		p, err := e.Entry(res, opts...)
		if err != nil {
			var be *BlockError
			if !errors.As(err, &be) {
				t.Fatalf("Entry: %v, want a *BlockError", err)
			}
			return ps, be
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func TestPriorityDefaultReserveOnConcurrency(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 10})
	low, be := hold(t, e, "r", 11, WithPriority(PriorityLow))
	if len(low) != 5 || be == nil || be.Reason != ReasonPriority || be.RuleID != "c" || !errors.Is(be, ErrBlocked) {
		t.Fatalf("low: %d admitted, refusal %+v; want 5 then %q", len(low), be, ReasonPriority)
	}
	normal, be := hold(t, e, "r", 11)
	if len(normal) != 5 || be == nil || be.Reason != ReasonConcurrency {
		t.Fatalf("normal after 5 low: %d admitted, refusal %+v; want 5 more then %q", len(normal), be, ReasonConcurrency)
	}
	if _, be := hold(t, e, "r", 1, WithPriority(PriorityCritical)); be == nil || be.Reason != ReasonConcurrency {
		t.Fatalf("critical at the full limit: %+v, want refused for the limit", be)
	}
	for _, p := range append(low, normal...) {
		p.Exit()
	}
}

func TestPriorityCustomReserve(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 10,
		Reserve: &Reserve{Critical: 0.2, High: 0.1, Normal: 0.3}})
	cases := []struct {
		p    Priority
		want int // admitted after the classes before, cumulatively
	}{{PriorityLow, 4}, {PriorityNormal, 7}, {PriorityHigh, 8}, {PriorityCritical, 10}}
	var all []Permit
	for _, c := range cases {
		ps, be := hold(t, e, "r", 20, WithPriority(c.p))
		all = append(all, ps...)
		if len(all) != c.want || be == nil {
			t.Fatalf("%v: %d in flight, want %d", c.p, len(all), c.want)
		}
		if want := ReasonPriority; c.p == PriorityCritical {
			if be.Reason != ReasonConcurrency {
				t.Fatalf("critical refused for %q, want %q", be.Reason, ReasonConcurrency)
			}
		} else if be.Reason != want {
			t.Fatalf("%v refused for %q, want %q", c.p, be.Reason, want)
		}
	}
	for _, p := range all {
		p.Exit()
	}
	if got, _ := hold(t, e, "r", 4, WithPriority(PriorityLow)); len(got) != 4 {
		t.Fatalf("after every Exit low admitted %d, want 4", len(got))
	}
}

func TestPriorityNames(t *testing.T) {
	for _, p := range []Priority{PriorityLow, PriorityNormal, PriorityHigh, PriorityCritical} {
		if got, ok := ParsePriority(p.String()); !ok || got != p {
			t.Errorf("ParsePriority(%q) = %v, %v", p.String(), got, ok)
		}
	}
	if _, ok := ParsePriority("urgent"); ok {
		t.Error(`ParsePriority("urgent") accepted`)
	}
	if o := WithPriority(Priority(9)); Priority(o.n) != PriorityCritical {
		t.Errorf("WithPriority(9) = %v, want critical", Priority(o.n))
	}
}

func TestSystemGuardShedsLowFirst(t *testing.T) {
	e, _ := newTestEngine(t)
	e.SetSystemLimit(4)
	low, be := hold(t, e, "any", 5, WithPriority(PriorityLow))
	if len(low) != 2 || be == nil || be.Level != LevelSystem || be.Reason != ReasonPriority {
		t.Fatalf("low under a guard of 4: %d admitted, %+v; want 2 then shed", len(low), be)
	}
	crit, be := hold(t, e, "any", 5, WithPriority(PriorityCritical))
	if len(crit) != 2 || be == nil || be.Reason != ReasonSystemOverload {
		t.Fatalf("critical: %d admitted, %+v; want 2 then %q", len(crit), be, ReasonSystemOverload)
	}
	for _, p := range append(low, crit...) {
		p.Exit()
	}
}

func TestCPUFactorShedsLowFirst(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "tb", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1e9, Adaptive: true})
	e.SetAdaptiveFactor(0.5)
	const n = 4000
	var low, crit int
	for range n {
		if try(t, e, "r", WithPriority(PriorityLow)) == "" {
			low++
		}
		if try(t, e, "r", WithPriority(PriorityCritical)) == "" {
			crit++
		}
		clk.Advance(time.Millisecond)
	}
	// Binomial(4000, 0.5): 5 standard deviations are ±158.
	if crit != n || low < n/2-160 || low > n/2+160 {
		t.Fatalf("factor 0.5: critical %d/%d, low %d/%d; want all critical and about half the low", crit, n, low, n)
	}
	e.SetAdaptiveFactor(1)
	if got := try(t, e, "r", WithPriority(PriorityLow)); got != "" {
		t.Fatalf("factor 1: low refused by %q", got)
	}
}

func TestReserveValidation(t *testing.T) {
	bad := []Rule{
		{ID: "a", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1, Reserve: &Reserve{Critical: 0.1}},
		{ID: "b", Resource: "r", Algorithm: AlgoConcurrency, Limit: 1, Reserve: &Reserve{Critical: 0.5, Normal: 0.5}},
		{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 1, Reserve: &Reserve{High: -0.1}},
	}
	err := ValidateRules(bad)
	for _, want := range []string{
		`rules[0] (id "a"): reserve: only for concurrency and adaptive_concurrency rules`,
		`rules[1] (id "b"): reserve: critical+high+normal must be < 1`,
		`rules[2] (id "c"): reserve.high: must be in [0, 1), not -0.1`,
	} {
		if err == nil || !containsLine(err.Error(), want) {
			t.Errorf("ValidateRules: %v\nwant a line starting %q", err, want)
		}
	}
}
