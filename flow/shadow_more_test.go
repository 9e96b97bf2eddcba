package flow

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// Shadow cluster rules are asked in a request of their own: the token
// server's refusal of them lets the call through, counted, and never
// refuses the level's enforcing cluster rules.
func TestShadowClusterRuleAskedApartAndNeverRefuses(t *testing.T) {
	ts := &fakeTokenServer{res: TokenResult{Refused: 0, RetryAfter: time.Second}, instances: 1}
	sh := cfw("csh", LevelGlobal, 10, "global", "deny")
	sh.Shadow = true
	e, _ := clusterEngine(t, ts, sh)
	for i := range 3 {
		p, err := e.Entry("r")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		p.Exit()
	}
	if got := shadowCount(e, "csh"); got != 3 {
		t.Errorf("ShadowBlocked = %d, want 3", got)
	}
	// With an enforcing cluster rule beside it: two requests, one each.
	ts.acquired = nil
	ts.res = TokenResult{Allowed: true, Refused: -1}
	enf := cfw("cenf", LevelGlobal, 10, "global", "deny")
	if err := e.LoadRules([]Rule{enf, sh}); err != nil {
		t.Fatal(err)
	}
	try(t, e, "r")
	if len(ts.acquired) != 2 || ts.acquired[0].Rules[0].ID != "cenf" || ts.acquired[1].Rules[0].ID != "csh" ||
		len(ts.acquired[0].Rules) != 1 || len(ts.acquired[1].Rules) != 1 {
		t.Fatalf("requests: %+v, want one for cenf then one for csh", ts.acquired)
	}
}

// Unreachable token server: a shadow rule's "deny" fallback is a would-be
// refusal, and a "local" fallback's refusal too.
func TestShadowClusterFallbacks(t *testing.T) {
	ts := &fakeTokenServer{err: errDown, instances: 1}
	deny := cfw("deny", LevelGlobal, 10, "global", "deny")
	local := cfw("local", LevelGlobal, 1, "global", "local")
	deny.Shadow, local.Shadow = true, true
	e, _ := clusterEngine(t, ts, deny, local)
	for i := range 3 {
		if got := try(t, e, "r"); got != "" {
			t.Fatalf("call %d refused by %q", i, got)
		}
	}
	if d, l := shadowCount(e, "deny"), shadowCount(e, "local"); d != 3 || l != 2 {
		t.Errorf("ShadowBlocked deny %d local %d, want 3 and 2", d, l)
	}
}

// A shadow cluster grant is refunded like any when a later level refuses.
func TestShadowClusterGrantRefunded(t *testing.T) {
	ts := &fakeTokenServer{res: TokenResult{Allowed: true, Refused: -1}, instances: 1}
	sh := cfw("cip", LevelIP, 10, "global", "deny")
	sh.Shadow = true
	e, _ := clusterEngine(t, ts, sh, fw("g", "r", LevelGlobal, 1, time.Hour))
	try(t, e, "r", WithIP("x"))
	if got := try(t, e, "r", WithIP("x")); got != "g" {
		t.Fatalf("got %q, want g", got)
	}
	if len(ts.released) != 1 || !ts.relReqs[0].Refund {
		t.Fatalf("released %+v, want the shadow grant refunded once", ts.relReqs)
	}
}

// A would-be refusal is logged once, at debug, and only there.
func TestShadowLogsAtDebugOnly(t *testing.T) {
	for _, lvl := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: lvl}))
		r := fw("fw", "r", LevelGlobal, 1, time.Hour)
		r.Shadow = true
		e := NewEngine(WithClock(clock.NewFake(t0)), WithLogger(log))
		if err := e.LoadRules([]Rule{r}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			try(t, e, "r")
		}
		lines := strings.Count(buf.String(), "shadow rule would have refused")
		want := 0
		if lvl == slog.LevelDebug {
			want = 2
			if !strings.Contains(buf.String(), "level=DEBUG") || !strings.Contains(buf.String(), "rule=fw") {
				t.Errorf("log: %s", buf.String())
			}
		}
		if lines != want {
			t.Errorf("handler at %v: %d lines, want %d:\n%s", lvl, lines, want, buf.String())
		}
	}
}

// The CPU controller's shedding of low-priority calls follows enforcing
// adaptive rules only: a shadow one never has a call refused for it.
func TestShadowAdaptiveRuleShedsNoLowCall(t *testing.T) {
	r := Rule{ID: "a", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1e9, Adaptive: true, Shadow: true}
	e, _ := newTestEngine(t, r)
	e.SetAdaptiveFactor(0.1)
	for i := range 200 {
		if got := try(t, e, "r", WithPriority(PriorityLow)); got != "" {
			t.Fatalf("low call %d refused by %q", i, got)
		}
	}
	r.Shadow = false
	if err := e.LoadRules([]Rule{r}); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for range 200 {
		if try(t, e, "r", WithPriority(PriorityLow)) != "" {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("enforcing: no low call shed at factor 0.1; the check above proves nothing")
	}
}

// Decide decides as Entry does: a shadow rule over its limit admits, and
// counts, without allocating.
func TestShadowDecide(t *testing.T) {
	r := fw("fw", "r", LevelGlobal, 1, time.Hour)
	r.Shadow = true
	e, _ := newTestEngine(t, r)
	call := func() {
		d := e.Decide("r")
		if !d.Allowed || d.Err() != nil {
			t.Fatalf("Decide: %+v", d.Block)
		}
		d.Permit.Exit()
	}
	call()
	if n := testing.AllocsPerRun(100, call); n != 0 && !raceEnabled {
		t.Errorf("%v allocs per Decide through a shadow refusal, want 0", n)
	}
	if got := shadowCount(e, "fw"); got != 101 {
		t.Errorf("ShadowBlocked = %d, want 101", got)
	}
}
