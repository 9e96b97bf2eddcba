package rules

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// TestBoundsNamedFromConstants (issue 33, B13): a value past a bound is
// refused with the bound that holds, read from its constant: "maxKeys":
// 1e300 names flow.MaxKeysLimit (not flow.MaxCount, the bound of every
// whole number), a limit whose one permit takes longer than
// flow.MaxPermitInterval (4.9e-324 per second) is refused, and a limit of
// one per flow.MaxDuration is not.
func TestBoundsNamedFromConstants(t *testing.T) {
	const rule = `{"rules": [{"id": "a", "resource": "r", "level": "ip", "algorithm": "token_bucket", %s}]}`
	hours := strconv.Itoa(int(flow.MaxDuration/time.Hour)) + "h"
	for _, tc := range []struct {
		fields    string
		want, not string
	}{
		{`"limit": 1, "maxKeys": 1e300`, "maxKeys: 1e300: out of range (at most " + strconv.Itoa(flow.MaxKeysLimit) + ")", strconv.Itoa(flow.MaxCount)},
		{`"limit": 1, "maxKeys": 300000000`, "maxKeys: must be at most " + strconv.Itoa(flow.MaxKeysLimit), strconv.Itoa(flow.MaxCount)},
		{`"limit": 1e300`, "limit: 1e300: out of range (at most 1e15)", ""},
		{`"limit": 1, "window": "9000h"`, `window: "9000h": out of range (at most ` + hours + ")", ""},
		{`"limit": 1, "idleTTL": "99999999999h"`, `idleTTL: "99999999999h": out of range (at most ` + hours + ")", "2562047h"},
		{`"limit": 4.9e-324`, "flow.MaxPermitInterval", ""},
		{`"limit": 1e-9, "window": "1s"`, "one permit may take at most " + hours, ""},
	} {
		_, err := Parse([]byte(strings.Replace(rule, "%s", tc.fields, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) || tc.not != "" && strings.Contains(err.Error(), tc.not) {
			t.Errorf("%s: got %v\nwant %q (and not %q)", tc.fields, err, tc.want, tc.not)
		}
	}
	doc := strings.Replace(rule, "%s", `"limit": 1, "window": "`+hours+`"`, 1)
	if _, err := Parse([]byte(doc)); err != nil {
		t.Errorf("one permit per %s: %v, want accepted", hours, err)
	}
}
