package alerting

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/metrics"
)

var t0 = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

// rig is a real engine on a fake clock, an alerter on the same clock, and
// a sink that records every notification.
type rig struct {
	t   *testing.T
	clk *clock.Fake
	eng *flow.Engine
	al  *Alerter
	rec *recorder
}

type recorder struct {
	mu     sync.Mutex
	alerts []Alert
}

func (r *recorder) Notify(_ context.Context, a Alert) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alerts = append(r.alerts, a)
	return nil
}

func (r *recorder) all() []Alert {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Alert(nil), r.alerts...)
}

// statuses counts notifications by status.
func (r *recorder) statuses() (firing, resolved int) {
	for _, a := range r.all() {
		switch a.Status {
		case StatusFiring:
			firing++
		case StatusResolved:
			resolved++
		}
	}
	return firing, resolved
}

// newRig loads one fixed-window rule per resource (limit calls per window)
// and starts the alerter with the defaults, no overall alert, and opts.
func newRig(t *testing.T, rules []flow.Rule, opts ...Option) *rig {
	t.Helper()
	clk := clock.NewFake(t0)
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules(rules); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	base := []Option{WithClock(clk), WithSink(rec), WithOverall(false)}
	al := New(eng, append(base, opts...)...)
	if err := al.Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = al.Close() })
	r := &rig{t: t, clk: clk, eng: eng, al: al, rec: rec}
	r.eval() // the baseline sample
	return r
}

func fixedWindow(resource string, limit float64, window time.Duration) flow.Rule {
	return flow.Rule{ID: resource, Resource: resource, Algorithm: flow.AlgoFixedWindow,
		Limit: limit, Window: window}
}

// send makes n calls to resource at the current instant and returns how
// many were blocked.
func (r *rig) send(resource string, n int) (blocked int) {
	r.t.Helper()
	for range n {
		p, err := r.eng.Entry(resource)
		if err != nil {
			if !errors.Is(err, flow.ErrBlocked) {
				r.t.Fatalf("Entry: %v", err)
			}
			blocked++
			continue
		}
		p.Exit()
	}
	return blocked
}

// tick sends perSecond calls to each resource in every second of one
// evaluation interval (10s by default), then evaluates and waits for the
// notifications to reach the recorder.
func (r *rig) tick(perSecond map[string]int) {
	r.t.Helper()
	for range int(r.al.cfg.Interval / time.Second) {
		for res, n := range perSecond {
			r.send(res, n)
		}
		r.clk.Advance(time.Second)
	}
	r.eval()
}

func (r *rig) eval() {
	r.t.Helper()
	if err := r.al.Evaluate(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	if err := r.al.Flush(context.Background()); err != nil {
		r.t.Fatal(err)
	}
}

// state returns the alerter's state of resource.
func (r *rig) state(resource string) ResourceState {
	r.t.Helper()
	for _, s := range r.al.State() {
		if s.Resource == resource {
			return s
		}
	}
	r.t.Fatalf("no state for %q in %+v", resource, r.al.State())
	return ResourceState{}
}

// An Alerter is what metrics.WithAlerts reads; this package itself does not
// import metrics.
var _ metrics.AlertSource = (*Alerter)(nil)

type firingAlert struct{ Alert, Resource string }

// firing collects what a.Firing yields.
func firing(a *Alerter) []firingAlert {
	var out []firingAlert
	for name, res := range a.Firing() {
		out = append(out, firingAlert{name, res})
	}
	return out
}
