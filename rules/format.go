package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// The normalised form: fields in the document's order, defaults written
// out, fields that do not apply to a rule's algorithm or level left out, and
// durations in their shortest Go form ("1m", not "1m0s").
type (
	docJSON struct {
		Schema   string            `json:"$schema,omitempty"`
		Shadow   bool              `json:"shadow,omitempty"`
		Rules    []json.RawMessage `json:"rules"`
		Adaptive *adaptiveJSON     `json:"adaptive,omitempty"`
		Alerting *alertingJSON     `json:"alerting,omitempty"`
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
	out := docJSON{Schema: d.Schema, Shadow: d.Shadow, Rules: make([]json.RawMessage, 0, len(d.rules))}
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

// formatRule writes r, defaults filled, as a JSON object: the fields of
// the table (flow.RuleFields) in its order, each that the document may give
// on such a rule and that is set (or, like maxWait, whose zero is a
// setting), durations in their shortest form.
func formatRule(r flow.Rule) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range ruleFields {
		f := &ruleFields[i]
		v, ok := fieldValue(f.Ptr(&r))
		if !ok || !f.Written(&r) {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(marshal(f.Name))
		b.WriteByte(':')
		b.Write(marshal(v))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// fieldValue is the JSON value of a rule field given by its pointer
// (flow.RuleField.Ptr); false for an empty list or map, which the
// document leaves out.
func fieldValue(p any) (any, bool) {
	switch p := p.(type) {
	case *time.Duration:
		return fmtDuration(*p), true
	case *flow.Level:
		return p.String(), true
	case *flow.Algorithm:
		return p.String(), true
	case *flow.BreakerStrategy:
		return p.String(), true
	case *[]string:
		return *p, len(*p) > 0
	case *map[string]float64:
		return *p, len(*p) > 0 // encoding/json sorts the keys
	case **flow.ClusterSpec:
		if c := *p; c != nil {
			return clusterJSON{c.Threshold, c.Fallback}, true
		}
		return nil, false
	case **flow.Reserve:
		if r := *p; r != nil {
			return reserveJSON{r.Critical, r.High, r.Normal}, true
		}
		return nil, false
	case *string:
		return *p, true
	case *float64:
		return *p, true
	case *int:
		return *p, true
	case *bool:
		return *p, true
	}
	panic(fmt.Sprintf("rules: no JSON form for a rule field of type %T", p))
}

// marshal encodes a plain value as JSON without escaping HTML characters,
// as Format writes the whole document.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("rules: formatting a validated document: " + err.Error()) // only plain types
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
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

// RuleJSON returns r as a rules document writes a rule: the fields of
// flow's table (flow.RuleFields) in its order, those the document may give
// on such a rule that are set, durations in their shortest form. Format
// writes each rule so, defaults filled; a converter (rules/sentinel) writes
// its rules so, without them, and parses the result.
func RuleJSON(r flow.Rule) json.RawMessage { return formatRule(r) }
