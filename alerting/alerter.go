package alerting

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// ErrClosed is returned by Evaluate after Close.
var ErrClosed = errors.New("alerting: alerter closed")

// Alerter watches an engine's rejection ratio, per resource and over all
// traffic, and notifies its sinks when an alert fires, repeats and
// resolves. Evaluate does one tick; Start runs it every Interval until
// Close. It reads only the engine's Snapshot, never the Entry hot path.
// Its methods are safe for concurrent use.
type Alerter struct {
	snapshot func() flow.Snapshot // eng.Snapshot, or WithSnapshots'
	clk      clock.Clock
	log      *slog.Logger
	cfg      Config
	name     string
	labels   map[string]string
	overall  bool
	drain    time.Duration
	err      error // invalid options: Evaluate returns it, Start does nothing
	queues   []*queue
	quit     chan struct{} // closed by Close: workers drain and stop
	sinkCtx  context.Context
	cancel   context.CancelFunc // cancels sinkCtx

	mu        sync.Mutex // serialises Evaluate, Start, Close and reads of state
	series    map[string]*series
	all       *series // all traffic; nil when WithOverall(false)
	gen       uint64
	started   bool
	closed    bool
	stopLoop  context.CancelFunc
	loopDone  chan struct{}
	closeOnce sync.Once
}

// series is the window and state of one resource (or of all traffic).
type series struct {
	resource string
	win      window
	seen     uint64 // the evaluation that last saw the resource

	state             State
	ratio             float64
	requests, blocked uint64
	activeAt          time.Time // when the ratio went high (pending)
	resolvedAt        time.Time
	lastSent          []time.Time // per queue, for repeats
}

// New returns an alerter on eng (which may be nil with WithSnapshots).
// Invalid options do not panic: Evaluate returns the problem (so does Err)
// and Start does nothing.
func New(eng *flow.Engine, opts ...Option) *Alerter {
	o := newOptions(opts)
	a := &Alerter{
		snapshot: o.snapshots, clk: o.clk, log: o.log, cfg: o.cfg, name: o.name,
		labels: o.labels, overall: o.overall, drain: o.drainTimeout,
		series: make(map[string]*series), quit: make(chan struct{}),
	}
	a.sinkCtx, a.cancel = context.WithCancel(context.Background())
	var errs []error
	switch {
	case a.snapshot == nil && eng == nil:
		errs = append(errs, errors.New("engine: must not be nil"))
	case a.snapshot == nil:
		a.snapshot = eng.Snapshot
	}
	if o.clk == nil {
		errs = append(errs, errors.New("clock: must not be nil"))
	}
	if err := o.cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.name == "" {
		errs = append(errs, errors.New("name: must not be empty"))
	}
	if o.queue < 1 {
		errs = append(errs, fmt.Errorf("queueSize: must be >= 1, got %d", o.queue))
	}
	if a.err = errors.Join(errs...); a.err != nil {
		return a
	}
	for i, s := range o.sinks {
		a.queues = append(a.queues, newQueue(s, i, o.queue, o.cfg.RepeatInterval))
	}
	if a.overall {
		a.all = a.newSeries("")
	}
	return a
}

// Err reports the problems of the options given to New, or nil.
func (a *Alerter) Err() error { return a.err }

// Config returns the configuration in force.
func (a *Alerter) Config() Config {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg
}

func (a *Alerter) newSeries(resource string) *series {
	return &series{
		resource: resource,
		win:      newWindow(a.cfg.Window, a.cfg.Interval),
		lastSent: make([]time.Time, len(a.queues)),
	}
}

// Evaluate takes one sample of the engine's counters, updates every
// resource's state and queues the notifications due. It never waits for a
// sink. It returns the options' problems, ctx.Err(), or ErrClosed.
func (a *Alerter) Evaluate(ctx context.Context) error {
	if a.err != nil {
		return a.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return a.evaluate(a.snapshot(), a.clk.Now())
}

// evaluate is Evaluate on a given snapshot and time.
func (a *Alerter) evaluate(snap flow.Snapshot, now time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrClosed
	}
	a.gen++
	var total sample
	total.at = now.UnixNano()
	for i := range snap.Resources {
		rs := &snap.Resources[i]
		var blocked uint64
		for _, b := range rs.Blocked {
			blocked += b
		}
		total.admitted += rs.Admitted() // a call that waited was let in too
		total.blocked += blocked
		s := a.series[rs.Resource]
		if s == nil {
			s = a.newSeries(rs.Resource)
			a.series[rs.Resource] = s
		}
		s.seen = a.gen
		a.observe(s, sample{at: total.at, admitted: rs.Admitted(), blocked: blocked})
		a.step(s, now)
	}
	if a.all != nil {
		a.observe(a.all, total)
		a.step(a.all, now)
	}
	// A resource gone from the engine is forgotten; if it was firing, its
	// receivers hear that it resolved rather than wait forever.
	for name, s := range a.series {
		if s.seen == a.gen {
			continue
		}
		if s.state == Firing {
			s.state, s.resolvedAt = Resolved, now
			a.notify(s, StatusResolved, now, true)
		}
		delete(a.series, name)
	}
	return nil
}

func (a *Alerter) observe(s *series, smp sample) {
	s.win.add(smp)
	admitted, blocked := s.win.counts()
	s.requests, s.blocked = admitted+blocked, blocked
	s.ratio = 0
	if s.requests > 0 {
		s.ratio = float64(blocked) / float64(s.requests)
	}
}

// step moves s through inactive → pending → firing → resolved. Pending
// needs the ratio above RejectionRatio with at least MinRequests calls, at
// every tick (as Prometheus's "for"). Firing ends only when the ratio falls
// below ResolveRatio (or nothing at all is blocked any more): with too few
// calls to judge, a firing alert stays firing rather than flap.
func (a *Alerter) step(s *series, now time.Time) {
	enough := s.requests > 0 && s.requests >= uint64(a.cfg.MinRequests)
	high := enough && s.ratio > a.cfg.RejectionRatio
	switch s.state {
	case Inactive, Resolved:
		if !high {
			return
		}
		s.state, s.activeAt = Pending, now
		a.logState(s)
		if a.cfg.For == 0 {
			a.fire(s, now)
		}
	case Pending:
		if !high {
			s.state = Inactive
			a.logState(s)
			return
		}
		if now.Sub(s.activeAt) >= a.cfg.For {
			a.fire(s, now)
		}
	case Firing:
		if (enough && s.ratio < a.cfg.ResolveRatio) || s.blocked == 0 {
			s.state, s.resolvedAt = Resolved, now
			a.logState(s)
			a.notify(s, StatusResolved, now, true)
			return
		}
		a.notify(s, StatusFiring, now, false)
	}
}

func (a *Alerter) fire(s *series, now time.Time) {
	s.state = Firing
	a.logState(s)
	a.notify(s, StatusFiring, now, true)
}

func (a *Alerter) logState(s *series) {
	if a.log != nil {
		a.log.Info("alerting: state", "alert", a.name, "resource", s.resource,
			"state", s.state.String(), "ratio", s.ratio, "requests", s.requests)
	}
}

// notify queues s's alert for every sink (all), or for the sinks whose
// repeat interval has passed since they last got it.
func (a *Alerter) notify(s *series, status string, now time.Time, all bool) {
	if len(a.queues) == 0 {
		return
	}
	var al Alert
	built := false
	for i, q := range a.queues {
		if !all && now.Sub(s.lastSent[i]) < q.repeat {
			continue
		}
		if !built {
			al, built = a.alert(s, status, now), true
		}
		s.lastSent[i] = now
		if !q.started {
			q.started = true
			go q.run(a.sinkCtx, a.quit, a.log)
		}
		if !q.offer(al) && a.log != nil {
			a.log.Warn("alerting: sink queue full, notification dropped", "sink", q.name,
				"alert", al.Name, "resource", al.Resource, "status", al.Status)
		}
	}
}

// alert builds the notification. Each has its own maps: sinks may keep or
// change them.
func (a *Alerter) alert(s *series, status string, now time.Time) Alert {
	labels := make(map[string]string, len(a.labels)+3)
	for k, v := range a.labels {
		labels[k] = v
	}
	if _, ok := labels["severity"]; !ok {
		labels["severity"] = "warning"
	}
	labels["alertname"] = a.name
	if s.resource != "" {
		labels["resource"] = s.resource
	} else {
		delete(labels, "resource")
	}
	what := "all resources"
	if s.resource != "" {
		what = fmt.Sprintf("%q", s.resource)
	}
	al := Alert{
		Name: a.name, Resource: s.resource, Status: status, Ratio: s.ratio,
		StartsAt: s.activeAt, Labels: labels, UpdatedAt: now,
		Requests: s.requests, Blocked: s.blocked, Threshold: a.cfg.RejectionRatio,
		Annotations: map[string]string{
			"summary": summary(status, s.ratio, what),
			"description": fmt.Sprintf("%d of %d calls to %s blocked over the last %v (ratio %.3f, threshold %v, resolves below %v).",
				s.blocked, s.requests, what, a.cfg.Window, s.ratio, a.cfg.RejectionRatio, a.cfg.ResolveRatio),
		},
	}
	if status == StatusResolved {
		al.EndsAt = s.resolvedAt
	}
	return al
}

// Firing yields the name and resource ("" for all traffic) of each alert
// firing now, all traffic first, then by resource. It makes an Alerter a
// metrics.AlertSource (metrics.WithAlerts exports
// flowgate_alerts_firing{alert,resource}) while naming only standard types,
// so this package does not import the exporter.
func (a *Alerter) Firing() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		// Copy under the lock and yield outside it: yield may take its
		// own locks (the exporter's), or call back into the Alerter.
		a.mu.Lock()
		var resources []string
		if a.all != nil && a.all.state == Firing {
			resources = append(resources, "")
		}
		for _, s := range a.series {
			if s.state == Firing {
				resources = append(resources, s.resource)
			}
		}
		a.mu.Unlock()
		slices.Sort(resources)
		for _, r := range resources {
			if !yield(a.name, r) {
				return
			}
		}
	}
}

// State returns every resource's state at the last evaluation, all traffic
// (Resource "") first, then by resource name.
func (a *Alerter) State() []ResourceState {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]ResourceState, 0, len(a.series)+1)
	add := func(s *series) {
		rs := ResourceState{Resource: s.resource, State: s.state, Ratio: s.ratio,
			Requests: s.requests, Blocked: s.blocked}
		switch s.state {
		case Pending, Firing:
			rs.Since = s.activeAt
		case Resolved:
			rs.Since = s.resolvedAt
		}
		out = append(out, rs)
	}
	if a.all != nil {
		add(a.all)
	}
	for _, s := range a.series {
		add(s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// Stats counts notifications sent, failed and dropped over all sinks.
func (a *Alerter) Stats() Stats {
	var st Stats
	for _, q := range a.queues {
		st.Sent += q.sent.Load()
		st.Failed += q.failed.Load()
		st.Dropped += q.dropped.Load()
	}
	return st
}

func summary(status string, ratio float64, what string) string {
	if status == StatusResolved {
		return fmt.Sprintf("flowgate blocks %.0f%% of calls to %s again, no longer too many", 100*ratio, what)
	}
	return fmt.Sprintf("flowgate blocks %.0f%% of calls to %s", 100*ratio, what)
}
