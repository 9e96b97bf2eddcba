package flow

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// Lists and RefResource rules in shadow, side by side with enforcing
// copies on one engine and one clock.Fake, like the shadow suite: each
// enforcing rule has a resource of its own ("enf-deny", "enf-allow",
// "enf-ref"), so every one of them decides every call, and "sh" holds the
// three shadow copies together (checked in the same order, none of them
// refusing, so each sees every call too). Both RefResource rules watch
// "read", so their limiters are fed the same traffic. At every call "sh"
// must let the call through, and each shadow rule must count a would-be
// refusal exactly when its enforcing copy refused the call.
func TestShadowListsAndRefsCountExactlyTheEnforcingRefusals(t *testing.T) {
	deny := Rule{Level: LevelIP, Algorithm: AlgoDeny, Values: []string{"10.0.0.0/24", "192.168.1.7", "2001:db8::/32"}}
	allow := Rule{Level: LevelUser, Algorithm: AlgoAllow, Values: []string{"alice", "bob"}}
	ref := Rule{Level: LevelGlobal, Algorithm: AlgoFixedWindow, Limit: 20, Window: time.Second, RefResource: "read"}
	var rules []Rule
	for _, c := range []struct {
		name string
		r    Rule
	}{{"deny", deny}, {"allow", allow}, {"ref", ref}} {
		enf, sh := c.r, c.r
		enf.ID, enf.Resource = "enf-"+c.name, "enf-"+c.name
		sh.ID, sh.Resource, sh.Shadow = "sh-"+c.name, "sh", true
		rules = append(rules, enf, sh)
	}
	e, clk := newTestEngine(t, rules...)

	ips := []string{"10.0.0.1", "10.0.0.200", "10.0.1.1", "192.168.1.7", "192.168.1.8", "2001:db8::1", "2001:db9::1", ""}
	users := []string{"alice", "bob", "mallory", ""}
	rng := rand.New(rand.NewPCG(3, 4))
	refused := map[string]int{}
	calls := 4000
	if raceEnabled {
		calls = 800
	}
	for i := range calls {
		clk.Advance(time.Duration(rng.IntN(150)) * time.Millisecond)
		for range rng.IntN(4) { // the watched resource's traffic
			p, err := e.Entry("read", WithTokens(1+rng.IntN(2)))
			if err != nil {
				t.Fatalf("call %d: read refused: %v", i, err)
			}
			p.Exit()
		}
		var opts []EntryOption
		if ip := ips[rng.IntN(len(ips))]; ip != "" {
			opts = append(opts, WithIP(ip))
		}
		if u := users[rng.IntN(len(users))]; u != "" {
			opts = append(opts, WithUser(u))
		}
		byRule := map[string]bool{}
		for _, name := range []string{"deny", "allow", "ref"} {
			p, err := e.Entry("enf-"+name, opts...)
			if err != nil {
				var be *BlockError
				if !errors.As(err, &be) || be.RuleID != "enf-"+name {
					t.Fatalf("call %d: enf-%s refused by another: %v", i, name, err)
				}
				byRule[name] = true
				refused[name]++
				continue
			}
			p.Exit()
		}
		before := map[string]uint64{}
		for _, name := range []string{"deny", "allow", "ref"} {
			before[name] = shadowCount(e, "sh-"+name)
		}
		p, err := e.Entry("sh", opts...)
		if err != nil {
			t.Fatalf("call %d: a resource with only shadow rules refused: %v", i, err)
		}
		p.Exit()
		for _, name := range []string{"deny", "allow", "ref"} {
			counted := shadowCount(e, "sh-"+name) - before[name]
			if (counted == 1) != byRule[name] || counted > 1 {
				t.Fatalf("call %d: sh-%s counted %d, enforcing copy refused: %v", i, name, counted, byRule[name])
			}
		}
	}
	s := e.Snapshot()
	for _, name := range []string{"deny", "allow", "ref"} {
		if refused[name] == 0 || refused[name] == calls {
			t.Fatalf("trace did not exercise enf-%s: it refused %d of %d", name, refused[name], calls)
		}
		var got uint64
		var shadow bool
		for _, r := range s.Rules {
			if r.ID == "sh-"+name {
				got, shadow = r.ShadowBlocked, r.Shadow
			}
		}
		if !shadow || got != uint64(refused[name]) {
			t.Errorf("sh-%s: Shadow %v, ShadowBlocked %d; want true, %d (the enforcing copy's refusals)", name, shadow, got, refused[name])
		}
		t.Logf("%d calls: enf-%s refused %d", calls, name, refused[name])
	}
	// A would-be refusal is no refusal: "sh" blocked nothing, by a list
	// or otherwise, and its lists' refusals are not counted as such.
	for _, r := range s.Resources {
		if r.Resource != "sh" {
			continue
		}
		if r.Passed != uint64(calls) || r.Blocked != ([NumLevels]uint64{}) || r.Denied != ([NumLevels]uint64{}) || r.NotAllowed != ([NumLevels]uint64{}) {
			t.Errorf("sh stats: passed %d of %d, blocked %v, denied %v, not allowed %v", r.Passed, calls, r.Blocked, r.Denied, r.NotAllowed)
		}
	}
	if got := e.BlockedByRule(); got["sh-deny"] != 0 || got["sh-allow"] != 0 || got["sh-ref"] != 0 {
		t.Errorf("BlockedByRule counts shadow rules' would-be refusals: %v", got)
	}
}

// A param rule's item follows its rule's shadow: it never refuses, and its
// would-be refusals are counted on the rule.
func TestShadowParamItemCountsOnItsRule(t *testing.T) {
	r := Rule{Level: LevelParam, Param: "tenant", Algorithm: AlgoFixedWindow, Limit: 3, Window: time.Minute,
		Items: map[string]float64{"big": 5}}
	enf, sh := r, r
	enf.ID, enf.Resource = "enf", "enf"
	sh.ID, sh.Resource, sh.Shadow = "sh", "sh", true
	e, _ := newTestEngine(t, enf, sh)
	refused := 0
	for _, tenant := range []string{"big", "big", "big", "big", "big", "big", "big", "small", "small", "small", "small"} {
		if _, err := e.Entry("enf", WithParam("tenant", tenant)); err != nil {
			refused++
		}
		if _, err := e.Entry("sh", WithParam("tenant", tenant)); err != nil {
			t.Fatalf("shadow param rule refused tenant %s: %v", tenant, err)
		}
	}
	if refused != 3 { // big: 7 calls, item limit 5; small: 4 calls, limit 3
		t.Fatalf("enforcing copy refused %d, want 3", refused)
	}
	if got := shadowCount(e, "sh"); got != uint64(refused) {
		t.Errorf("sh ShadowBlocked = %d, want %d", got, refused)
	}
}
