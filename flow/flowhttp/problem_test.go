package flowhttp

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// AppendJSON must decode to exactly what encoding/json's own encoding of the
// same Problem decodes to.
func checkProblemJSON(t *testing.T, p Problem) {
	t.Helper()
	mine := p.AppendJSON(nil)
	if !json.Valid(mine) {
		t.Fatalf("AppendJSON wrote invalid JSON: %s", mine)
	}
	ref, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var got, want Problem
	if err := json.Unmarshal(mine, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ref, &want); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("AppendJSON decodes to %+v, encoding/json to %+v\nmine: %s\nref:  %s", got, want, mine, ref)
	}
}

func TestProblemAppendJSON(t *testing.T) {
	for _, id := range []string{"orders", `q"uo\te`, "tab\tnl\ncr\r", "<script>&", "\x00\x1f\x7f", "é世界", "bad\xffutf8", "\u2028\u2029", ""} {
		be := &flow.BlockError{Refuser: &flow.Refuser{RuleID: id, Reason: flow.ReasonRateLimited, Level: flow.LevelUser}, RetryAfter: 2 * time.Second}
		checkProblemJSON(t, NewProblem(be))
	}
	got := string(NewProblem(&flow.BlockError{Refuser: &flow.Refuser{RuleID: "r", Reason: "rate limited"}, RetryAfter: time.Second}).AppendJSON(nil))
	want := `{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"rate limited at the global level by rule \"r\"","retryAfter":1,"level":"global","rule":"r"}`
	if got != want {
		t.Errorf("AppendJSON =\n%s\nwant\n%s", got, want)
	}
}

func FuzzProblemAppendJSON(f *testing.F) {
	f.Add("orders", "rate limited", int64(1500))
	f.Add("\xff\x00<", "\u2028", int64(0))
	f.Fuzz(func(t *testing.T, id, reason string, retryMs int64) {
		be := &flow.BlockError{Refuser: &flow.Refuser{RuleID: id, Reason: reason}, RetryAfter: time.Duration(retryMs) * time.Millisecond}
		checkProblemJSON(t, NewProblem(be))
	})
}
