package sentinel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// outRule is one flowgate rule in the rules document's JSON form, with the
// field names rules.Parse reads. rules.Parse checks it and Format orders it, so only the fields
// a mapping sets are written.
type outRule struct {
	ID          string             `json:"id,omitempty"`
	Resource    string             `json:"resource"`
	Level       string             `json:"level,omitempty"`
	Param       string             `json:"param,omitempty"`
	RefResource string             `json:"refResource,omitempty"`
	Algorithm   string             `json:"algorithm"`
	Limit       float64            `json:"limit,omitempty"`
	Window      string             `json:"window,omitempty"`
	Burst       float64            `json:"burst,omitempty"`
	Warmup      string             `json:"warmup,omitempty"`
	ColdFactor  float64            `json:"coldFactor,omitempty"`
	Buckets     int                `json:"buckets,omitempty"`
	MaxWait     string             `json:"maxWait,omitempty"`
	MaxKeys     int                `json:"maxKeys,omitempty"`
	Items       map[string]float64 `json:"items,omitempty"`
	Values      []string           `json:"values,omitempty"`
	Cluster     *outCluster        `json:"cluster,omitempty"`
	Strategy    string             `json:"strategy,omitempty"`
	Threshold   float64            `json:"threshold,omitempty"`
	MinRequests int                `json:"minRequests,omitempty"`
	OpenFor     string             `json:"openFor,omitempty"`
	Probes      int                `json:"probes,omitempty"`
	SlowCall    string             `json:"slowCall,omitempty"`
}

type outCluster struct {
	Threshold string `json:"threshold"`
	Fallback  string `json:"fallback"`
}

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

func marshalDoc(rs []outRule, sys system) ([]byte, error) {
	if rs == nil {
		rs = []outRule{}
	}
	doc := struct {
		Rules    []outRule    `json:"rules"`
		Adaptive *outAdaptive `json:"adaptive,omitempty"`
	}{Rules: rs}
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

// ms and sec turn Sentinel's integer fields into Go duration strings.
func ms(n int64) string  { return (time.Duration(n) * time.Millisecond).String() }
func sec(n int64) string { return (time.Duration(n) * time.Second).String() }

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
