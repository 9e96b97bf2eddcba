package sentinel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// system gathers what Sentinel's system rules map to: the document's
// adaptive section. Sentinel checks every system rule, so the lowest CPU
// trigger is the one that acts.
type system struct {
	set    bool
	cpuMin float64
}

func (s *system) cpu(v float64) {
	if !s.set || v < s.cpuMin {
		s.set, s.cpuMin = true, v
	}
}

type outAdaptive struct {
	SystemCPU float64 `json:"systemCPU"`
}

// marshalDoc writes the rules document holding rs, each as the document
// writes a rule (rules.RuleJSON: the fields of flow's table that are set),
// and the adaptive section the system rules map to.
func marshalDoc(rs []flow.Rule, sys system) ([]byte, error) {
	doc := struct {
		Rules    []json.RawMessage `json:"rules"`
		Adaptive *outAdaptive      `json:"adaptive,omitempty"`
	}{Rules: make([]json.RawMessage, len(rs))}
	for i, r := range rs {
		doc.Rules[i] = rules.RuleJSON(r)
	}
	if sys.set {
		doc.Adaptive = &outAdaptive{SystemCPU: sys.cpuMin}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("sentinel: encoding the document: %w", err)
	}
	return buf.Bytes(), nil
}

// ms and sec turn Sentinel's integer fields into durations.
func ms(n int64) time.Duration  { return time.Duration(n) * time.Millisecond }
func sec(n int64) time.Duration { return time.Duration(n) * time.Second }

// num formats a figure for a report note.
func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// paramName names a call argument by its index.
func paramName(opts Options, idx int64) string {
	if n, ok := opts.ParamNames[int(idx)]; ok {
		return n
	}
	return fmt.Sprintf("arg%d", idx)
}

// notes joins what differs into one report note.
type notes []string

func (n *notes) add(format string, args ...any) { *n = append(*n, fmt.Sprintf(format, args...)) }

func (n notes) verdict() (Verdict, string) {
	if len(n) == 0 {
		return Exact, ""
	}
	s := n[0]
	for _, x := range n[1:] {
		s += "; " + x
	}
	return Approx, s
}
