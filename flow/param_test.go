package flow

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A param rule counts per value of its parameter, items give single values
// their own limit, other values and calls without the parameter are
// untouched.
func TestParamRuleWithItems(t *testing.T) {
	r := fw("per-tenant", "r", LevelParam, 3, time.Minute)
	r.Param = "tenant"
	r.Items = map[string]float64{"vip": 5, "free": 1}
	e, clk := newTestEngine(t, r)
	tenant := func(v string) EntryOption { return WithParam("tenant", v) }
	for _, c := range []struct {
		value string
		want  string
	}{
		{"acme", "pass pass pass per-tenant per-tenant"}, // the rule's limit
		{"globex", "pass pass pass per-tenant"},          // its own count
		{"vip", "pass pass pass pass pass per-tenant"},   // an item above the limit
		{"free", "pass per-tenant"},                      // an item below it
	} {
		n := len(strings.Fields(c.want))
		if got := seq(t, e, "r", n, tenant(c.value)); got != c.want {
			t.Errorf("tenant %q: got %q, want %q", c.value, got, c.want)
		}
	}
	// No tenant, an empty one, or another parameter only: not checked.
	if got := seq(t, e, "r", 6, WithParam("region", "acme")); got != "pass pass pass pass pass pass" {
		t.Errorf("without the parameter: got %q", got)
	}
	if got := seq(t, e, "r", 2, tenant("")); got != "pass pass" {
		t.Errorf("empty value: got %q", got)
	}
	// The refusal names the rule, the param level, and the item's limit.
	_, err := e.Entry("r", WithParam("other", "x"), tenant("vip"))
	var be *BlockError
	if !errors.As(err, &be) || be.Level != LevelParam || be.RuleID != "per-tenant" || be.Limit != 5 {
		t.Fatalf("got %v (%+v), want a param-level refusal of per-tenant at limit 5", err, be)
	}
	// A new window admits every value again, each at its own limit.
	clk.Advance(time.Minute)
	if got := seq(t, e, "r", 2, tenant("free")); got != "pass per-tenant" {
		t.Errorf("next window, free: got %q", got)
	}
	if got := seq(t, e, "r", 4, tenant("acme")); got != "pass pass pass per-tenant" {
		t.Errorf("next window, acme: got %q", got)
	}
}

// Several parameters per call: each rule reads its own; the last value of
// a name given twice wins.
func TestSeveralParams(t *testing.T) {
	a := fw("a", "r", LevelParam, 1, time.Minute)
	a.Param = "tenant"
	b := fw("b", "r", LevelParam, 2, time.Minute)
	b.Param = "host"
	e, _ := newTestEngine(t, a, b)
	if got := try(t, e, "r", WithParam("host", "h1"), WithParam("tenant", "t0"), WithParam("tenant", "t1")); got != "" {
		t.Fatalf("first call refused by %q", got)
	}
	if got := try(t, e, "r", WithParam("tenant", "t0"), WithParam("host", "h1")); got != "" {
		t.Fatalf("t0 was not counted (the last tenant was t1): refused by %q", got)
	}
	if got := try(t, e, "r", WithParam("tenant", "t2"), WithParam("host", "h1")); got != "b" {
		t.Fatalf("third call on h1: refused by %q, want b", got)
	}
	// Five params: the fifth spills past the array and is still found.
	if got := try(t, e, "r", WithParam("x1", "1"), WithParam("x2", "2"), WithParam("x3", "3"), WithParam("x4", "4"), WithParam("tenant", "t1")); got != "a" {
		t.Fatalf("fifth param: refused by %q, want a", got)
	}
}

// Items on the user and ip levels.
func TestItemsOnUserAndIP(t *testing.T) {
	u := fw("u", "r", LevelUser, 1, time.Minute)
	u.Items = map[string]float64{"bot": 3}
	ip := fw("ip", "r", LevelIP, 2, time.Minute)
	ip.Items = map[string]float64{"10.0.0.9": 4, "2001:db8::1": 1}
	e, _ := newTestEngine(t, u, ip)
	if got := seq(t, e, "r", 4, WithUser("bot")); got != "pass pass pass u" {
		t.Errorf("user item: got %q", got)
	}
	if got := seq(t, e, "r", 2, WithUser("eve")); got != "pass u" {
		t.Errorf("user default: got %q", got)
	}
	if got := seq(t, e, "r", 5, WithIP("10.0.0.9")); got != "pass pass pass pass ip" {
		t.Errorf("ip item: got %q", got)
	}
	if got := seq(t, e, "r", 3, WithIP("10.0.0.8")); got != "pass pass ip" {
		t.Errorf("ip default: got %q", got)
	}
	if got := seq(t, e, "r", 2, WithIP("2001:db8::1")); got != "pass ip" {
		t.Errorf("ip item below the limit: got %q", got)
	}
}

// A refusal at any level gives back what the earlier levels took: ip ->
// user -> param -> global.
func TestRefundsAcrossAllLevels(t *testing.T) {
	ip := fw("ip", "r", LevelIP, 10, time.Minute)
	user := fw("user", "r", LevelUser, 10, time.Minute)
	param := fw("param", "r", LevelParam, 2, time.Minute)
	param.Param = "tenant"
	global := fw("global", "r", LevelGlobal, 3, time.Minute)
	e, _ := newTestEngine(t, ip, user, param, global)
	x := []EntryOption{WithIP("10.0.0.1"), WithUser("u")}
	call := func(tenant string) string { return try(t, e, "r", append(x, WithParam("tenant", tenant))...) }
	got := []string{call("a"), call("a"), call("a"), call("b"), call("c"), call("c")}
	want := []string{"", "", "param", "", "global", "global"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %q, want %q", got, want)
	}
	// Three calls passed: each keyed level kept exactly those 3; the param
	// refusal and the global refusals gave back what ip, user and param took.
	for _, c := range []struct {
		lvl  Level
		key  string
		want float64
	}{{LevelIP, "10.0.0.1", 7}, {LevelUser, "u", 7}, {LevelParam, "c", 2}, {LevelParam, "a", 0}} {
		cr := ruleAt(e, c.lvl)
		lim, _ := cr.limiterFor(c.key, e.now())
		if r := testRemaining(lim, e.now()); r != c.want {
			t.Errorf("%v %q remaining: got %v, want %v", c.lvl, c.key, r, c.want)
		}
	}
	st := e.Snapshot().Resources[0]
	if st.Passed != 3 || st.Blocked[LevelParam] != 1 || st.Blocked[LevelGlobal] != 2 {
		t.Fatalf("stats: passed %d, blocked %v", st.Passed, st.Blocked)
	}
}

// Param keys are bounded by maxKeys and forgotten after idleTTL.
func TestParamKeysBounded(t *testing.T) {
	r := fw("p", "r", LevelParam, 1, time.Hour)
	r.Param, r.MaxKeys, r.IdleTTL = "k", 2, time.Minute
	e, clk := newTestEngine(t, r)
	for _, v := range []string{"a", "b", "c"} {
		try(t, e, "r", WithParam("k", v))
	}
	if n := e.Snapshot().Rules[0].Keys; n != 2 {
		t.Fatalf("keys: got %d, want 2 (maxKeys)", n)
	}
	if got := try(t, e, "r", WithParam("k", "c")); got != "p" {
		t.Fatalf("c again: got %q, want refused (still tracked)", got)
	}
	clk.Advance(2 * time.Minute)
	if got := try(t, e, "r", WithParam("k", "c")); got != "" {
		t.Fatalf("c after idleTTL: refused by %q, want a fresh start", got)
	}
}

// A circuit breaker at the param level keeps one breaker per value.
func TestParamLevelBreaker(t *testing.T) {
	r := Rule{ID: "b", Resource: "r", Level: LevelParam, Param: "host", Algorithm: AlgoCircuitBreaker,
		Strategy: BreakerErrorCount, Threshold: 2, MinRequests: 2, Window: 10 * time.Second, OpenFor: 5 * time.Second}
	e, _ := newTestEngine(t, r)
	host := func(h string) EntryOption { return WithParam("host", h) }
	for range 2 {
		p, err := e.Entry("r", host("down"))
		if err != nil {
			t.Fatal(err)
		}
		p.Exit(WithError(errors.New("failed")))
	}
	if got := try(t, e, "r", host("down")); got != "b" {
		t.Fatalf("host down after 2 errors: %q, want refused by b", got)
	}
	if got := try(t, e, "r", host("up")); got != "" {
		t.Fatalf("another host: refused by %q", got)
	}
}
