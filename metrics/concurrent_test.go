package metrics

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// Scrapes racing traffic that passes, waits and is blocked: every counter
// series only grows between scrapes, and once traffic stops the three
// results add up to every call made.
func TestCollectDuringTraffic(t *testing.T) {
	clk := clock.NewFake(t0)
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules([]flow.Rule{
		{ID: "q", Resource: "q", Algorithm: flow.AlgoLeakyBucket, Limit: 1000, Window: time.Second, MaxWait: time.Millisecond},
		{ID: "u", Resource: "q", Level: flow.LevelUser, Algorithm: flow.AlgoTokenBucket, Limit: 50, Window: time.Second},
	}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(eng))

	var calls atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			user := flow.WithUser(fmt.Sprint("u", g))
			for i := 0; !stop.Load() && i < 20000; i++ {
				calls.Add(1)
				if p, err := eng.Entry("q", user); err == nil {
					p.Exit()
				}
				if i%64 == 0 {
					clk.Advance(time.Millisecond)
				}
			}
		})
	}
	last := map[string]float64{}
	for range 200 {
		for k, v := range requestCounters(t, reg) {
			if v < last[k] {
				t.Fatalf("%s went down from %v to %v", k, last[k], v)
			}
			last[k] = v
		}
	}
	stop.Store(true)
	wg.Wait()
	// A fresh collector: the racing one may hold a waited call it once saw
	// as passed (see passedGuard), which this sum would count twice.
	fresh := prometheus.NewPedanticRegistry()
	fresh.MustRegister(NewCollector(eng))
	var sum float64
	final := requestCounters(t, fresh)
	for _, v := range final {
		sum += v
	}
	for _, k := range []string{"level=global,resource=q,result=waited,", "level=user,resource=q,result=blocked,"} {
		if final[k] == 0 {
			t.Errorf("%s = 0: the scenario did not exercise it (%v)", k, final)
		}
	}
	if want := float64(calls.Load()); sum != want {
		t.Errorf("passed+waited+blocked = %v, want every call: %v", sum, want)
	}
}

func requestCounters(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != NameRequests {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, lp := range m.GetLabel() {
				key += lp.GetName() + "=" + lp.GetValue() + ","
			}
			out[key] = m.GetCounter().GetValue()
		}
	}
	return out
}
