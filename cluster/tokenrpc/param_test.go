package tokenrpc

import (
	"context"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
)

// TestResolveParamAndItems: a served rule with items decides an item value
// with the item's rule (as the client's engine would), interned per value;
// other values get the document's rule; a reload is seen; and the param a
// request names must be its rules' (and only at the param level).
func TestResolveParamAndItems(t *testing.T) {
	ts := &stubTS{res: flow.TokenResult{Allowed: true, Refused: -1}}
	tenant := rule("per-tenant", "res")
	tenant.Level, tenant.Param = flow.LevelParam, "tenant"
	tenant.Items = map[string]float64{"vip": 60, "gold": 60, "bronze": 7}
	user := rule("per-user", "res")
	user.Level, user.Items = flow.LevelUser, map[string]float64{"bob": 3}
	doc := map[string]*flow.Rule{"per-tenant": &tenant, "per-user": &user}
	srv, err := NewServer(ts, func(id string) (*flow.Rule, bool) { r, ok := doc[id]; return r, ok })
	if err != nil {
		t.Fatal(err)
	}
	call := func(in *tokenpb.AcquireRequest) (*tokenpb.AcquireResponse, []*flow.Rule) {
		t.Helper()
		out, err := srv.Acquire(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != tokenpb.Status_STATUS_OK {
			return out, nil
		}
		return out, ts.last().Rules
	}
	param := func(value string) *tokenpb.AcquireRequest {
		return &tokenpb.AcquireRequest{Resource: "res", Level: tokenpb.Level_LEVEL_PARAM, Param: "tenant", Key: value,
			Tokens: 1, RuleIds: []string{"per-tenant"}}
	}
	_, vip := call(param("vip"))
	if len(vip) != 1 || vip[0].Limit != 60 || vip[0].ID != "per-tenant" || vip[0].Param != "tenant" || vip[0].Items != nil {
		t.Fatalf("vip decided by %+v, want the item's rule (limit 60, no items)", vip)
	}
	if _, again := call(param("vip")); again[0] != vip[0] {
		t.Fatalf("item rule %p then %p, want one interned rule per value", vip[0], again[0])
	}
	// Items with the same limit share their rule (one plan on the token
	// server); another limit has its own.
	if _, gold := call(param("gold")); gold[0] != vip[0] {
		t.Fatalf("gold (60) decided by %p, want vip's rule %p", gold[0], vip[0])
	}
	if _, bronze := call(param("bronze")); bronze[0].Limit != 7 || bronze[0] == vip[0] {
		t.Fatalf("bronze decided by %+v, want a rule of its own with limit 7", bronze[0])
	}
	if _, acme := call(param("acme")); acme[0] != &tenant {
		t.Fatalf("acme decided by %+v, want the document's rule", acme[0])
	}
	if got := ts.last(); got.Level != flow.LevelParam || got.Key != "acme" {
		t.Fatalf("request level %v key %q, want param and acme", got.Level, got.Key)
	}
	// User items by id: the same way.
	_, bob := call(&tokenpb.AcquireRequest{Resource: "res", Level: tokenpb.Level_LEVEL_USER, Key: "bob", Tokens: 1, RuleIds: []string{"per-user"}})
	if bob[0].Limit != 3 {
		t.Fatalf("user item decided by limit %v, want 3", bob[0].Limit)
	}
	// A reload that changes the item's limit is seen.
	reloaded := tenant.Clone()
	reloaded.Items["vip"] = 90
	doc["per-tenant"] = &reloaded
	if _, vip2 := call(param("vip")); vip2[0].Limit != 90 {
		t.Fatalf("after reload vip limit %v, want 90", vip2[0].Limit)
	}
	// Inline: the client sends the item's own rule, which decides as sent.
	item, _ := tenant.ForItem("vip")
	in := acquireReq("res", item)
	in.Level, in.Param, in.Key = tokenpb.Level_LEVEL_PARAM, "tenant", "vip"
	if _, got := call(in); got[0].Limit != 60 || got[0].Param != "tenant" {
		t.Fatalf("inline item decided by %+v, want limit 60 of param tenant", got[0])
	}

	wrong := param("vip")
	wrong.Param = "host"
	noParam := param("vip")
	noParam.Param = ""
	atUser := &tokenpb.AcquireRequest{Resource: "res", Level: tokenpb.Level_LEVEL_USER, Param: "tenant", Key: "bob", Tokens: 1, RuleIds: []string{"per-user"}}
	for _, tc := range []struct {
		name string
		in   *tokenpb.AcquireRequest
		msg  string
	}{
		{"other param", wrong, `counts param "tenant", not "host"`},
		{"no param at param level", noParam, `param: "" at level param`},
		{"param at user level", atUser, `param: "tenant" at level user`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, _ := call(tc.in); out.Status != tokenpb.Status_STATUS_BAD_REQUEST || !strings.Contains(out.Message, tc.msg) {
				t.Fatalf("got %v %q, want BAD_REQUEST containing %q", out.Status, out.Message, tc.msg)
			}
		})
	}
}
