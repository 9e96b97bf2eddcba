package admin

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// RulesResponse is GET /api/rules.
type RulesResponse struct {
	// Version is the rules document's Version (the same `flowgate
	// validate` prints), of the document in force.
	Version string `json:"version"`
	// Document is the document in force in normalised form
	// (rules.Document.Format): the source's or the last one PUT while its
	// rules are in force, else the engine's rules alone.
	Document json.RawMessage `json:"document"`
	// Origin says where Document came from: "source", "api" or "engine".
	Origin string        `json:"origin"`
	Source *SourceStatus `json:"source,omitempty"` // nil without WithSource
}

// SourceStatus is a rules source's state (rules.Status).
type SourceStatus struct {
	Path          string     `json:"path"`
	Version       string     `json:"version"`
	OK            bool       `json:"ok"`
	LastGoodLoad  *time.Time `json:"lastGoodLoad,omitempty"`
	LastError     string     `json:"lastError,omitempty"`
	LastErrorTime *time.Time `json:"lastErrorTime,omitempty"`
	Reloads       uint64     `json:"reloads"`
	Failures      uint64     `json:"failures"`
}

func (h *Handler) getRules(w http.ResponseWriter, r *http.Request) {
	doc, origin, err := h.current()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	out := RulesResponse{Version: doc.Version(), Document: doc.Format(), Origin: origin}
	if h.cf.source != nil {
		st := h.cf.source.Status()
		ss := &SourceStatus{Path: st.Path, Version: st.Version, OK: st.OK, Reloads: st.Reloads, Failures: st.Failures}
		if !st.LastGoodLoad.IsZero() {
			ss.LastGoodLoad = &st.LastGoodLoad
		}
		if st.LastError != nil {
			ss.LastError, ss.LastErrorTime = st.LastError.Error(), &st.LastErrorTime
		}
		out.Source = ss
	}
	writeJSON(w, http.StatusOK, out)
}

// current is the document in force: the one PUT last or the source's when
// its rules are the engine's, else one built from the engine's rules.
func (h *Handler) current() (*rules.Document, string, error) {
	inForce := h.eng.Rules()
	h.mu.Lock()
	put := h.lastPut
	h.mu.Unlock()
	if put != nil && sameRules(put.Rules(), inForce) {
		return put, "api", nil
	}
	if h.cf.source != nil {
		if d := h.cf.source.Document(); d != nil && sameRules(d.Rules(), inForce) {
			return d, "source", nil
		}
	}
	d, err := rules.FromRules(inForce)
	return d, "engine", err
}

func sameRules(a, b []flow.Rule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].WithDefaults(), b[i].WithDefaults()) {
			return false
		}
	}
	return true
}

// Snapshot is GET /api/snapshot: the engine's statistics (flow.Snapshot)
// in JSON, durations in seconds.
type Snapshot struct {
	// Decider says whose decisions Resources count: "engine" (the
	// engine's own calls) or "service" (WithSnapshots: for example a
	// token service's grants and refusals for its clients).
	Decider        string          `json:"decider"`
	Time           time.Time       `json:"time"` // on the engine's clock (the service's with WithSnapshots)
	AdaptiveFactor float64         `json:"adaptiveFactor"`
	SystemLimit    int64           `json:"systemLimit"`
	InFlight       int64           `json:"inFlight"`
	Resources      []ResourceStats `json:"resources"`
	Rules          []RuleStats     `json:"rules"`
	Breakers       []BreakerStats  `json:"breakers"`
	Cluster        ClusterStats    `json:"cluster"`
}

// BreakerStats is one circuit breaker rule (flow.BreakerStats): State is
// "closed", "open" or "half_open"; Transitions counts changes into each
// state since the rule was loaded.
type BreakerStats struct {
	ID            string            `json:"id"`
	Resource      string            `json:"resource"`
	Level         string            `json:"level"`
	Strategy      string            `json:"strategy"`
	State         string            `json:"state"`
	Completed     uint64            `json:"completed"`
	Bad           uint64            `json:"bad"`
	Measure       float64           `json:"measure"`
	Threshold     float64           `json:"threshold"`
	WindowSeconds float64           `json:"windowSeconds"`
	OpenKeys      int               `json:"openKeys"`
	HalfOpenKeys  int               `json:"halfOpenKeys"`
	Transitions   map[string]uint64 `json:"transitions"`
}

// ResourceStats is one resource (flow.ResourceStats); counts are totals
// since the engine started, Recent is the statistics window.
type ResourceStats struct {
	Resource string `json:"resource"`
	// Passed were admitted at once, Waited after queueing; Blocked by
	// level name ("ip", "user", "global", "system").
	Passed    uint64            `json:"passed"`
	Waited    uint64            `json:"waited"`
	Blocked   map[string]uint64 `json:"blocked"`
	Completed uint64            `json:"completed"`
	Errors    uint64            `json:"errors"`
	InFlight  int64             `json:"inFlight"`
	// AvgRTSeconds is the mean response time of completed calls.
	AvgRTSeconds   float64     `json:"avgRTSeconds"`
	AvgWaitSeconds float64     `json:"avgWaitSeconds"`
	Recent         WindowStats `json:"recent"`
}

// WindowStats is flow.WindowStats.
type WindowStats struct {
	Admitted     uint64  `json:"admitted"`
	Blocked      uint64  `json:"blocked"`
	Completed    uint64  `json:"completed"`
	Errors       uint64  `json:"errors"`
	AvgRTSeconds float64 `json:"avgRTSeconds"`
	MinRTSeconds float64 `json:"minRTSeconds"`
	MaxRTSeconds float64 `json:"maxRTSeconds"`
	SpanSeconds  float64 `json:"spanSeconds"`
}

// RuleStats is one rule in force (flow.RuleStats) with its refusals
// (flow.Engine.BlockedByRule).
type RuleStats struct {
	ID             string  `json:"id"`
	Resource       string  `json:"resource"`
	Level          string  `json:"level"`
	Algorithm      string  `json:"algorithm"`
	Limit          float64 `json:"limit"`
	EffectiveLimit float64 `json:"effectiveLimit"`
	WindowSeconds  float64 `json:"windowSeconds"`
	Keys           int     `json:"keys"`
	Adaptive       bool    `json:"adaptive"`
	Cluster        bool    `json:"cluster"`
	Blocked        uint64  `json:"blocked"`
	// AdaptiveConcurrency is a global adaptive_concurrency rule's limiter
	// now; absent for other rules.
	AdaptiveConcurrency *AdaptiveConcurrency `json:"adaptiveConcurrency,omitempty"`
}

// AdaptiveConcurrency is flow.AdaptiveStats.
type AdaptiveConcurrency struct {
	Limit           int64   `json:"limit"`
	InFlight        int64   `json:"inFlight"`
	ShortRTTSeconds float64 `json:"shortRTTSeconds"`
	LongRTTSeconds  float64 `json:"longRTTSeconds"`
}

// ClusterStats is flow.ClusterStats.
type ClusterStats struct {
	Requests  map[string]uint64 `json:"requests"`
	Fallbacks map[string]uint64 `json:"fallbacks"`
}

// getEnvoy answers the Envoy service's domains ({"domains": []} without one).
func (h *Handler) getEnvoy(w http.ResponseWriter, r *http.Request) {
	ds := []EnvoyDomain{}
	if h.cf.envoy != nil {
		if got := h.cf.envoy(); got != nil {
			ds = got
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"domains": ds})
}

func (h *Handler) getSnapshot(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.snapshot())
}

func (h *Handler) snapshot() Snapshot {
	s := h.eng.Snapshot()
	decider := "engine"
	if h.cf.snapshots != nil {
		d := h.cf.snapshots()
		s.Time, s.AdaptiveFactor, s.SystemLimit, s.Resources, s.Cluster = d.Time, d.AdaptiveFactor, d.SystemLimit, d.Resources, d.Cluster
		decider = "service"
	}
	byRule := h.eng.BlockedByRule()
	out := Snapshot{Decider: decider, Time: s.Time, AdaptiveFactor: s.AdaptiveFactor, SystemLimit: s.SystemLimit,
		Resources: make([]ResourceStats, 0, len(s.Resources)), Rules: make([]RuleStats, 0, len(s.Rules)),
		Cluster: ClusterStats{Requests: s.Cluster.Requests, Fallbacks: s.Cluster.Fallbacks}}
	for _, rs := range s.Resources {
		out.InFlight += rs.InFlight
		out.Resources = append(out.Resources, resourceStats(rs))
	}
	out.Breakers = make([]BreakerStats, 0, len(s.Breakers))
	for _, b := range s.Breakers {
		tr := map[string]uint64{}
		for i, n := range b.Transitions {
			tr[flow.BreakerState(i).String()] = n
		}
		out.Breakers = append(out.Breakers, BreakerStats{ID: b.ID, Resource: b.Resource, Level: b.Level.String(),
			Strategy: b.Strategy.String(), State: b.State.String(), Completed: b.Completed, Bad: b.Bad,
			Measure: b.Measure, Threshold: b.Threshold, WindowSeconds: b.Window.Seconds(),
			OpenKeys: b.OpenKeys, HalfOpenKeys: b.HalfOpenKeys, Transitions: tr})
	}
	for _, rl := range s.Rules {
		rs := RuleStats{ID: rl.ID, Resource: rl.Resource, Level: rl.Level.String(),
			Algorithm: rl.Algorithm.String(), Limit: rl.Limit, EffectiveLimit: rl.EffectiveLimit,
			WindowSeconds: rl.Window.Seconds(), Keys: rl.Keys, Adaptive: rl.Adaptive, Cluster: rl.Cluster, Blocked: byRule[rl.ID]}
		if a := rl.AdaptiveConcurrency; a != nil {
			rs.AdaptiveConcurrency = &AdaptiveConcurrency{Limit: a.Limit, InFlight: a.InFlight,
				ShortRTTSeconds: a.ShortRTT.Seconds(), LongRTTSeconds: a.LongRTT.Seconds()}
		}
		out.Rules = append(out.Rules, rs)
	}
	return out
}

// resourceStats is rs in JSON form.
func resourceStats(rs flow.ResourceStats) ResourceStats {
	blocked := map[string]uint64{}
	for l := flow.Level(0); l < flow.NumLevels; l++ {
		blocked[l.String()] = rs.Blocked[l]
	}
	return ResourceStats{
		Resource: rs.Resource, Passed: rs.Passed, Waited: rs.Waited, Blocked: blocked,
		Completed: rs.Completed, Errors: rs.Errors, InFlight: rs.InFlight,
		AvgRTSeconds: avg(rs.RTSum, rs.Completed), AvgWaitSeconds: avg(rs.WaitSum, rs.Waited),
		Recent: WindowStats{Admitted: rs.Recent.Admitted, Blocked: rs.Recent.Blocked, Completed: rs.Recent.Completed,
			Errors: rs.Recent.Errors, AvgRTSeconds: avg(rs.Recent.RTSum, rs.Recent.Completed),
			MinRTSeconds: rs.Recent.MinRT.Seconds(), MaxRTSeconds: rs.Recent.MaxRT.Seconds(), SpanSeconds: rs.Recent.Span.Seconds()},
	}
}

func avg(sum time.Duration, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return sum.Seconds() / float64(n)
}

// TopKeysResponse is GET /api/topkeys: one entry per user or ip rule.
type TopKeysResponse struct {
	Rules []RuleTopKeys `json:"rules"`
}

// RuleTopKeys is flow.RuleTopKeys.
type RuleTopKeys struct {
	RuleID      string     `json:"rule"`
	Resource    string     `json:"resource"`
	Level       string     `json:"level"`
	SpanSeconds float64    `json:"spanSeconds"`
	Keys        []KeyCount `json:"keys"`
}

// KeyCount is flow.KeyCount: Refused may be up to MaxError too high.
type KeyCount struct {
	Key      string `json:"key"`
	Refused  uint64 `json:"refused"`
	MaxError uint64 `json:"maxError"`
}

// maxTopN bounds ?n=, so one request cannot ask for every key held.
const maxTopN = 1000

func (h *Handler) getTopKeys(w http.ResponseWriter, r *http.Request) {
	n := 10
	if s := r.URL.Query().Get("n"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > maxTopN {
			writeError(w, http.StatusBadRequest, "n: want a whole number from 1 to "+strconv.Itoa(maxTopN)+", not "+strconv.Quote(s))
			return
		}
		n = v
	}
	out := TopKeysResponse{Rules: []RuleTopKeys{}}
	for _, rt := range h.eng.TopKeys(n) {
		keys := make([]KeyCount, len(rt.Keys))
		for i, k := range rt.Keys {
			keys[i] = KeyCount(k)
		}
		out.Rules = append(out.Rules, RuleTopKeys{RuleID: rt.RuleID, Resource: rt.Resource, Level: rt.Level.String(),
			SpanSeconds: rt.Span.Seconds(), Keys: keys})
	}
	writeJSON(w, http.StatusOK, out)
}

// KeyState is GET /api/key (flow.KeyState): Remaining is -1 for
// algorithms that do not count permits left.
type KeyState struct {
	Rule      string  `json:"rule"`
	Resource  string  `json:"resource"`
	Level     string  `json:"level"`
	Key       string  `json:"key"`
	Tracked   bool    `json:"tracked"`
	Limit     float64 `json:"limit"`
	Remaining float64 `json:"remaining"`
	Refused   uint64  `json:"refused"`
}

func (h *Handler) getKey(w http.ResponseWriter, r *http.Request) {
	rule, key, ok := ruleAndKey(w, r)
	if !ok {
		return
	}
	ks, err := h.eng.InspectKey(rule, key)
	if err != nil {
		writeKeyError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, KeyState{Rule: ks.RuleID, Resource: ks.Resource, Level: ks.Level.String(), Key: ks.Key,
		Tracked: ks.Tracked, Limit: ks.Limit, Remaining: ks.Remaining, Refused: ks.Refused})
}
