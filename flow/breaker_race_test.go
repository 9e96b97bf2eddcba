package flow

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBreakerProbesExactUnderRace: 16 goroutines enter at the moment the
// breaker may go half-open; exactly Probes of them pass, in every round.
// Each round's probes then fail, so the next round starts open again.
func TestBreakerProbesExactUnderRace(t *testing.T) {
	const goroutines, rounds = 16, 200
	for _, probes := range []int{1, 3} {
		c := breakerCases()[0]
		c.rule.Probes = probes
		e, clk := tripped(t, c)
		for round := 0; round < rounds; round++ {
			clk.Advance(c.rule.OpenFor)
			var passed atomic.Int32
			var held sync.Map
			start := make(chan struct{})
			var wg sync.WaitGroup
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					if p, err := e.Entry("dep"); err == nil {
						passed.Add(1)
						held.Store(p, true)
					}
				}()
			}
			close(start)
			wg.Wait()
			if got := int(passed.Load()); got != probes {
				t.Fatalf("probes %d, round %d: %d calls passed half-open, want %d", probes, round, got, probes)
			}
			held.Range(func(k, _ any) bool {
				k.(Permit).Exit(WithError(errDown))
				return true
			})
			if be := refusal(t, e); be == nil || be.RetryAfter != c.rule.OpenFor {
				t.Fatalf("round %d: %+v, want open again for openFor", round, be)
			}
		}
	}
}

// TestBreakerConcurrentOutcomes: outcomes recorded from many goroutines
// are all counted (one CAS per outcome, none lost).
func TestBreakerConcurrentOutcomes(t *testing.T) {
	c := breakerCases()[0]
	c.rule.Threshold = 1 // never opens: every outcome is counted
	c.rule.Window = time.Hour
	e, _ := newTestEngine(t, c.rule)
	const goroutines, each = 8, 2000
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				p, err := e.Entry("dep")
				if err != nil {
					t.Error(err)
					return
				}
				if i%4 == 0 {
					p.Exit(WithError(errDown))
				} else {
					p.Exit()
				}
			}
		}()
	}
	wg.Wait()
	s := e.Snapshot().Breakers[0]
	if s.Completed != goroutines*each || s.Bad != goroutines*each/4 {
		t.Fatalf("window %d bad of %d, want %d of %d", s.Bad, s.Completed, goroutines*each/4, goroutines*each)
	}
}
