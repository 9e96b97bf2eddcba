package sentinel

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// Java Sentinel cannot run in this process, so these tests hold the
// imported rules to models of Java Sentinel 1.8's deciders, written from
// its source: ExceptionCircuitBreaker and ResponseTimeCircuitBreaker over
// AbstractCircuitBreaker (one bucket of statIntervalMs on the millisecond
// clock), and AuthorityRuleChecker.

// javaBreakerModel models one Java DegradeRule's circuit breaker.
type javaBreakerModel struct {
	grade             int // 0 slow ratio, 1 exception ratio, 2 exception count
	count, slowRatio  float64
	minRequests       int64
	intervalMs, retry int64 // statIntervalMs; timeWindow in ms
	state             string
	nextRetry         int64
	start, total, bad int64 // the one bucket: its start (ms), its counts
}

// tryPass is AbstractCircuitBreaker.tryPass: closed passes; open passes
// one call (the probe, moving to half-open) once the retry time came.
func (b *javaBreakerModel) tryPass(now int64) bool {
	switch b.state {
	case "closed":
		return true
	case "open":
		if now >= b.nextRetry {
			b.state = "half_open"
			return true
		}
	}
	return false
}

// complete is onRequestComplete: count in the current bucket, then a
// half-open breaker closes on a good outcome and opens on a bad one, and a
// closed one opens when the measure is above the threshold (a slow ratio
// of 1 also at 1) with at least minRequestAmount calls.
func (b *javaBreakerModel) complete(now, rtMs int64, failed bool) {
	if start := now - now%b.intervalMs; start != b.start {
		b.start, b.total, b.bad = start, 0, 0
	}
	bad := failed
	if b.grade == 0 {
		bad = rtMs > int64(b.count+0.5)
	}
	b.total++
	if bad {
		b.bad++
	}
	switch b.state {
	case "open":
		return
	case "half_open":
		if bad {
			b.state, b.nextRetry = "open", now+b.retry
		} else {
			b.state, b.total, b.bad = "closed", 0, 0
		}
		return
	}
	if b.total < b.minRequests {
		return
	}
	measure, limit := float64(b.bad), b.count
	if b.grade != 2 {
		measure = float64(b.bad) / float64(b.total)
	}
	if b.grade == 0 {
		limit = b.slowRatio
	}
	if measure > limit || b.grade == 0 && measure == 1 && limit == 1 {
		b.state, b.nextRetry = "open", now+b.retry
	}
}

// javaAuthorityModel models AuthorityRuleChecker.passCheck: an empty origin
// passes; an origin is on the list when it equals one of limitApp's
// comma-separated pieces as they are.
type javaAuthorityModel struct {
	limitApp string
	white    bool
}

func (a *javaAuthorityModel) tryPass(_ int64, origin string) bool {
	if origin == "" {
		return true
	}
	on := false
	for _, app := range strings.Split(a.limitApp, ",") {
		on = on || app == origin
	}
	return on == a.white
}

// javaModel is what sameDecisions asks of a model.
type javaModel interface {
	pass(now int64, origin string) bool
	done(now, rtMs int64, failed bool)
}

func (b *javaBreakerModel) pass(now int64, _ string) bool        { return b.tryPass(now) }
func (b *javaBreakerModel) done(now, rtMs int64, failed bool)    { b.complete(now, rtMs, failed) }
func (a *javaAuthorityModel) pass(now int64, origin string) bool { return a.tryPass(now, origin) }
func (a *javaAuthorityModel) done(now, rtMs int64, failed bool)  {}

// jcall is one call of a trace: arrival and hold in whole ms.
type jcall struct {
	at, hold int64
	fail     bool
	origin   string
}

var errJava = errors.New("failed")

// jpending is a call admitted by the model, the engine or both, until
// its end.
type jpending struct {
	end, rt int64
	fail    bool
	model   bool
	fg      *flow.Permit
}

// sameDecisions imports java (one Java rule), lets edit change the
// imported rule (to show what an inexact import would do), plays trace on
// the model and on an engine loaded with the rule, and returns how many
// calls both decided alike.
func sameDecisions(t *testing.T, java string, m javaModel, edit func(*flow.Rule), trace []jcall) int {
	t.Helper()
	reps, rs := importRules(t, "["+java+"]", Options{Dialect: Java})
	if reps[0].Verdict != Exact || len(rs) != 1 {
		t.Fatalf("%s: %s, want exact", java, reps[0])
	}
	if edit != nil {
		edit(&rs[0])
	}
	// A start on a whole minute of Unix time, where the model's buckets
	// begin too.
	clk := clock.NewFake(time.Unix(1_700_000_040, 0))
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules(rs); err != nil {
		t.Fatal(err)
	}
	base := clk.Now().UnixMilli()
	var q []jpending
	end := func(until int64) {
		sort.SliceStable(q, func(i, j int) bool { return q[i].end < q[j].end })
		for len(q) > 0 && q[0].end <= until {
			p := q[0]
			q = q[1:]
			clk.Set(time.UnixMilli(base + p.end))
			if p.model {
				m.done(base+p.end, p.rt, p.fail)
			}
			if p.fg != nil && p.fail {
				p.fg.Exit(flow.WithError(errJava))
			} else if p.fg != nil {
				p.fg.Exit()
			}
		}
	}
	same := 0
	for _, c := range trace {
		end(c.at)
		clk.Set(time.UnixMilli(base + c.at))
		var opts []flow.EntryOption
		if c.origin != "" {
			opts = append(opts, flow.WithParam("origin", c.origin))
		}
		jOK := m.pass(base+c.at, c.origin)
		p, err := eng.Entry("r", opts...)
		if jOK == (err == nil) {
			same++
		}
		if jOK || err == nil {
			jp := jpending{end: c.at + c.hold, rt: c.hold, fail: c.fail, model: jOK}
			if err == nil {
				jp.fg = &p
			}
			q = append(q, jp)
		}
	}
	end(1 << 50)
	return same
}

// jtrace is 20 calls a second for 30s, each holding 10ms; inside 5-10s
// and 20-22s, call i of a second is bad (fails, or holds slow) when
// bad(second, i).
func jtrace(slow int64, bad func(sec, i int64) bool) []jcall {
	var out []jcall
	for at := int64(0); at < 30000; at += 50 {
		c := jcall{at: at, hold: 10}
		sec, i := at/1000, at%1000/50
		if (sec >= 5 && sec < 10 || sec >= 20 && sec < 22) && bad(sec, i) {
			if slow > 0 {
				c.hold = slow
			} else {
				c.fail = true
			}
		}
		out = append(out, c)
	}
	return out
}

// TestJavaSemantics holds each imported Java rule to the model of Java's
// decider on a trace that reaches its edge (errors exactly at the count,
// a ratio exactly at the threshold, every call slow, calls without an
// origin), and shows that the mapping an inexact import made decides
// differently on the same trace.
func TestJavaSemantics(t *testing.T) {
	deg := func(grade int, count, slowRatio float64, min int64) func() javaModel {
		return func() javaModel {
			return &javaBreakerModel{grade: grade, count: count, slowRatio: slowRatio, minRequests: min, intervalMs: 1000, retry: 2000, state: "closed", start: -1}
		}
	}
	auth := func(limitApp string, white bool) func() javaModel {
		return func() javaModel { return &javaAuthorityModel{limitApp: limitApp, white: white} }
	}
	// 5 errors a second in odd seconds, 6 in even ones.
	atCount := func(sec, i int64) bool { return i < 5+(sec+1)%2 }
	// 8 of 20 (exactly 0.4) in odd seconds, 9 in even ones.
	atRatio := func(sec, i int64) bool { return i < 8+(sec+1)%2 }
	all := func(sec, i int64) bool { return true }
	origins := []string{"", "web", " mobile", "mobile", "cli", "crawler", ""}
	var authTrace []jcall
	for i := range int64(700) {
		authTrace = append(authTrace, jcall{at: i * 10, hold: 1, origin: origins[i%int64(len(origins))]})
	}
	for _, tc := range []struct {
		name, java string
		model      func() javaModel
		trace      []jcall
		inexact    func(*flow.Rule) // what the import wrote before
	}{
		{"exception count 5", `{"resource":"r","grade":2,"count":5,"timeWindow":2,"minRequestAmount":5}`, deg(2, 5, 0, 5),
			jtrace(0, atCount), func(r *flow.Rule) { r.Threshold, r.Buckets = 5, 10 }},
		{"exception ratio 0.4", `{"resource":"r","grade":1,"count":0.4,"timeWindow":2,"minRequestAmount":5}`, deg(1, 0.4, 0, 5),
			jtrace(0, atRatio), func(r *flow.Rule) { r.Buckets = 10 }},
		{"slow ratio 1 (every call slow)", `{"resource":"r","grade":0,"count":50,"timeWindow":2,"minRequestAmount":5}`, deg(0, 50, 1, 5),
			jtrace(80, all), func(r *flow.Rule) { r.Threshold = 1 }},
		{"slow ratio 0.5 over 50.5ms", `{"resource":"r","grade":0,"count":50.5,"slowRatioThreshold":0.5,"timeWindow":2,"minRequestAmount":5}`,
			deg(0, 50.5, 0.5, 5), jtrace(51, all), func(r *flow.Rule) { r.SlowCall = 50 * time.Millisecond }},
		{"authority white list", `{"resource":"r","limitApp":"web, mobile","strategy":0}`, auth("web, mobile", true),
			authTrace, func(r *flow.Rule) { r.AllowMissing, r.Values = false, []string{"web", "mobile"} }},
		{"authority black list", `{"resource":"r","limitApp":"crawler, web","strategy":1}`, auth("crawler, web", false),
			authTrace, func(r *flow.Rule) { r.Values = []string{"crawler", "web"} }},
	} {
		same := sameDecisions(t, tc.java, tc.model(), nil, tc.trace)
		old := sameDecisions(t, tc.java, tc.model(), tc.inexact, tc.trace)
		n := float64(len(tc.trace))
		t.Logf("%s: same decision as Java on %d of %d calls (%.2f%%); the former mapping %.2f%%",
			tc.name, same, len(tc.trace), 100*float64(same)/n, 100*float64(old)/n)
		if same != len(tc.trace) { // docs/sentinel.md: 100% on each trace
			t.Errorf("%s: same decision as Java on %d of %d calls, want all", tc.name, same, len(tc.trace))
		}
		if old >= same {
			t.Errorf("%s: the former mapping decides as Java on %d calls, the import on %d: the trace misses the edge", tc.name, old, same)
		}
	}
}
