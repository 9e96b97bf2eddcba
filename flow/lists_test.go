package flow

import (
	"errors"
	"testing"
)

func list(id string, algo Algorithm, lvl Level, values ...string) Rule {
	return Rule{ID: id, Resource: "r", Level: lvl, Algorithm: algo, Values: values}
}

// Deny and allow lists by IP (v4, v6, CIDRs of both, mapped v4), by user
// and by param, and what a call without the identity gets.
func TestLists(t *testing.T) {
	deny := list("nets", AlgoDeny, LevelIP, "10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::ffff:198.51.100.0/120", "0.0.0.0/0")
	deny.Values = deny.Values[:4] // the /0 below, in its own case
	users := list("users", AlgoAllow, LevelUser, "alice", "bob")
	origins := list("origins", AlgoAllow, LevelParam, "web", "mobile")
	origins.Param = "origin"
	javaWhite := origins
	javaWhite.AllowMissing = true
	banned := list("banned", AlgoDeny, LevelParam, "evil")
	banned.Param = "tenant"
	for _, c := range []struct {
		name  string
		rules []Rule
		opts  []EntryOption
		want  string // refusing rule, "" for a pass
	}{
		{"v4 in CIDR", []Rule{deny}, []EntryOption{WithIP("10.1.2.3")}, "nets"},
		{"v4 exact", []Rule{deny}, []EntryOption{WithIP("192.0.2.7")}, "nets"},
		{"v4 next to exact", []Rule{deny}, []EntryOption{WithIP("192.0.2.8")}, ""},
		{"v4 outside", []Rule{deny}, []EntryOption{WithIP("11.0.0.1")}, ""},
		{"v6 in CIDR", []Rule{deny}, []EntryOption{WithIP("2001:db8:1::5")}, "nets"},
		{"v6 outside", []Rule{deny}, []EntryOption{WithIP("2001:db9::1")}, ""},
		{"mapped v4 caller", []Rule{deny}, []EntryOption{WithIP("::ffff:10.9.9.9")}, "nets"},
		{"mapped v4 prefix", []Rule{deny}, []EntryOption{WithIP("198.51.100.77")}, "nets"},
		{"v6 prefix from flowhttp", []Rule{deny}, []EntryOption{WithIP("2001:db8:5::/64")}, "nets"},
		{"no ip passes a deny list", []Rule{deny}, nil, ""},
		{"not an ip passes a deny list", []Rule{deny}, []EntryOption{WithIP("nope")}, ""},
		{"/0 denies everything", []Rule{list("all", AlgoDeny, LevelIP, "0.0.0.0/0")}, []EntryOption{WithIP("1.2.3.4")}, "all"},
		{"v4 /0 leaves v6", []Rule{list("all", AlgoDeny, LevelIP, "0.0.0.0/0")}, []EntryOption{WithIP("::1")}, ""},
		{"allow ip list admits its own", []Rule{list("lan", AlgoAllow, LevelIP, "192.168.0.0/16", "fd00::/8")}, []EntryOption{WithIP("fd12::1")}, ""},
		{"allow ip list refuses others", []Rule{list("lan", AlgoAllow, LevelIP, "192.168.0.0/16")}, []EntryOption{WithIP("8.8.8.8")}, "lan"},
		{"allow ip list refuses no ip", []Rule{list("lan", AlgoAllow, LevelIP, "192.168.0.0/16")}, nil, "lan"},
		{"user on allow list", []Rule{users}, []EntryOption{WithUser("bob")}, ""},
		{"user not on allow list", []Rule{users}, []EntryOption{WithUser("eve")}, "users"},
		{"no user, allow list", []Rule{users}, nil, "users"},
		{"param on allow list", []Rule{origins}, []EntryOption{WithParam("origin", "web")}, ""},
		{"param off allow list", []Rule{origins}, []EntryOption{WithParam("origin", "cli")}, "origins"},
		{"other param only, allow list", []Rule{origins}, []EntryOption{WithParam("tenant", "web")}, "origins"},
		{"no param, allowMissing", []Rule{javaWhite}, nil, ""},
		{"empty param, allowMissing", []Rule{javaWhite}, []EntryOption{WithParam("origin", "")}, ""},
		{"param off list, allowMissing", []Rule{javaWhite}, []EntryOption{WithParam("origin", "cli")}, "origins"},
		{"param on list, allowMissing", []Rule{javaWhite}, []EntryOption{WithParam("origin", "mobile")}, ""},
		{"param on deny list", []Rule{banned}, []EntryOption{WithParam("tenant", "evil")}, "banned"},
		{"param off deny list", []Rule{banned}, []EntryOption{WithParam("tenant", "good")}, ""},
		{"ip checked before user", []Rule{users, deny}, []EntryOption{WithIP("10.0.0.1"), WithUser("eve")}, "nets"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, _ := newTestEngine(t, c.rules...)
			if got := try(t, e, "r", c.opts...); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// A list refusal: its level, a reason naming the kind of list, counted by
// level and kind, and taking nothing from the limits behind it.
func TestListRefusal(t *testing.T) {
	limit := fw("g", "r", LevelGlobal, 1, 60e9)
	e, _ := newTestEngine(t, list("nets", AlgoDeny, LevelIP, "10.0.0.0/8"), list("users", AlgoAllow, LevelUser, "alice"), limit)
	_, err := e.Entry("r", WithIP("10.0.0.1"), WithUser("alice"))
	var be *BlockError
	if !errors.As(err, &be) || be.Level != LevelIP || be.Reason != ReasonDenied || be.RuleID != "nets" {
		t.Fatalf("got %v, want a deny at the ip level by nets", err)
	}
	_, err = e.Entry("r", WithIP("11.0.0.1"), WithUser("eve"))
	if !errors.As(err, &be) || be.Level != LevelUser || be.Reason != ReasonNotAllowed || be.RuleID != "users" {
		t.Fatalf("got %v, want not allowed at the user level by users", err)
	}
	if got := try(t, e, "r", WithIP("11.0.0.1"), WithUser("alice")); got != "" {
		t.Fatalf("the limit was taken by refused calls: %q", got)
	}
	st := e.Snapshot().Resources[0]
	if st.Denied[LevelIP] != 1 || st.NotAllowed[LevelUser] != 1 || st.Blocked[LevelIP] != 1 || st.Blocked[LevelUser] != 1 {
		t.Fatalf("counts: denied %v, not allowed %v, blocked %v", st.Denied, st.NotAllowed, st.Blocked)
	}
}
