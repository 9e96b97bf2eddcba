package sentinel

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sapi "github.com/alibaba/sentinel-golang/api"
	cb "github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/config"
	sflow "github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/core/isolation"
	"github.com/alibaba/sentinel-golang/logging"
	"github.com/alibaba/sentinel-golang/util"

	"github.com/flowgate/flowgate/flow"
)

var (
	initOnce sync.Once
	vclk     *vclock
	moves    *transitions
)

// setup starts sentinel-golang once per process on the virtual clock
// (sentinel-golang keeps global state; each scenario uses its own
// resource). The clock starts on a whole second of Unix time an hour
// ahead of the real one: sentinel-golang builds some statistics (the
// inbound node) at package init on the real clock, and its buckets refuse
// a time behind theirs. Each trace is placed relative to whole minutes, so
// the results do not depend on the start.
func setup(t *testing.T) *vclock {
	t.Helper()
	initOnce.Do(func() {
		vclk = newVClock(time.Now().Add(time.Hour).Truncate(time.Second))
		util.SetClock(vclk)
		conf := config.NewDefaultConfig()
		conf.Sentinel.Log.Dir = os.TempDir()
		conf.Sentinel.Log.Logger = logging.NewConsoleLogger()
		logging.ResetGlobalLoggerLevel(logging.ErrorLevel)
		if err := sapi.InitWithConfig(conf); err != nil {
			t.Fatal(err)
		}
		moves = newTransitions(vclk)
		cb.RegisterStateChangeListeners(moves)
	})
	return vclk
}

type scenario struct {
	kind, name string
	rule       func(res string) any // sentinel-golang rules for res
	src        func(res string) any // their JSON form for the importer, when rule's does not marshal
	load       func(res string) error
	trace      []call
	offset     time.Duration // where in a second the trace starts
}

func qps(res string) any {
	return []*sflow.Rule{{Resource: res, TokenCalculateStrategy: sflow.Direct, ControlBehavior: sflow.Reject,
		Threshold: 10, StatIntervalInMs: 1000}}
}

func throttle(res string) any { return throttleAt(10)(res) }

func throttleAt(qps float64) func(string) any {
	return func(res string) any {
		return []*sflow.Rule{{Resource: res, TokenCalculateStrategy: sflow.Direct, ControlBehavior: sflow.Throttling,
			Threshold: qps, MaxQueueingTimeMs: 500, StatIntervalInMs: 1000}}
	}
}

// warm is sentinel-golang's warm-up at 100/s over 10s, cold factor 3;
// queue > 0 adds Throttling with that queue.
func warm(queue uint32) func(string) any {
	return func(res string) any {
		r := &sflow.Rule{Resource: res, TokenCalculateStrategy: sflow.WarmUp, ControlBehavior: sflow.Reject,
			Threshold: 100, WarmUpPeriodSec: 10, WarmUpColdFactor: 3, StatIntervalInMs: 1000}
		if queue > 0 {
			r.ControlBehavior, r.MaxQueueingTimeMs = sflow.Throttling, queue
		}
		return []*sflow.Rule{r}
	}
}

// hot is a sentinel-golang hotspot QPS rule on paramKey: 10 per
// durationInSec, "vip" 30, with burst and, for Throttling, queue.
func hot(behavior hotspot.ControlBehavior, burst, dur, queue int64) func(string) any {
	return func(res string) any {
		return []*hotspot.Rule{{Resource: res, MetricType: hotspot.QPS, ControlBehavior: behavior, ParamKey: paramKey,
			Threshold: 10, BurstCount: burst, DurationInSec: dur, MaxQueueingTimeMs: queue,
			SpecificItems: map[interface{}]int64{"vip": 30}}}
	}
}

// hotJSON is a hotspot rule as sentinel-golang's datasources store it
// (specificItems as an object: map[interface{}] does not marshal).
func hotJSON(rule func(string) any) func(string) any {
	return func(res string) any {
		var out []map[string]any
		for _, r := range rule(res).([]*hotspot.Rule) {
			items := map[string]int64{}
			for k, v := range r.SpecificItems {
				items[fmt.Sprint(k)] = v
			}
			out = append(out, map[string]any{"resource": r.Resource, "metricType": r.MetricType, "controlBehavior": r.ControlBehavior,
				"paramKey": r.ParamKey, "threshold": r.Threshold, "burstCount": r.BurstCount, "durationInSec": r.DurationInSec,
				"maxQueueingTimeMs": r.MaxQueueingTimeMs, "specificItems": items})
		}
		return out
	}
}

func iso(res string) any {
	return []*isolation.Rule{{Resource: res, MetricType: isolation.Concurrency, Threshold: 5}}
}

func breaker(strategy cb.Strategy, threshold float64) func(string) any {
	return func(res string) any {
		return []*cb.Rule{{Resource: res, Strategy: strategy, RetryTimeoutMs: 3000, MinRequestAmount: 10,
			StatIntervalMs: 5000, StatSlidingWindowBucketCount: 10, MaxAllowedRtMs: 200, Threshold: threshold, ProbeNum: 1}}
	}
}

// defaultBreaker is a sentinel-golang breaker at its default bucket count
// (StatSlidingWindowBucketCount left 0: one bucket, a tumbling window).
func defaultBreaker(strategy cb.Strategy, threshold float64, maxRt uint64) func(res string) any {
	return func(res string) any {
		return []*cb.Rule{{Resource: res, Strategy: strategy, RetryTimeoutMs: 3000, MinRequestAmount: 10,
			StatIntervalMs: 5000, MaxAllowedRtMs: maxRt, Threshold: threshold}}
	}
}

// javaDegrade is a Java DegradeRule as the dashboard exports it, for the
// importer; the scenario's sentinel-golang rule says the same in its terms.
func javaDegrade(grade int, count, slowRatio float64) func(res string) any {
	return func(res string) any {
		return []map[string]any{{"resource": res, "limitApp": "default", "grade": grade, "count": count,
			"slowRatioThreshold": slowRatio, "timeWindow": 3, "minRequestAmount": 10, "statIntervalMs": 5000}}
	}
}

// breakerScenarios are the breakers at sentinel-golang's default bucket
// count, and Java DegradeRules imported from their Java form against the
// sentinel-golang rule that decides as Java does: Java's exception count
// opens above count (sentinel-golang's at count+1), its ratio above the
// threshold (sentinel-golang's at it or within 1e-8, so 2e-8 above), its
// slow ratio of 1 when every call is slow (as sentinel-golang's).
func breakerScenarios(add func(kind, name string, rule func(string) any, src func(string) any, trace []call)) {
	d, hold := 30*time.Second, 50*time.Millisecond
	span := [2]time.Duration{5 * time.Second, 10 * time.Second}
	all := func(int) bool { return true }
	twoOfFive := func(i int) bool { return i%5 < 2 } // a ratio of exactly 0.4
	nineOf20 := func(i int) bool { return i%20 < 9 } // 0.45
	add("breaker error ratio (0.4), default buckets", "20/s for 30s, errors in 5-10s",
		defaultBreaker(cb.ErrorRatio, 0.4, 0), nil, share(20, d, hold, span, 0, all))
	add("breaker error ratio (0.4), default buckets", "20/s for 30s, 2 of 5 calls failing in 5-10s",
		defaultBreaker(cb.ErrorRatio, 0.4, 0), nil, share(20, d, hold, span, 0, twoOfFive))
	add("breaker slow ratio (0.5, 50ms), default buckets", "20/s for 30s, slow calls (80ms) in 5-10s",
		defaultBreaker(cb.SlowRequestRatio, 0.5, 50), nil, share(20, d, hold, span, 80*time.Millisecond, all))
	add("breaker slow ratio (0.5, 50ms), default buckets", "20/s for 30s, 9 of 20 calls slow in 5-10s",
		defaultBreaker(cb.SlowRequestRatio, 0.5, 50), nil, share(20, d, 20*time.Millisecond, span, 80*time.Millisecond, nineOf20))
	add("breaker error count (20), default buckets", "20/s for 30s, errors in 5-10s",
		defaultBreaker(cb.ErrorCount, 20, 0), nil, share(20, d, hold, span, 0, all))
	bare := func(res string) any { // every default: one bucket, no minimum of calls
		return []*cb.Rule{{Resource: res, Strategy: cb.ErrorCount, RetryTimeoutMs: 3000, StatIntervalMs: 1000, Threshold: 3}}
	}
	add("breaker error count (3), every default", "20/s for 30s, 2 of 5 calls failing in 5-10s",
		bare, nil, share(20, d, hold, span, 0, twoOfFive))
	add("Java exception count (count 20: opens above 20)", "20/s for 30s, errors in 5-10s",
		defaultBreaker(cb.ErrorCount, 21, 0), javaDegrade(2, 20, 1), share(20, d, hold, span, 0, all))
	add("Java exception count (count 20: opens above 20)", "20/s for 30s, 2 of 5 calls failing in 5-10s",
		defaultBreaker(cb.ErrorCount, 21, 0), javaDegrade(2, 20, 1), share(20, d, hold, span, 0, twoOfFive))
	add("Java exception ratio (0.4: opens above 0.4)", "20/s for 30s, 2 of 5 calls failing in 5-10s",
		defaultBreaker(cb.ErrorRatio, 0.4+2e-8, 0), javaDegrade(1, 0.4, 1), share(20, d, hold, span, 0, twoOfFive))
	add("Java exception ratio (0.4: opens above 0.4)", "20/s for 30s, 9 of 20 calls failing in 5-10s",
		defaultBreaker(cb.ErrorRatio, 0.4+2e-8, 0), javaDegrade(1, 0.4, 1), share(20, d, hold, span, 0, nineOf20))
	// From 4.95s, so that every call ending in the 5-10s bucket is slow.
	add("Java slow ratio (1, 50ms: opens when all are slow)", "20/s for 30s, slow calls (80ms) from 4.95s to 10s",
		defaultBreaker(cb.SlowRequestRatio, 1, 50), javaDegrade(0, 50, 1),
		share(20, d, hold, [2]time.Duration{4950 * time.Millisecond, span[1]}, 80*time.Millisecond, all))
}

func scenarios() []scenario {
	loadCB := func(r any) error { _, err := cb.LoadRules(r.([]*cb.Rule)); return err }
	spans := [][2]time.Duration{{5 * time.Second, 8 * time.Second}, {15 * time.Second, 16 * time.Second}, {25 * time.Second, 30 * time.Second}}
	loadFlow := func(r any) error { _, err := sflow.LoadRules(r.([]*sflow.Rule)); return err }
	loadIso := func(r any) error { _, err := isolation.LoadRules(r.([]*isolation.Rule)); return err }
	var out []scenario
	add := func(kind, name string, rule func(string) any, load func(any) error, trace []call, offset time.Duration) {
		out = append(out, scenario{kind: kind, name: name, rule: rule,
			load: func(res string) error { return load(rule(res)) }, trace: trace, offset: offset})
	}
	loadHot := func(r any) error { _, err := hotspot.LoadRules(r.([]*hotspot.Rule)); return err }
	addHot := func(kind, name string, rule func(string) any, trace []call, offset time.Duration) {
		add(kind, name, rule, loadHot, trace, offset)
		out[len(out)-1].src = hotJSON(rule)
	}
	add("flow QPS reject (10/s)", "steady 2x overload", qps, loadFlow, steady(20, 30*time.Second, 0), 137*time.Millisecond)
	add("flow QPS reject (10/s)", "bursts of 30 after 3s idle", qps, loadFlow, bursts(30, 10, 3*time.Second, 0), 250*time.Millisecond)
	add("flow QPS reject (10/s)", "bursts of 15 on bucket edges", qps, loadFlow,
		append(bursts(15, 10, time.Second, 499*time.Millisecond), bursts(15, 10, time.Second, 500*time.Millisecond)...), 0)
	add("flow QPS reject (10/s)", "Poisson 15/s", qps, loadFlow, poisson(7, 15, 60*time.Second, 0), 0)
	add("flow throttling (10/s, queue 500ms)", "Poisson 15/s", throttle, loadFlow, poisson(8, 15, 60*time.Second, 0), 0)
	add("flow throttling (10/s, queue 500ms)", "steady 2x overload", throttle, loadFlow, steady(20, 30*time.Second, 0), 3*time.Millisecond)
	// 7/s: a spacing of 142857142.86ns, which Sentinel rounds up.
	add("flow throttling (7/s, queue 500ms)", "Poisson 10/s", throttleAt(7), loadFlow, poisson(12, 10, 60*time.Second, 0), 0)
	idle := append(steady(200, 20*time.Second, 0), steady(200, 20*time.Second, 50*time.Second)...)
	add("flow warm-up (100/s, 10s, cold factor 3)", "from cold, steady 2x overload", warm(0), loadFlow, steady(200, 30*time.Second, 0), 37*time.Millisecond)
	add("flow warm-up (100/s, 10s, cold factor 3)", "2x overload, 30s idle (cools), 2x again", warm(0), loadFlow, idle, 611*time.Millisecond)
	add("flow warm-up (100/s, 10s, cold factor 3)", "Poisson 150/s", warm(0), loadFlow, poisson(10, 150, 60*time.Second, 0), 0)
	add("flow warm-up + throttling (100/s, 10s, queue 500ms)", "from cold, steady 2x overload", warm(500), loadFlow, steady(200, 30*time.Second, 0), 3*time.Millisecond)
	add("flow warm-up + throttling (100/s, 10s, queue 500ms)", "Poisson 150/s", warm(500), loadFlow, poisson(11, 150, 60*time.Second, 0), 0)
	addHot("hotspot QPS reject (10/s, vip 30)", "Poisson 40/s, hot, vip and cold values", hot(hotspot.Reject, 0, 1, 0), hotCold(13, 40, 60*time.Second), 0)
	addHot("hotspot QPS reject (10/s, vip 30, burst 5)", "Poisson 40/s, hot, vip and cold values", hot(hotspot.Reject, 5, 1, 0), hotCold(14, 40, 60*time.Second), 0)
	addHot("hotspot QPS reject (10 per 2s, vip 30)", "Poisson 40/s, hot, vip and cold values", hot(hotspot.Reject, 0, 2, 0), hotCold(15, 40, 60*time.Second), 0)
	addHot("hotspot throttling (10/s, vip 30, queue 500ms)", "Poisson 40/s, hot, vip and cold values", hot(hotspot.Throttling, 0, 1, 500), hotCold(16, 40, 60*time.Second), 0)
	addHot("hotspot throttling (10/s, vip 30, no queue)", "Poisson 40/s, hot, vip and cold values", hot(hotspot.Throttling, 0, 1, 0), hotCold(17, 40, 60*time.Second), 0)
	hotConc := func(res string) any {
		r := hot(hotspot.Reject, 0, 1, 0)(res).([]*hotspot.Rule)
		r[0].MetricType, r[0].Threshold, r[0].SpecificItems = hotspot.Concurrency, 3, map[interface{}]int64{"vip": 6}
		return r
	}
	held := hotCold(18, 40, 60*time.Second)
	for i := range held {
		held[i].hold = time.Duration(50+i%7*40) * time.Millisecond
	}
	addHot("hotspot concurrency (3 in flight, vip 6)", "Poisson 40/s, hold 50-290ms, hot, vip and cold values", hotConc, held, 0)
	add("isolation (5 in flight)", "Poisson 30/s, hold 200ms mean", iso, loadIso, poisson(9, 30, 60*time.Second, 200*time.Millisecond), 0)
	add("circuit breaker error ratio (0.5)", "20/s, error bursts", breaker(cb.ErrorRatio, 0.5), loadCB,
		faulty(20, 40*time.Second, 50*time.Millisecond, spans, true, 0), 0)
	add("circuit breaker error ratio (0.5)", "20/s, every other call failing", breaker(cb.ErrorRatio, 0.5), loadCB,
		halfFailing(20, 40*time.Second, 50*time.Millisecond, spans), 0)
	add("circuit breaker error count (20)", "20/s, error bursts", breaker(cb.ErrorCount, 20), loadCB,
		faulty(20, 40*time.Second, 50*time.Millisecond, spans, true, 0), 0)
	add("circuit breaker slow ratio (0.5, 200ms)", "20/s, latency spikes to 300ms", breaker(cb.SlowRequestRatio, 0.5), loadCB,
		faulty(20, 40*time.Second, 50*time.Millisecond, spans, false, 300*time.Millisecond), 0)
	breakerScenarios(func(kind, name string, rule func(string) any, src func(string) any, trace []call) {
		add(kind, name, rule, loadCB, trace, 0)
		out[len(out)-1].src = src
	})
	return out
}

// kinds counts the transitions of each kind, in the order first seen.
func kinds(ts []transition) string {
	var order []string
	n := map[string]int{}
	for _, t := range ts {
		k := t.from + "→" + t.to
		if n[k] == 0 {
			order = append(order, k)
		}
		n[k]++
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

// sortTrace orders a trace by arrival (bursts appended out of order).
func sortTrace(tr []call) {
	for i := 1; i < len(tr); i++ {
		for j := i; j > 0 && tr[j].at < tr[j-1].at; j-- {
			tr[j], tr[j-1] = tr[j-1], tr[j]
		}
	}
}

// TestSideBySide runs every scenario on sentinel-golang and on flowgate
// with the imported rule, and requires the same decision on every call
// (the import says each mapping is exact; both run on one virtual clock).
// -v prints the table docs/sentinel.md shows.
func TestSideBySide(t *testing.T) {
	clk := setup(t)
	var table, trans strings.Builder
	trans.WriteString("| breaker (sentinel-golang) | trace | transitions sentinel-golang | transitions flowgate | same state change at the same instant | changes seen |\n|---|---|---|---|---|---|\n")
	table.WriteString("| rule (sentinel-golang) | flowgate (imported) | trace | calls | same decision | admitted/s sentinel-golang | admitted/s flowgate | same wait (queued) |\n|---|---|---|---|---|---|---|---|\n")
	for i, sc := range scenarios() {
		res := fmt.Sprintf("r%d", i)
		if err := sc.load(res); err != nil {
			t.Fatalf("%s: sentinel-golang refuses the rule: %v", sc.kind, err)
		}
		eng := flow.NewEngine(flow.WithClock(fgClock{clk}), flow.WithBreakerListener(moves.flowgateListener))
		src := sc.rule
		if sc.src != nil {
			src = sc.src
		}
		rep, err := importOne(eng, src(res))
		if err != nil {
			t.Fatalf("%s: %v", sc.kind, err)
		}
		// Start the trace at the scenario's offset within a whole minute
		// of Unix time: a breaker's one 5s bucket then begins where the
		// trace's 5s marks fall, whatever the start.
		now := clk.Now()
		clk.advanceTo(now.Truncate(time.Minute).Add(time.Minute).Add(sc.offset))
		sortTrace(sc.trace)
		o := run(clk, eng, res, sc.trace)
		algo := strings.Join(rep.IDs, ",")
		if r := eng.Rules(); len(r) > 0 {
			algo = r[0].Algorithm.String()
		}
		waits := "no queue"
		if o.Queued > 0 {
			waits = fmt.Sprintf("%.2f%% (%d)", 100*float64(o.SameWait)/float64(o.BothOK), o.Queued)
		}
		fmt.Fprintf(&table, "| %s | `%s` (%s) | %s | %d | %.2f%% | %.2f | %.2f | %s |\n", sc.kind, algo, rep.Verdict, sc.name,
			o.Calls, 100*o.share(), float64(o.SentinelOK)/o.Seconds, float64(o.FlowgateOK)/o.Seconds, waits)
		if s, f, same := moves.compare(res); len(s) > 0 || len(f) > 0 {
			fmt.Fprintf(&trans, "| %s | %s | %d | %d | %d | %s |\n", sc.kind, sc.name, len(s), len(f), same, kinds(s))
			if same != len(s) || same != len(f) {
				t.Errorf("%s, %s: breaker transitions differ:\nsentinel-golang %v\nflowgate        %v", sc.kind, sc.name, s, f)
			}
		}
		if o.SameWait != o.BothOK {
			t.Errorf("%s, %s: the same wait on %d of %d calls both admitted, want all", sc.kind, sc.name, o.SameWait, o.BothOK)
		}
		if o.Same != o.Calls {
			t.Errorf("%s, %s: same decision on %d of %d calls (%.2f%%), want all", sc.kind, sc.name, o.Same, o.Calls, 100*o.share())
		}
	}
	t.Logf("\n%s\n%s", table.String(), trans.String())
}
