package cluster

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// TestShadowClusterRuleSideBySide: one engine on a real Redis token server
// holds the same ip-level cluster rule twice, enforcing on one resource and
// in shadow on the other, each followed by an enforcing user-level rule
// that refuses the user "spent" (and only that user): so the cluster rule
// sees its permits refunded when a later level refuses, on both resources
// alike. Fed the same calls, the shadow copy lets every call through that
// the later rule admits, and counts a would-be refusal exactly when the
// enforcing copy refused.
func TestShadowClusterRuleSideBySide(t *testing.T) {
	srv := redistest.Start(t)
	ts := newServer(t, srv.Client())
	base := uniq("shadow")
	var rs []flow.Rule
	for _, name := range []string{"enf", "sh"} {
		c := crule(name+"-c", base+name, flow.AlgoFixedWindow, 5, time.Hour)
		c.Level, c.Shadow = flow.LevelIP, name == "sh"
		later := flow.Rule{ID: name + "-later", Resource: base + name, Level: flow.LevelUser,
			Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Hour}
		rs = append(rs, c, later)
	}
	e := newEngine(t, ts, t0, rs...)
	count := func() uint64 { return e.Snapshot().Rules[2].ShadowBlocked }
	var enfRefused, laterRefused int
	for i := range 40 {
		user := "u" + strconv.Itoa(i)
		if i%3 == 1 {
			user = "spent" // refused by the later rule from its second call on
		}
		opts := []flow.EntryOption{flow.WithIP("192.0.2.1"), flow.WithUser(user)}
		pe, errE := e.Entry(base+"enf", opts...)
		before := count()
		ps, errS := e.Entry(base+"sh", opts...)
		counted := count() - before
		var be *flow.BlockError
		byRule := errors.As(errE, &be) && be.RuleID == "enf-c"
		if byRule {
			enfRefused++
		}
		if (counted == 1) != byRule || counted > 1 {
			t.Fatalf("call %d: shadow counted %d; enforcing copy: %v", i, counted, errE)
		}
		if errS != nil {
			if !errors.As(errS, &be) || be.RuleID != "sh-later" {
				t.Fatalf("call %d: shadow resource refused by %v, want only sh-later", i, errS)
			}
			laterRefused++
		}
		pe.Exit()
		ps.Exit()
	}
	if enfRefused == 0 || laterRefused == 0 {
		t.Fatalf("trace did not exercise both: %d refused by the cluster rule, %d by the later rule", enfRefused, laterRefused)
	}
	if got := count(); got != uint64(enfRefused) {
		t.Errorf("ShadowBlocked = %d, want %d", got, enfRefused)
	}
	t.Logf("40 calls: the enforcing cluster rule refused %d, the later rule %d", enfRefused, laterRefused)
}
