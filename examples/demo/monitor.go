package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// monitor gathers what the table shows: the engine's statistics sampled once
// a second, the clients' own counts, and the reload and alert events.
type monitor struct {
	eng        *flow.Engine
	sc         *scenario
	d          time.Duration
	start      time.Time // set once, under mu, before the load starts
	watcher    *rules.Watcher
	alerter    *alerting.Alerter
	metricsURL string

	// The warm-up rule as loaded: its stable rate and cold factor.
	stable, coldFactor float64
	warmup             time.Duration

	prev flow.Snapshot // the previous sample, for rates
	ramp []rampPoint   // admitted/s on the warm-up resource, once a second

	mu       sync.Mutex
	events   []event
	alerts   []alerting.Alert
	versions []string // every version applied, the first included
	editedAt time.Time
	reloadOK bool // the edit was applied by the watcher
	reopened int  // failed probe rounds since the breaker opened
}

type event struct {
	at   time.Duration
	text string
}

type rampPoint struct {
	at   time.Duration // end of the second measured
	rate float64
}

func newMonitor(eng *flow.Engine, sc *scenario, d time.Duration) *monitor {
	return &monitor{eng: eng, sc: sc, d: d}
}

func (m *monitor) since(t time.Time) time.Duration {
	if m.start.IsZero() || t.Before(m.start) {
		return 0
	}
	return t.Sub(m.start)
}

func (m *monitor) addEvent(at time.Duration, format string, args ...any) {
	m.events = append(m.events, event{at, fmt.Sprintf(format, args...)})
}

// onReload is the watcher's callback: the first load, and every later one.
func (m *monitor) onReload(ev rules.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ev.Err != nil {
		m.addEvent(m.since(ev.Time), "reload REFUSED, last good rules kept: %v", ev.Err)
		return
	}
	if !ev.Changed {
		return
	}
	m.versions = append(m.versions, ev.Version)
	if len(m.versions) == 1 {
		m.loadWarmup()
		return // the first load, in Watch itself
	}
	lag := ""
	if !m.editedAt.IsZero() {
		lag = fmt.Sprintf(" (+%dms)", ev.Time.Sub(m.editedAt).Milliseconds())
		m.reloadOK = true
	}
	m.addEvent(m.since(ev.Time), "reload applied: version %s -> %s%s",
		short(m.versions[len(m.versions)-2]), short(ev.Version), lag)
}

// noteError records a failure met in the watcher's callback.
func (m *monitor) noteError(what string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addEvent(m.since(time.Now()), "%s failed: %v", what, err)
}

// loadWarmup remembers the warm-up rule's figures for the ramp.
func (m *monitor) loadWarmup() {
	for _, r := range m.eng.Rules() {
		if r.Algorithm == flow.AlgoWarmUp {
			m.stable = r.Limit / r.Window.Seconds()
			m.coldFactor, m.warmup = r.ColdFactor, r.Warmup
		}
	}
}

// edit changes the rules file halfway through the run.
func (m *monitor) edit(path string) {
	m.mu.Lock()
	m.editedAt = time.Now()
	m.mu.Unlock()
	old, err := editRule(path, reloadRule, map[string]any{"limit": reloadLimit, "burst": reloadBurst})
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.addEvent(m.since(m.editedAt), "editing the rules file failed: %v", err)
		return
	}
	m.addEvent(m.since(m.editedAt), "rules file edited: %s limit %v -> %v/s, burst %v -> %v",
		reloadRule, old["limit"], reloadLimit, old["burst"], reloadBurst)
}

// onBreaker is the engine's breaker listener: it notes the opening and
// the recovery, and counts the probes that failed in between.
func (m *monitor) onBreaker(ev flow.BreakerEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at := m.since(ev.Time)
	switch {
	case ev.From == flow.BreakerClosed && ev.To == flow.BreakerOpen:
		m.reopened = 0
		m.addEvent(at, "BREAKER OPEN   %s: %.0f%% of %d calls failed, refusing with 503",
			ev.Resource, 100*ev.Measure, ev.Completed)
	case ev.To == flow.BreakerOpen:
		m.reopened++
	case ev.To == flow.BreakerClosed:
		m.addEvent(at, "breaker closed %s: probes succeeded, the dependency is back (%d failed probe rounds before)",
			ev.Resource, m.reopened)
	}
}

// onAlert is the alerter's sink.
func (m *monitor) onAlert(a alerting.Alert) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.alerts = append(m.alerts, a)
	if a.Status == alerting.StatusFiring {
		m.addEvent(m.since(a.UpdatedAt), "ALERT FIRING   %s: %.0f%% of %d calls refused (> %.0f%%)",
			a.Resource, 100*a.Ratio, a.Requests, 100*a.Threshold)
		return
	}
	m.addEvent(m.since(a.UpdatedAt), "alert resolved %s: ratio %.0f%% (high since %.1fs)",
		a.Resource, 100*a.Ratio, m.since(a.StartsAt).Seconds())
}

// frame is one refresh of the table.
type frame struct {
	elapsed   time.Duration
	total     time.Duration
	phase     string
	resources []resRow
	actors    []actorRow
	ramp      []rampPoint
	stable    float64
	cold      float64
	warmup    time.Duration
	states    []alerting.ResourceState
	threshold float64
	window    time.Duration
	forDur    time.Duration
	events    []event
	version   string
	userLimit float64
}

type resRow struct {
	name           string
	passed, waited uint64
	blocked        [flow.NumLevels]uint64
	admitRate      float64 // passed + waited in the last second
	blockRate      float64
}

type actorRow struct {
	name             string
	sent, ok, failed uint64
	blocked          [flow.NumLevels]uint64 // 429s by level
	broken           uint64                 // 503s: an open breaker
	dropped          uint64
}

// resources lists the shop's resources in the table's order.
var resources = []string{resProducts, resOrders, resRecs, resShipping}

// sample reads the engine and the clients once and builds a frame; ramp
// says to record the second in the warm-up ramp.
func (m *monitor) sample(ramp bool) frame {
	snap := m.eng.Snapshot()
	el := m.since(snap.Time)
	if el > m.d {
		el = m.d
	}
	dt := snap.Time.Sub(m.prev.Time).Seconds()
	f := frame{elapsed: el, total: m.d, phase: phase(float64(el) / float64(m.d))}
	for _, name := range resources {
		cur, prev := find(snap, name), find(m.prev, name)
		row := resRow{name: name, passed: cur.Passed, waited: cur.Waited, blocked: cur.Blocked}
		if m.prev.Time.IsZero() || dt <= 0 {
			dt = 1
		}
		row.admitRate = float64(cur.Admitted()-prev.Admitted()) / dt
		row.blockRate = float64(sum(cur.Blocked)-sum(prev.Blocked)) / dt
		// A second counts for the ramp once it began after the cold start.
		if ramp && name == resRecs && el-time.Second >= time.Duration(coldFrom*float64(m.d))-200*time.Millisecond && !m.prev.Time.IsZero() {
			m.ramp = append(m.ramp, rampPoint{el, row.admitRate})
		}
		f.resources = append(f.resources, row)
	}
	for _, r := range snap.Rules {
		if r.ID == reloadRule {
			f.userLimit = r.EffectiveLimit
		}
	}
	m.prev = snap
	for _, a := range m.sc.actors {
		row := actorRow{name: a.name, sent: a.sent.Load(), ok: a.ok.Load(), failed: a.errors.Load(), dropped: a.dropped.Load(), broken: a.broken.Load()}
		for l := range row.blocked {
			row.blocked[l] = a.blocked[l].Load()
		}
		f.actors = append(f.actors, row)
	}
	f.ramp = append([]rampPoint(nil), m.ramp...)
	f.stable, f.warmup = m.stable, m.warmup
	if m.coldFactor > 0 {
		f.cold = m.stable / m.coldFactor
	}
	if m.alerter != nil {
		f.states = m.alerter.State()
		c := m.alerter.Config()
		f.threshold, f.window, f.forDur = c.RejectionRatio, c.Window, c.For
	}
	m.mu.Lock()
	f.events = append([]event(nil), m.events...)
	if n := len(m.versions); n > 0 {
		f.version = m.versions[n-1]
	}
	m.mu.Unlock()
	return f
}

func find(s flow.Snapshot, resource string) flow.ResourceStats {
	for _, r := range s.Resources {
		if r.Resource == resource {
			return r
		}
	}
	return flow.ResourceStats{}
}

func sum(b [flow.NumLevels]uint64) uint64 {
	var n uint64
	for _, v := range b {
		n += v
	}
	return n
}

// short abbreviates a version hash for display.
func short(v string) string {
	if len(v) > 12 {
		return v[:12]
	}
	return v
}
