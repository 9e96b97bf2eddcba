package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/adaptive/cpuconfig"
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
		// The boost: written when it is on, or its thresholds are not
		// those the band gives.
		BoostFactor float64 `json:"boostFactor,omitempty"`
		BoostBelow  float64 `json:"boostBelow,omitempty"`
		BoostAbove  float64 `json:"boostAbove,omitempty"`
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
	w := newRuleWriter()
	for _, r := range d.rules {
		out.Rules = append(out.Rules, w.rule(r))
	}
	if a := d.Adaptive; a != nil {
		out.Adaptive = &adaptiveJSON{a.CPUTarget, a.BandLow, a.BandHigh, a.MinFactor, fmtDuration(a.Period), string(a.CPUSource), a.SystemGuard.CPU,
			a.Boost.Factor, 0, 0}
		band := cpuconfig.Config{CPUTarget: a.CPUTarget, BandLow: a.BandLow, BandHigh: a.BandHigh}.WithDefaults()
		if a.Boost.Factor > 0 || a.Boost != (cpuconfig.Boost{Below: band.Boost.Below, Above: band.Boost.Above}) {
			out.Adaptive.BoostBelow, out.Adaptive.BoostAbove = a.Boost.Below, a.Boost.Above
		}
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

// ruleWriter writes rules as JSON objects into one buffer, with one
// encoder that does not escape HTML characters (as Format writes the whole
// document), so that writing a large document does not allocate per field.
type ruleWriter struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func newRuleWriter() *ruleWriter {
	w := &ruleWriter{}
	w.enc = json.NewEncoder(&w.buf)
	w.enc.SetEscapeHTML(false)
	return w
}

// rule writes r: the fields of the table (flow.RuleFields) in its order,
// each that the document may give on such a rule and that is set (or,
// like maxWait, whose zero is a setting), durations in their shortest
// form. The result stays valid while w writes more rules.
func (w *ruleWriter) rule(r flow.Rule) json.RawMessage {
	start := w.buf.Len()
	w.buf.WriteByte('{')
	for i := range ruleFields {
		f := &ruleFields[i]
		if !f.Written(&r) || empty(f.Ptr(&r)) {
			continue
		}
		if w.buf.Len() > start+1 {
			w.buf.WriteByte(',')
		}
		w.plain(f.Name)
		w.buf.WriteByte(':')
		w.field(f.Ptr(&r))
	}
	w.buf.WriteByte('}')
	return w.buf.Bytes()[start:w.buf.Len():w.buf.Len()]
}

// empty reports an empty list or map, which the document leaves out.
func empty(p any) bool {
	switch p := p.(type) {
	case *[]string:
		return len(*p) == 0
	case *map[string]float64:
		return len(*p) == 0
	}
	return false
}

// field writes the value of a rule field given by its pointer
// (flow.RuleField.Ptr). Numbers are written as encoding/json writes them.
func (w *ruleWriter) field(p any) {
	b := w.buf.AvailableBuffer()
	switch p := p.(type) {
	case *float64:
		w.buf.Write(appendFloat(b, *p))
	case *int:
		w.buf.Write(strconv.AppendInt(b, int64(*p), 10))
	case *bool:
		w.buf.Write(strconv.AppendBool(b, *p))
	case *time.Duration:
		w.plain(fmtDuration(*p))
	case *flow.Level:
		w.plain(p.String())
	case *flow.Algorithm:
		w.plain(p.String())
	case *flow.BreakerStrategy:
		w.plain(p.String())
	case **flow.ClusterSpec:
		w.value(clusterJSON{(*p).Threshold, (*p).Fallback})
	case **flow.Reserve:
		w.value(reserveJSON{(*p).Critical, (*p).High, (*p).Normal})
	case *string:
		w.str(*p)
	case *[]string:
		w.value(*p)
	case *map[string]float64:
		w.value(*p) // encoding/json sorts the keys
	default:
		panic(fmt.Sprintf("rules: no JSON form for a rule field of type %T", p))
	}
}

// plain writes a string that needs no escaping (names, durations).
func (w *ruleWriter) plain(s string) {
	w.buf.WriteByte('"')
	w.buf.WriteString(s)
	w.buf.WriteByte('"')
}

// str writes a string as encoding/json does: plain when it has nothing to
// escape, else through the encoder.
func (w *ruleWriter) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			w.value(s)
			return
		}
	}
	w.plain(s)
}

// value writes v with the encoder, without its newline.
func (w *ruleWriter) value(v any) {
	if err := w.enc.Encode(v); err != nil {
		panic("rules: formatting a validated document: " + err.Error()) // only plain types
	}
	w.buf.Truncate(w.buf.Len() - 1)
}

// appendFloat appends f as encoding/json writes a float64: the shortest
// decimal, in exponent form below 1e-6 and from 1e21, with a one-digit
// negative exponent written without its leading zero (1e-7, not 1e-07).
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
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
func RuleJSON(r flow.Rule) json.RawMessage { return newRuleWriter().rule(r) }
