package sentinel

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// importRules imports one file and returns its reports and rules.
func importRules(t *testing.T, data string, opts Options) ([]Report, []flow.Rule) {
	t.Helper()
	res, err := Import([]File{{Name: "f.json", Data: []byte(data)}}, opts)
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return res.Reports, res.Document.Rules()
}

// TestImportGoBreakerBuckets: a sentinel-golang breaker keeps its bucket
// count exactly: the rule's when it divides statIntervalMs, else (and by
// default) one, a tumbling window.
func TestImportGoBreakerBuckets(t *testing.T) {
	for _, tc := range []struct {
		field   string // statSlidingWindowBucketCount, "" for none
		buckets int
	}{{"", 1}, {`,"statSlidingWindowBucketCount":0`, 1}, {`,"statSlidingWindowBucketCount":10`, 10},
		{`,"statSlidingWindowBucketCount":1`, 1}, {`,"statSlidingWindowBucketCount":3`, 1}, {`,"statSlidingWindowBucketCount":50`, 50}} {
		data := `[{"resource":"r","strategy":1,"retryTimeoutMs":3000,"minRequestAmount":10,"statIntervalMs":5000,"threshold":0.4` + tc.field + `}]`
		reps, rs := importRules(t, data, Options{})
		if reps[0].Verdict != Exact || len(rs) != 1 {
			t.Fatalf("%s: %s, %d rules; want exact, one rule", data, reps[0], len(rs))
		}
		if rs[0].Buckets != tc.buckets {
			t.Errorf("%s: buckets %d, want %d", data, rs[0].Buckets, tc.buckets)
		}
	}
}

// TestImportGoErrorCount: sentinel-golang compares errors with the
// threshold truncated to a whole number; below 1 it opens on successes
// too, which error_count cannot say.
func TestImportGoErrorCount(t *testing.T) {
	reps, rs := importRules(t, `[{"resource":"r","strategy":2,"retryTimeoutMs":1000,"statIntervalMs":1000,"threshold":5.7}]`, Options{})
	if reps[0].Verdict != Exact || rs[0].Threshold != 5 {
		t.Errorf("threshold 5.7: %s threshold %v, want exact 5", reps[0], rs[0].Threshold)
	}
	// No minRequestAmount: sentinel-golang may open at the first outcome.
	if rs[0].MinRequests != 1 {
		t.Errorf("no minRequestAmount: minRequests %d, want 1", rs[0].MinRequests)
	}
	reps, _ = importRules(t, `[{"resource":"r","strategy":2,"retryTimeoutMs":1000,"statIntervalMs":1000,"threshold":0.5}]`, Options{})
	if reps[0].Verdict != Cannot || !strings.Contains(reps[0].Note, "errors or not") {
		t.Errorf("threshold 0.5: %s, want cannot saying why", reps[0])
	}
}

// TestImportJavaDegradeFields: what each Java DegradeRule becomes: one
// bucket (Java's breakers always count one), error count + 1 (Java opens
// above count), Java's ratio edge cases, the slow call rounded as Java's
// Math.round does.
func TestImportJavaDegradeFields(t *testing.T) {
	for _, tc := range []struct {
		rule      string
		strategy  flow.BreakerStrategy
		threshold float64
		slowCall  time.Duration
	}{
		{`"grade":2,"count":30`, flow.BreakerErrorCount, 31, 0},
		{`"grade":2,"count":0`, flow.BreakerErrorCount, 1, 0},
		{`"grade":2,"count":4.5`, flow.BreakerErrorCount, 5, 0},
		{`"grade":1,"count":0.4`, flow.BreakerErrorRatio, 0.4, 0},
		{`"grade":1,"count":0`, flow.BreakerErrorRatio, math.SmallestNonzeroFloat64, 0},
		{`"grade":1,"count":1`, flow.BreakerErrorRatio, 1, 0},
		{`"grade":0,"count":50,"slowRatioThreshold":0.5`, flow.BreakerSlowRatio, 0.5, 50 * time.Millisecond},
		{`"grade":0,"count":50.5`, flow.BreakerSlowRatio, math.Nextafter(1, 0), 51 * time.Millisecond},
		{`"grade":0,"count":50.4,"slowRatioThreshold":0`, flow.BreakerSlowRatio, math.SmallestNonzeroFloat64, 50 * time.Millisecond},
	} {
		data := `[{"resource":"r","limitApp":"default","timeWindow":2,` + tc.rule + `}]`
		reps, rs := importRules(t, data, Options{})
		if reps[0].Verdict != Exact || len(rs) != 1 {
			t.Fatalf("%s: %s, %d rules; want exact, one rule", data, reps[0], len(rs))
		}
		r := rs[0]
		if r.Strategy != tc.strategy || r.Threshold != tc.threshold || r.SlowCall != tc.slowCall || r.Buckets != 1 ||
			r.Window != time.Second || r.MinRequests != 5 || r.OpenFor != 2*time.Second {
			t.Errorf("%s: %v threshold %v slowCall %v buckets %d window %v minRequests %d openFor %v; want %v %v %v 1 1s 5 2s",
				data, r.Strategy, r.Threshold, r.SlowCall, r.Buckets, r.Window, r.MinRequests, r.OpenFor, tc.strategy, tc.threshold, tc.slowCall)
		}
	}
}

// TestImportJavaAuthorityFields: a white list lets a call without an
// origin through (allowMissing); entries are Java's comma-separated
// pieces, spaces kept, empty and repeated ones dropped.
func TestImportJavaAuthorityFields(t *testing.T) {
	for _, tc := range []struct {
		rule    string
		algo    flow.Algorithm
		missing bool
		values  string
		verdict Verdict
	}{
		{`"limitApp":"web,mobile","strategy":0`, flow.AlgoAllow, true, "web|mobile", Exact},
		{`"limitApp":"web, mobile,,web,","strategy":0`, flow.AlgoAllow, true, "web| mobile", Exact},
		{`"limitApp":"crawler","strategy":1`, flow.AlgoDeny, false, "crawler", Exact},
		{`"limitApp":" ","strategy":0`, 0, false, "", Cannot},
		{`"limitApp":",,","strategy":1`, 0, false, "", Cannot},
	} {
		data := `[{"resource":"r",` + tc.rule + `}]`
		reps, rs := importRules(t, data, Options{Dialect: Java})
		if reps[0].Verdict != tc.verdict {
			t.Fatalf("%s: %s, want %v", data, reps[0], tc.verdict)
		}
		if tc.verdict == Cannot {
			continue
		}
		r := rs[0]
		if r.Algorithm != tc.algo || r.AllowMissing != tc.missing || strings.Join(r.Values, "|") != tc.values || r.Param != "origin" {
			t.Errorf("%s: %v allowMissing %v values %q param %q; want %v %v %q origin", data, r.Algorithm, r.AllowMissing, r.Values, r.Param, tc.algo, tc.missing, tc.values)
		}
	}
}
