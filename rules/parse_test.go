package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/adaptive/cpuconfig"
	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/flow"
)

// designDoc is a full example document: rules of several kinds and both
// sections.
const designDoc = `{
  "rules": [
    {
      "id": "orders-per-user",
      "resource": "GET /orders",
      "level": "user",
      "algorithm": "token_bucket",
      "limit": 20, "window": "1s", "burst": 40,
      "maxWait": "0s",
      "maxKeys": 100000, "idleTTL": "10m",
      "adaptive": true,
      "cluster": { "threshold": "global", "fallback": "local" }
    }
  ],
  "adaptive": { "cpuTarget": 0.8 },
  "alerting": { "rejectionRatio": 0.3, "window": "1m", "minRequests": 100, "for": "30s" }
}`

func TestParseDesignDocument(t *testing.T) {
	doc, err := Parse([]byte(designDoc))
	if err != nil {
		t.Fatal(err)
	}
	want := []flow.Rule{{
		ID: "orders-per-user", Resource: "GET /orders", Level: flow.LevelUser, Algorithm: flow.AlgoTokenBucket,
		Limit: 20, Window: time.Second, Burst: 40, MaxKeys: 100000, IdleTTL: 10 * time.Minute,
		Adaptive: true, Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "local"},
	}}
	if got := doc.Rules(); !reflect.DeepEqual(got, want) {
		t.Errorf("Rules() = %+v\nwant %+v", got, want)
	}
	// The sections come back as their owners' types, the owners' defaults
	// filled in.
	wantA := cpuconfig.Defaults()
	if !reflect.DeepEqual(doc.Adaptive, &wantA) {
		t.Errorf("Adaptive = %+v, want %+v", doc.Adaptive, wantA)
	}
	wantL := &alerting.Section{Config: alerting.Config{RejectionRatio: 0.3, ResolveRatio: 0.8 * 0.3, Window: time.Minute, For: 30 * time.Second,
		Interval: 10 * time.Second, RepeatInterval: 4 * time.Hour, MinRequests: 100}}
	if !reflect.DeepEqual(doc.Alerting, wantL) {
		t.Errorf("Alerting = %+v, want %+v", doc.Alerting, wantL)
	}
	if err := flow.ValidateRules(doc.Rules()); err != nil {
		t.Errorf("the engine refuses what Parse accepted: %v", err)
	}
}

func TestParseDefaults(t *testing.T) {
	doc, err := Parse([]byte(`{"rules": [
		{"resource": "a", "algorithm": "token_bucket", "limit": 5},
		{"resource": "b", "algorithm": "warm_up", "limit": 5, "warmup": "3s", "level": "ip"},
		{"resource": "c", "algorithm": "sliding_window", "limit": 5, "cluster": {}}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Adaptive != nil || doc.Alerting != nil {
		t.Errorf("absent sections = %v, %v; want nil", doc.Adaptive, doc.Alerting)
	}
	got := doc.Rules()
	want := []flow.Rule{
		{Resource: "a", Algorithm: flow.AlgoTokenBucket, Limit: 5, Window: time.Second, Burst: 5},
		{Resource: "b", Level: flow.LevelIP, Algorithm: flow.AlgoWarmUp, Limit: 5, Window: time.Second,
			Warmup: 3 * time.Second, ColdFactor: 3, MaxKeys: 100000, IdleTTL: 10 * time.Minute},
		{Resource: "c", Algorithm: flow.AlgoSlidingWindow, Limit: 5, Window: time.Second, Buckets: 10,
			Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "local"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Rules() = %+v\nwant %+v", got, want)
	}
	got[2].Cluster.Fallback = "deny" // Rules hands out copies
	if doc.Rules()[2].Cluster.Fallback != "local" {
		t.Error("changing a returned ClusterSpec changed the document")
	}
}

// TestAdaptiveBandFollowsTarget: the band's defaults are package cpuconfig's
// (Config.WithDefaults), and the document gets them.
func TestAdaptiveBandFollowsTarget(t *testing.T) {
	for _, tc := range []struct{ target, low, high float64 }{
		{0.8, 0.7, 0.88}, {0.5, 0.4, 0.58}, {0.95, 0.85, 0.99}, {0.05, 0.01, 0.13},
	} {
		doc, err := Parse([]byte(fmt.Sprintf(`{"rules": [], "adaptive": {"cpuTarget": %v}}`, tc.target)))
		if err != nil {
			t.Fatal(err)
		}
		if a := doc.Adaptive; a.BandLow != tc.low || a.BandHigh != tc.high {
			t.Errorf("cpuTarget %v: band [%v, %v], want [%v, %v]", tc.target, a.BandLow, a.BandHigh, tc.low, tc.high)
		}
	}
}

func TestParseSkipsByteOrderMark(t *testing.T) {
	doc, err := Parse([]byte("\xef\xbb\xbf" + `{"rules": [{"resource": "a", "algorithm": "concurrency", "limit": 3}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := doc.Rules(); len(r) != 1 || r[0].Limit != 3 {
		t.Errorf("Rules() = %+v", r)
	}
	if _, err := Parse([]byte("\xef\xbb\xbf \n")); err == nil || err.Error() != "empty document" {
		t.Errorf("a byte order mark alone: %v, want empty document", err)
	}
}

func TestParseEmptyRuleList(t *testing.T) {
	doc, err := Parse([]byte(`{"rules": []}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(doc.Rules()); n != 0 {
		t.Errorf("len(Rules()) = %d, want 0", n)
	}
}

// TestExamples parses every examples/rules file, checks that together they
// use every algorithm and level, and that the normalised form parses back to
// the same rules.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/rules/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	algos := map[flow.Algorithm]bool{}
	levels := map[flow.Level]bool{}
	for _, f := range files {
		doc, err := LoadFile(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, r := range doc.Rules() {
			algos[r.Algorithm] = true
			levels[r.Level] = true
		}
		checkRoundTrip(t, doc)
	}
	for _, a := range flow.Algorithms() {
		if !algos[a] {
			t.Errorf("no example uses algorithm %v", a)
		}
	}
	for _, l := range flow.Levels() {
		if !levels[l] {
			t.Errorf("no example uses level %v", l)
		}
	}
}

func checkRoundTrip(t *testing.T, doc *Document) {
	t.Helper()
	out := doc.Format()
	again, err := Parse(out)
	if err != nil {
		t.Fatalf("the normalised form does not parse: %v\n%s", err, out)
	}
	if !bytes.Equal(again.Format(), out) {
		t.Errorf("Format is not stable:\n%s\nthen\n%s", out, again.Format())
	}
	if !reflect.DeepEqual(again.Rules(), doc.Rules()) || !reflect.DeepEqual(again.Adaptive, doc.Adaptive) ||
		!reflect.DeepEqual(again.Alerting, doc.Alerting) {
		t.Errorf("round trip changed the document:\n%s", out)
	}
}

func TestVersionIgnoresLayout(t *testing.T) {
	a, err := Parse([]byte(`{"rules": [{"resource": "a", "algorithm": "token_bucket", "limit": 5}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse([]byte("{\n \"rules\": [ {\"limit\": 5, \"window\": \"1000ms\", \"algorithm\": \"token_bucket\",\n \"resource\": \"a\", \"burst\": 5} ]\n}"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte(`{"rules": [{"resource": "a", "algorithm": "token_bucket", "limit": 6}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Version() != b.Version() {
		t.Errorf("same rules, different versions: %s vs %s", a.Version(), b.Version())
	}
	if a.Version() == c.Version() {
		t.Error("different limits, same version")
	}
	if len(a.Version()) != 64 {
		t.Errorf("Version() = %q, want 64 hex digits", a.Version())
	}
}

func TestFmtDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", time.Second: "1s", time.Minute: "1m", 90 * time.Minute: "1h30m", time.Hour: "1h",
		250 * time.Millisecond: "250ms", 61 * time.Second: "1m1s", 10 * time.Minute: "10m",
	} {
		if got := fmtDuration(d); got != want {
			t.Errorf("fmtDuration(%v) = %q, want %q", d, got, want)
		}
		if back, msg := parseDuration(fmtDuration(d)); msg != "" || back != d {
			t.Errorf("%q parses back to %v (%s)", fmtDuration(d), back, msg)
		}
	}
}

// FuzzParse checks that Parse never panics, that what it accepts the engine
// accepts too, and that the normalised form of an accepted document parses
// back to the same thing.
func FuzzParse(f *testing.F) {
	f.Add([]byte(designDoc))
	f.Add(manyRules(1000, `{}`))
	f.Add([]byte(`{"rules": [0, "x", [], {"rules": []}], "rules": [{}]}`))
	for _, tc := range badDocs {
		f.Add([]byte(tc.doc))
	}
	if files, _ := filepath.Glob("../examples/rules/*.json"); len(files) > 0 {
		for _, file := range files {
			if doc, err := LoadFile(file); err == nil {
				f.Add(doc.Format())
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkTree(t, data)
		doc, err := Parse(data)
		if err != nil {
			for _, e := range Problems(err) {
				fe, ok := e.(*FieldError)
				switch {
				case !ok:
					t.Fatalf("problem %q (%T) is not a *FieldError", e, e)
				case fe.Msg == "":
					t.Fatalf("problem at %q has no message", fe.Path())
				case fe.Path() == "" && fe.Msg != "empty document" && !strings.HasPrefix(fe.Msg, "more than"):
					t.Fatalf("problem %q has no path", fe.Msg)
				}
			}
			return
		}
		if err := flow.ValidateRules(doc.Rules()); err != nil {
			t.Fatalf("Parse accepted rules the engine refuses: %v", err)
		}
		checkRoundTrip(t, doc)
	})
}

// checkTree compares the hand-written tree reader with encoding/json.
func checkTree(t *testing.T, data []byte) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil || !json.Valid(data) {
		return
	}
	n, rulesText, err := parseTree(data)
	if err != nil {
		if len(bytes.TrimSpace(data)) == 0 {
			return
		}
		t.Fatalf("parseTree refused valid JSON: %v", err)
	}
	lazy := 0
	for _, m := range n.members {
		if m.val.lazy {
			lazy++
		}
	}
	if lazy > 1 { // the lazy text is the first array; encoding/json keeps the last
		return
	}
	if got := treeValue(n, rulesText); !reflect.DeepEqual(got, want) {
		t.Fatalf("parseTree = %#v\nencoding/json = %#v", got, want)
	}
}

// treeValue converts a tree to what encoding/json decodes into any (the last
// of repeated keys wins there). rulesText is the text of the lazy "rules"
// array, which the test reads as a tree of its own (for a second lazy
// array, given later, encoding/json's last value wins).
func treeValue(n *node, rulesText []byte) any {
	switch n.kind {
	case kindObject:
		m := map[string]any{}
		for _, mb := range n.members {
			if mb.val.lazy {
				m[mb.key] = lazyValue(rulesText)
				continue
			}
			m[mb.key] = treeValue(mb.val, nil)
		}
		return m
	case kindArray:
		a := []any{}
		for _, e := range n.elems {
			a = append(a, treeValue(e, nil))
		}
		return a
	case kindString:
		return n.text
	case kindNumber:
		return json.Number(n.text)
	case kindBool:
		return n.boolean
	}
	return nil
}

// lazyValue reads a lazy array's text as treeValue reads a tree, through
// elements, and checks the count elements returns.
func lazyValue(text []byte) any {
	a := []any{}
	n := elements(text, func(_ int, e *node) bool {
		a = append(a, treeValue(e, nil))
		return true
	})
	if n != len(a) {
		return fmt.Sprintf("elements counted %d, read %d", n, len(a))
	}
	return a
}

func TestTreeMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		`{"a": [1, -2.5e+3, true, false, null, "x\"y\\z\u00e9\ud83d\ude00", {}, []], "b": {"c": "\u0041"}}`,
		"[\"\xff\xfe\", \"caf\xc3\xa9\"]", ` 7 `, `"s"`, `{"a":1,"a":2}`, "[\n1 ,\t2\r]",
		`{"rules": []}`, `{"rules":[ 1 , "a\"]}[" , true,null,-2e3,{"x":[{"rules":[]}]}, [[]], "\\"],"b":{"rules":[1]}}`,
		`{"a": {"rules": [7]}, "rules": [{"id": "r"}, {}]}`,
	} {
		checkTree(t, []byte(s))
	}
}

// fmt writes only the fields that apply: a concurrency rule has no window
// and no maxWait, and its output parses again (the parser refuses both).
func TestFormatConcurrencyLeavesOutWindowAndMaxWait(t *testing.T) {
	doc, err := Parse([]byte(`{"rules": [{"id": "c", "resource": "r", "algorithm": "concurrency", "limit": 4},
		{"id": "t", "resource": "r", "algorithm": "token_bucket", "limit": 4}]}`))
	if err != nil {
		t.Fatal(err)
	}
	out := string(doc.Format())
	conc, tb, _ := strings.Cut(out, `"id": "t"`)
	for _, field := range []string{`"window"`, `"maxWait"`} {
		if strings.Contains(conc, field) {
			t.Errorf("the concurrency rule was written with %s:\n%s", field, out)
		}
		if !strings.Contains(tb, field) {
			t.Errorf("the token_bucket rule lost %s:\n%s", field, out)
		}
	}
	again, err := Parse([]byte(out))
	if err != nil {
		t.Fatalf("fmt's output does not parse: %v\n%s", err, out)
	}
	if got, want := again.Version(), doc.Version(); got != want {
		t.Errorf("version after a round trip %s, want %s", got, want)
	}
}
