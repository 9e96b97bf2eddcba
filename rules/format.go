package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// The normalised form: fields in the document's order, defaults written
// out, fields that do not apply to a rule's algorithm or level left out, and
// durations in their shortest Go form ("1m", not "1m0s").
type (
	docJSON struct {
		Schema   string        `json:"$schema,omitempty"`
		Shadow   bool          `json:"shadow,omitempty"`
		Rules    []ruleJSON    `json:"rules"`
		Adaptive *adaptiveJSON `json:"adaptive,omitempty"`
		Alerting *alertingJSON `json:"alerting,omitempty"`
	}
	ruleJSON struct {
		ID          string             `json:"id,omitempty"`
		Resource    string             `json:"resource"`
		RefResource string             `json:"refResource,omitempty"`
		Level       string             `json:"level"`
		Param       string             `json:"param,omitempty"`
		Algorithm   string             `json:"algorithm"`
		Values      []string           `json:"values,omitempty"` // allow and deny only
		Limit       float64            `json:"limit,omitempty"`  // not for circuit_breaker, adaptive_concurrency, allow, deny
		Items       map[string]float64 `json:"items,omitempty"`  // encoding/json sorts the keys
		Window      string             `json:"window,omitempty"` // not for concurrency, adaptive_concurrency, allow, deny
		Burst       float64            `json:"burst,omitempty"`
		Warmup      string             `json:"warmup,omitempty"`
		ColdFactor  float64            `json:"coldFactor,omitempty"`
		Buckets     int                `json:"buckets,omitempty"`
		MaxWait     string             `json:"maxWait,omitempty"` // not for concurrency or circuit_breaker
		MaxKeys     int                `json:"maxKeys,omitempty"`
		IdleTTL     string             `json:"idleTTL,omitempty"`
		Adaptive    *bool              `json:"adaptive,omitempty"`
		Cluster     *clusterJSON       `json:"cluster,omitempty"`
		// circuit_breaker only
		Strategy    string  `json:"strategy,omitempty"`
		Threshold   float64 `json:"threshold,omitempty"`
		MinRequests int     `json:"minRequests,omitempty"`
		OpenFor     string  `json:"openFor,omitempty"`
		Probes      int     `json:"probes,omitempty"`
		SlowCall    string  `json:"slowCall,omitempty"`
		// adaptive_concurrency
		InitialLimit int     `json:"initialLimit,omitempty"`
		MinLimit     int     `json:"minLimit,omitempty"`
		MaxLimit     int     `json:"maxLimit,omitempty"`
		Tolerance    float64 `json:"tolerance,omitempty"`
		Smoothing    float64 `json:"smoothing,omitempty"`
		// concurrency and adaptive_concurrency
		Reserve *reserveJSON `json:"reserve,omitempty"`
		// any algorithm; written only when true
		Shadow bool `json:"shadow,omitempty"`
	}
	reserveJSON struct {
		Critical float64 `json:"critical"`
		High     float64 `json:"high"`
		Normal   float64 `json:"normal"`
	}
	clusterJSON struct {
		Threshold string `json:"threshold"`
		Fallback  string `json:"fallback"`
	}
	adaptiveJSON struct {
		CPUTarget float64 `json:"cpuTarget"`
		BandLow   float64 `json:"bandLow"`
		BandHigh  float64 `json:"bandHigh"`
		MinFactor float64 `json:"minFactor"`
		Period    string  `json:"period"`
		CPUSource string  `json:"cpuSource"`
		SystemCPU float64 `json:"systemCPU,omitempty"` // 0: the guard is off
	}
	alertingJSON struct {
		RejectionRatio float64 `json:"rejectionRatio"`
		ResolveRatio   float64 `json:"resolveRatio"`
		Window         string  `json:"window"`
		For            string  `json:"for"`
		Interval       string  `json:"interval"`
		RepeatInterval string  `json:"repeatInterval"`
		MinRequests    int     `json:"minRequests"`
		Webhook        string  `json:"webhook,omitempty"`
	}
)

// Format returns the document in normalised form: stable field order,
// defaults filled in, two-space indentation, a final newline. Parsing the
// result gives an equal Document.
func (d *Document) Format() []byte {
	out := docJSON{Schema: d.Schema, Shadow: d.Shadow, Rules: make([]ruleJSON, 0, len(d.rules))}
	for _, r := range d.rules {
		out.Rules = append(out.Rules, formatRule(r))
	}
	if a := d.Adaptive; a != nil {
		out.Adaptive = &adaptiveJSON{a.CPUTarget, a.BandLow, a.BandHigh, a.MinFactor, fmtDuration(a.Period), string(a.CPUSource), a.SystemGuard.CPU}
	}
	if s := d.Alerting; s != nil {
		a := s.Config
		out.Alerting = &alertingJSON{a.RejectionRatio, a.ResolveRatio, fmtDuration(a.Window), fmtDuration(a.For),
			fmtDuration(a.Interval), fmtDuration(a.RepeatInterval), a.MinRequests, s.Webhook}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		panic("rules: formatting a validated document: " + err.Error()) // only plain types above
	}
	return buf.Bytes()
}

func formatRule(r flow.Rule) ruleJSON {
	j := ruleJSON{
		ID: r.ID, Resource: r.Resource, RefResource: r.RefResource, Level: r.Level.String(), Param: r.Param,
		Algorithm: r.Algorithm.String(), Values: r.Values, Items: r.Items,
		Limit: r.Limit, Burst: r.Burst, ColdFactor: r.ColdFactor,
		Buckets: r.Buckets, MaxKeys: r.MaxKeys,
		InitialLimit: r.InitialLimit, MinLimit: r.MinLimit, MaxLimit: r.MaxLimit,
		Tolerance: r.Tolerance, Smoothing: r.Smoothing, Shadow: r.Shadow,
	}
	if isList(r.Algorithm) {
		j.Window = "" // a list has no window, limit or wait; the parser refuses them
		return j
	}
	if r.Algorithm == flow.AlgoCircuitBreaker {
		j.Strategy, j.Threshold, j.MinRequests, j.Probes = r.Strategy.String(), r.Threshold, r.MinRequests, r.Probes
		j.OpenFor = fmtDuration(r.OpenFor)
		if r.SlowCall != 0 {
			j.SlowCall = fmtDuration(r.SlowCall)
		}
	} else {
		adaptive := r.Adaptive
		j.MaxWait, j.Adaptive = fmtDuration(r.MaxWait), &adaptive
	}
	if r.Window != 0 {
		j.Window = fmtDuration(r.Window)
	}
	if res := r.Reserve; res != nil {
		j.Reserve = &reserveJSON{res.Critical, res.High, res.Normal}
	}
	if r.Algorithm == flow.AlgoConcurrency || r.Algorithm == flow.AlgoAdaptiveConcurrency {
		j.Window, j.MaxWait = "", "" // they do not apply; the parser refuses them
	}
	if r.RefResource != "" {
		j.MaxWait = "" // never queues; the parser refuses it
	}
	if r.Warmup != 0 {
		j.Warmup = fmtDuration(r.Warmup)
	}
	if r.IdleTTL != 0 {
		j.IdleTTL = fmtDuration(r.IdleTTL)
	}
	if c := r.Cluster; c != nil {
		j.Cluster = &clusterJSON{c.Threshold, c.Fallback}
	}
	return j
}

// Version identifies the document's content: the hex SHA-256 of its
// normalised form, so whitespace, field order and spelled-out defaults do
// not change it.
func (d *Document) Version() string {
	sum := sha256.Sum256(d.Format())
	return hex.EncodeToString(sum[:])
}

// fmtDuration writes d in Go's syntax without the zero units Duration.String
// adds: 1m rather than 1m0s, 1h30m rather than 1h30m0s.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
