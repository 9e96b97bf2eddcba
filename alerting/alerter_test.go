package alerting

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

func TestFiresAfterForWhenHalfIsBlocked(t *testing.T) {
	// 20 calls a second against a limit of 10: half are blocked.
	r := newRig(t, []flow.Rule{fixedWindow("orders", 10, time.Second)})
	load := map[string]int{"orders": 20}

	r.tick(load) // t+10s: ratio 0.5 over 200 calls: pending
	if got := r.state("orders"); got.State != Pending || got.Ratio != 0.5 || got.Requests != 200 || got.Blocked != 100 {
		t.Fatalf("after 10s: got %+v, want pending at ratio 0.5 over 200 calls", got)
	}
	activeAt := r.clk.Now()
	r.tick(load) // 20s
	r.tick(load) // 30s: pending for 20s < For 30s
	if got := r.state("orders"); got.State != Pending || !got.Since.Equal(activeAt) {
		t.Fatalf("after 30s: got %+v, want pending since %v", got, activeAt)
	}
	if n := len(r.rec.all()); n != 0 {
		t.Fatalf("notified %d times before For had passed", n)
	}
	r.tick(load) // 40s: pending for 30s = For: fires
	got := r.rec.all()
	if len(got) != 1 {
		t.Fatalf("got %d notifications, want 1: %+v", len(got), got)
	}
	a := got[0]
	want := Alert{
		Name: DefaultName, Resource: "orders", Status: StatusFiring, Ratio: 0.5,
		StartsAt: activeAt, UpdatedAt: r.clk.Now(), Requests: 800, Blocked: 400, Threshold: 0.3,
		Labels: map[string]string{"alertname": DefaultName, "resource": "orders", "severity": "warning"},
	}
	a.Annotations = nil
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("alert:\n got %+v\nwant %+v", a, want)
	}
	if s := got[0].Annotations["summary"]; s != `flowgate blocks 50% of calls to "orders"` {
		t.Errorf("summary = %q", s)
	}
	if d := got[0].Annotations["description"]; !strings.Contains(d, "400 of 800 calls") {
		t.Errorf("description = %q, want the counts", d)
	}
	wantFiring := []firingAlert{{Alert: DefaultName, Resource: "orders"}}
	if f := firing(r.al); !reflect.DeepEqual(f, wantFiring) {
		t.Errorf("Firing() = %+v, want %+v", f, wantFiring)
	}
	// Still firing: no repeat before RepeatInterval (4h).
	for range 6 {
		r.tick(load)
	}
	if n := len(r.rec.all()); n != 1 {
		t.Errorf("got %d notifications a minute after firing, want 1", n)
	}
}

func TestNeverFiresUnderMinRequests(t *testing.T) {
	// One call a second against one per 2s: half blocked, but only 60 calls
	// a minute, under the default 100.
	run := func(opts ...Option) *rig {
		r := newRig(t, []flow.Rule{fixedWindow("orders", 1, 2*time.Second)}, opts...)
		for range 60 { // 10 minutes
			r.tick(map[string]int{"orders": 1})
			if s := r.state("orders"); s.Ratio != 0.5 && s.Requests >= 20 {
				t.Fatalf("ratio = %v over %d calls, want 0.5", s.Ratio, s.Requests)
			}
		}
		return r
	}
	r := run()
	if got := r.rec.all(); len(got) != 0 {
		t.Fatalf("fired under minRequests: %+v", got)
	}
	if s := r.state("orders"); s.State != Inactive || s.Requests != 60 {
		t.Fatalf("state = %+v, want inactive with 60 calls in the window", s)
	}
	// The same traffic fires once the minimum allows it.
	r = run(WithMinRequests(60))
	if firing, _ := r.rec.statuses(); firing != 1 {
		t.Fatalf("with minRequests 60: %d firing notifications, want 1", firing)
	}
}

func TestResolvesWithOneNotification(t *testing.T) {
	r := newRig(t, []flow.Rule{fixedWindow("orders", 10, time.Second)})
	for range 4 {
		r.tick(map[string]int{"orders": 20})
	}
	if firing, _ := r.rec.statuses(); firing != 1 {
		t.Fatalf("not firing after 40s at 50%%: %+v", r.rec.all())
	}
	startsAt := r.rec.all()[0].StartsAt
	// Traffic falls within the limit: nothing is blocked any more.
	var resolvedAt time.Time
	for range 60 { // 10 minutes
		r.tick(map[string]int{"orders": 5})
		if resolvedAt.IsZero() && r.state("orders").State == Resolved {
			resolvedAt = r.clk.Now()
		}
	}
	got := r.rec.all()
	if len(got) != 2 {
		t.Fatalf("got %d notifications, want firing then one resolved: %+v", len(got), got)
	}
	res := got[1]
	if res.Status != StatusResolved || !res.EndsAt.Equal(resolvedAt) || !res.StartsAt.Equal(startsAt) {
		t.Fatalf("resolved = %+v, want status resolved, startsAt %v, endsAt %v", res, startsAt, resolvedAt)
	}
	if res.Ratio >= r.al.cfg.ResolveRatio {
		t.Errorf("resolved at ratio %v, not below ResolveRatio %v", res.Ratio, r.al.cfg.ResolveRatio)
	}
	if res.Fingerprint() != got[0].Fingerprint() {
		t.Errorf("fingerprints differ: %s, %s", got[0].Fingerprint(), res.Fingerprint())
	}
	if f := firing(r.al); len(f) != 0 {
		t.Errorf("Firing() = %+v after resolve", f)
	}
}

// oscillate drives a ratio that swings across the threshold: a minute at
// 16 calls a second (6 of 16 blocked, 0.375), a minute at 14 (4 of 14,
// 0.286), for 12 minutes, and returns the window ratios seen.
func oscillate(r *rig) []float64 {
	var ratios []float64
	for m := range 12 {
		n := 16
		if m%2 == 1 {
			n = 14
		}
		for range 6 {
			r.tick(map[string]int{"orders": n})
			ratios = append(ratios, r.state("orders").Ratio)
		}
	}
	return ratios
}

func TestNoFlappingAroundThreshold(t *testing.T) {
	fire := func(r *rig) {
		for range 4 {
			r.tick(map[string]int{"orders": 20})
		}
	}
	r := newRig(t, []flow.Rule{fixedWindow("orders", 10, time.Second)})
	fire(r)
	ratios := oscillate(r)
	t.Logf("window ratios: %.3f", ratios)
	var above, below int
	for _, x := range ratios[6:] { // once the first full minute has left the window
		if x > 0.3 {
			above++
		}
		if x < 0.3 {
			below++
		}
	}
	if above == 0 || below == 0 || slicesMin(ratios[6:]) < 0.28 {
		t.Fatalf("ratio did not swing across 0.3 while staying above 0.24: %v", ratios)
	}
	if firing, resolved := r.rec.statuses(); firing != 1 || resolved != 0 {
		t.Fatalf("hysteresis: %d firing and %d resolved notifications, want 1 and 0", firing, resolved)
	}
	// Without the gap between the thresholds the same traffic flaps.
	r = newRig(t, []flow.Rule{fixedWindow("orders", 10, time.Second)}, WithResolveRatio(0.3))
	fire(r)
	oscillate(r)
	if firing, resolved := r.rec.statuses(); firing < 2 || resolved < 2 {
		t.Fatalf("without hysteresis: %d firing, %d resolved; the test traffic should make it flap", firing, resolved)
	}
}

func slicesMin(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func TestPendingFallsBackWhenRatioDrops(t *testing.T) {
	r := newRig(t, []flow.Rule{fixedWindow("orders", 10, time.Second)}, WithWindow(10*time.Second))
	r.tick(map[string]int{"orders": 20})
	if s := r.state("orders"); s.State != Pending {
		t.Fatalf("state = %v, want pending", s.State)
	}
	r.tick(map[string]int{"orders": 10}) // nothing blocked in the 10s window
	if s := r.state("orders"); s.State != Inactive || !s.Since.IsZero() {
		t.Fatalf("state = %+v, want inactive", s)
	}
	for range 3 { // pending again, and For counts from now
		r.tick(map[string]int{"orders": 20})
	}
	if n := len(r.rec.all()); n != 0 {
		t.Fatalf("fired %d times though For restarted 20s ago", n)
	}
	r.tick(map[string]int{"orders": 20})
	if firing, _ := r.rec.statuses(); firing != 1 {
		t.Fatalf("firing = %d, want 1", firing)
	}
}

func TestRepeatInterval(t *testing.T) {
	r := newRig(t, []flow.Rule{fixedWindow("orders", 10, time.Second)}, WithRepeatInterval(time.Minute))
	for range 4 + 30 { // fire at 40s, then 5 more minutes
		r.tick(map[string]int{"orders": 20})
	}
	got := r.rec.all()
	if len(got) != 6 {
		t.Fatalf("got %d notifications over 5 minutes of firing with a 1m repeat, want 6", len(got))
	}
	for i, a := range got {
		if a.Status != StatusFiring || !a.StartsAt.Equal(got[0].StartsAt) {
			t.Errorf("notification %d = %s from %v, want firing from %v", i, a.Status, a.StartsAt, got[0].StartsAt)
		}
		if i > 0 && a.UpdatedAt.Sub(got[i-1].UpdatedAt) != time.Minute {
			t.Errorf("repeat %d came %v after the previous, want 1m", i, a.UpdatedAt.Sub(got[i-1].UpdatedAt))
		}
	}
}

func TestPerResourceAndOverall(t *testing.T) {
	r := newRig(t, []flow.Rule{
		fixedWindow("orders", 10, time.Second),
		fixedWindow("search", 100, time.Second),
	}, WithOverall(true), WithFor(0), WithLabels(map[string]string{"service": "shop", "alertname": "ignored"}))
	r.tick(map[string]int{"orders": 20, "search": 20}) // orders 0.5; all 100/400 = 0.25
	want := []firingAlert{{Alert: DefaultName, Resource: "orders"}}
	if f := firing(r.al); !reflect.DeepEqual(f, want) {
		t.Fatalf("Firing() = %+v, want %+v", f, want)
	}
	states := r.al.State()
	if len(states) != 3 || states[0].Resource != "" || states[0].Ratio != 0.25 || states[0].State != Inactive {
		t.Fatalf("State() = %+v, want all traffic first at 0.25, inactive", states)
	}
	r.tick(map[string]int{"orders": 40, "search": 20}) // all: (100+300)/(400+600)... over the window
	if s := r.state(""); s.State != Firing {
		t.Fatalf("all traffic: %+v, want firing", s)
	}
	var overall *Alert
	for _, a := range r.rec.all() {
		if a.Resource == "" {
			overall = &a
		}
	}
	if overall == nil {
		t.Fatal("no notification for all traffic")
	}
	wantLabels := map[string]string{"alertname": DefaultName, "severity": "warning", "service": "shop"}
	if !reflect.DeepEqual(overall.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v (no resource label)", overall.Labels, wantLabels)
	}
	if !strings.Contains(overall.Annotations["summary"], "all resources") {
		t.Errorf("summary = %q", overall.Annotations["summary"])
	}
}

func TestEvaluateErrors(t *testing.T) {
	al := New(flow.NewEngine(), WithRejectionRatio(2), WithQueueSize(0))
	err := al.Evaluate(context.Background())
	for _, want := range []string{"rejectionRatio: must be in (0, 1], got 2", "queueSize: must be >= 1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Evaluate = %v, want it to mention %q", err, want)
		}
	}
	al.Start() // does nothing
	if err := al.Close(); err != nil {
		t.Fatal(err)
	}
	ok := New(flow.NewEngine())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ok.Evaluate(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	_ = ok.Close()
	if err := ok.Evaluate(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// snap builds a snapshot of lifetime counters: resource → passed, blocked.
func snap(counts map[string][2]uint64) flow.Snapshot {
	var s flow.Snapshot
	for name, c := range counts {
		rs := flow.ResourceStats{Resource: name, Passed: c[0]}
		rs.Blocked[flow.LevelUser] = c[1] // any level counts
		s.Resources = append(s.Resources, rs)
	}
	return s
}

func TestVanishedResourceResolvesAndIsDropped(t *testing.T) {
	rec := &recorder{}
	al := New(flow.NewEngine(), WithSink(rec), WithFor(0), WithOverall(false))
	defer al.Close()
	ctx := context.Background()
	at := t0
	step := func(counts map[string][2]uint64) {
		t.Helper()
		if err := al.evaluate(snap(counts), at); err != nil {
			t.Fatal(err)
		}
		if err := al.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		at = at.Add(10 * time.Second)
	}
	step(map[string][2]uint64{"a": {0, 0}, "b": {0, 0}})
	step(map[string][2]uint64{"a": {100, 100}, "b": {100, 0}})
	if got := firing(al); len(got) != 1 || got[0].Resource != "a" {
		t.Fatalf("Firing() = %+v, want a", got)
	}
	step(map[string][2]uint64{"b": {200, 0}}) // a is gone
	got := rec.all()
	if len(got) != 2 || got[1].Status != StatusResolved || got[1].Resource != "a" || !got[1].EndsAt.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("notifications = %+v, want a firing then a resolved at +20s", got)
	}
	if st := al.State(); len(st) != 1 || st[0].Resource != "b" {
		t.Fatalf("State() = %+v, want only b", st)
	}
	// It comes back: a fresh window, no stale baseline.
	step(map[string][2]uint64{"a": {500, 500}, "b": {300, 0}})
	if s := al.State()[0]; s.Resource != "a" || s.State != Inactive || s.Requests != 0 {
		t.Fatalf("returned resource: %+v, want inactive with an empty window", s)
	}
}
