package envoyrls

import (
	"errors"
	"strings"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// shopYAML exercises the matching rules: exact values over wildcards over
// key-only defaults, nesting, whitelisting by a value with no limit.
const shopYAML = `
domain: shop
descriptors:
  - key: tenant
    value: acme
    descriptors:
      - key: path
        rate_limit: {unit: second, requests_per_unit: 5}
      - key: path
        value: /checkout
        rate_limit: {unit: second, requests_per_unit: 10}
  - key: client
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: client
    value: vip
    rate_limit: {unit: minute, requests_per_unit: 30}
  - key: client
    value: internal
  - key: route
    value: api/*
    rate_limit: {unit: hour, requests_per_unit: 7}
  - key: route
    value: api/v1
    rate_limit: {unit: hour, requests_per_unit: 8}
  - key: route
    value: a*b*c
    rate_limit: {unit: hour, requests_per_unit: 9}
  - key: route
    rate_limit: {unit: day, requests_per_unit: 11}
  - key: files
    value: dl/*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: group
    value: g*
    share_threshold: true
    descriptors:
      - key: user
        rate_limit: {unit: minute, requests_per_unit: 3}
  - key: open
    rate_limit: {unlimited: true}
  - key: outer
    value: x
    rate_limit: {unit: day, requests_per_unit: 15}
    descriptors:
      - key: inner
        value: y
        rate_limit: {unit: day, requests_per_unit: 25, name: inner_y}
`

func desc(kv ...string) *rlv3.RateLimitDescriptor {
	d := &rlv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func mustParse(t *testing.T, yaml string) *Config {
	t.Helper()
	c, err := Parse(File{Name: "test.yaml", Data: []byte(yaml)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMatchPrecedence(t *testing.T) {
	c := mustParse(t, shopYAML)
	for _, tc := range []struct {
		name   string
		d      *rlv3.RateLimitDescriptor
		want   uint32 // 0: no limit
		path   string
		shared string // counter key's value part for a share_threshold entry
	}{
		{"key-only default under a value", desc("tenant", "acme", "path", "/cart"), 5, "shop.tenant_acme.path", ""},
		{"exact value wins over key-only", desc("tenant", "acme", "path", "/checkout"), 10, "shop.tenant_acme.path_/checkout", ""},
		{"a parent without limit limits nothing", desc("tenant", "acme"), 0, "", ""},
		{"unknown parent value", desc("tenant", "other", "path", "/cart"), 0, "", ""},
		{"key-only", desc("client", "bob"), 20, "shop.client", ""},
		{"exact value", desc("client", "vip"), 30, "shop.client_vip", ""},
		{"value without limit whitelists", desc("client", "internal"), 0, "", ""},
		{"exact beats wildcard", desc("route", "api/v1"), 8, "shop.route_api/v1", ""},
		{"trailing wildcard", desc("route", "api/v2"), 7, "shop.route_api/*", ""},
		{"trailing wildcard, empty rest", desc("route", "api/"), 7, "shop.route_api/*", ""},
		{"middle wildcards", desc("route", "aXXbYYc"), 9, "shop.route_a*b*c", ""},
		{"middle wildcards, empty runs", desc("route", "abc"), 9, "shop.route_a*b*c", ""},
		{"parts out of order fall to key-only", desc("route", "acb"), 11, "shop.route", ""},
		{"share_threshold", desc("files", "dl/a.zip"), 100, "shop.files_dl/*", "dl/*"},
		{"share_threshold on a parent", desc("group", "g1", "user", "u"), 3, "shop.group_g*.user", "g*"},
		{"unlimited", desc("open", "x"), 0, "shop.open", ""},
		{"limit at the request's last entry", desc("outer", "x"), 15, "shop.outer_x", ""},
		{"nested limit", desc("outer", "x", "inner", "y"), 25, "shop.outer_x.inner_y", ""},
		{"more entries than the tree is deep", desc("client", "bob", "extra", "1"), 0, "", ""},
		{"unknown key", desc("nope", "1"), 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := c.match("shop", tc.d)
			if tc.path == "" {
				if m.limit != nil {
					t.Fatalf("got limit %s, want none", m.limit.path)
				}
				return
			}
			if m.limit == nil {
				t.Fatalf("got no limit, want %s", tc.path)
			}
			if m.limit.path != tc.path || m.limit.perUnit != tc.want {
				t.Errorf("got %s (%d), want %s (%d)", m.limit.path, m.limit.perUnit, tc.path, tc.want)
			}
			got := ""
			for _, s := range m.share {
				got += s
			}
			if got != tc.shared {
				t.Errorf("share = %q, want %q", got, tc.shared)
			}
		})
	}
	if m := c.match("other", desc("client", "bob")); m.limit != nil {
		t.Errorf("unknown domain matched %s", m.limit.path)
	}
}

func TestMatchOverride(t *testing.T) {
	c := mustParse(t, shopYAML)
	d := desc("client", "vip")
	d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 42, Unit: 3} // HOUR
	m := c.match("shop", d)
	if m.limit == nil || m.limit.perUnit != 42 || m.limit.unit != rlspb.RateLimitResponse_RateLimit_HOUR || m.limit.shadow {
		t.Fatalf("override: got %+v, want 42 per hour, not shadow", m.limit)
	}
	if m := c.match("unknown", d); m.limit != nil {
		t.Errorf("override in an unknown domain: got a limit, want none")
	}
}

func TestCounterKey(t *testing.T) {
	d := desc("files", "dl/a.zip", "user", "u1")
	got := string(appendCounterKey(nil, "p:", "shop", d, []string{"dl/*", ""}, 1700000040))
	if want := "p:shop_files_dl/*_user_u1_1700000040"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"empty domain", "descriptors: []", "domain: empty or missing"},
		{"not yaml", "domain: [", "not YAML"},
		{"unknown key", "domain: d\ndescriptors:\n  - key: a\n    rate_limt: {unit: second}", `line 4: unknown key "rate_limt"`},
		{"unknown nested key", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unt: 1}", `unknown key "requests_per_unt"`},
		{"non-string key", "domain: d\n1: x", "is not a string"},
		{"list of scalars", "domain: d\ndescriptors: [a]", "a list holds the scalar \"a\""},
		{"empty key", "domain: d\ndescriptors:\n  - value: v", "d.descriptors[0]: key: empty or missing"},
		{"duplicate key", "domain: d\ndescriptors:\n  - key: a\n    value: b\n  - key: a\n    value: b", `duplicate composite key "d.a_b"`},
		{"bad unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight, requests_per_unit: 1}", `unit: "fortnight" is not one of`},
		{"missing unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {requests_per_unit: 1}", `unit: "" is not one of`},
		{"unit with unlimited", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, unlimited: true}", "not allowed with unlimited"},
		{"empty replaces", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{name: ''}]}", "replaces[0]: name: empty"},
		{"replaces itself", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, name: n, replaces: [{name: n}]}", "cannot replace itself"},
		{"share_threshold without wildcard", "domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true", "share_threshold: needs a wildcard"},
		{"negative requests", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: -1}", "cannot unmarshal"},
		{"bad algorithm", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: magic}", `algorithm: "magic" is not one of`},
		{"algorithm field without algorithm", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, burst: 3}", "need algorithm"},
		{"algorithm without unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true, algorithm: token_bucket}", "algorithm: needs a unit"},
		{"bad warmup", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: warm_up, warmup: soon}", `warmup: "soon"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(File{Name: "conf/bad.yaml", Data: []byte(tc.yaml)})
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "conf/bad.yaml: ") {
				t.Errorf("got %q, want it to name conf/bad.yaml and say %q", err, tc.want)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.File != "conf/bad.yaml" {
				t.Errorf("got %T, want a *ConfigError naming the file", err)
			}
		})
	}
}

func TestParseDuplicateDomainAcrossFiles(t *testing.T) {
	_, err := Parse(File{Name: "a.yaml", Data: []byte("domain: d")}, File{Name: "b.yaml", Data: []byte("domain: d")})
	if err == nil || !strings.Contains(err.Error(), `b.yaml: domain "d": domain defined twice`) {
		t.Fatalf("got %v, want b.yaml refused for its duplicate domain", err)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	y := "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: x}\n  - value: b\n"
	_, err := Parse(File{Name: "f.yaml", Data: []byte(y)})
	if err == nil || !strings.Contains(err.Error(), `unit: "x"`) || !strings.Contains(err.Error(), "key: empty") {
		t.Fatalf("got %v, want both problems", err)
	}
}

func TestParseAcceptsTheirFields(t *testing.T) {
	y := `
domain: d
descriptors:
  - key: a
    value: 123
    detailed_metric: true
    value_to_metric: true
    quota_mode: true
    metadata: {anything: [1, {x: y}]}
    rate_limit: {unit: MINUTE, requests_per_unit: 4, name: a_limit, replaces: [{name: other}]}
---
domain: ignored-second-document
`
	c := mustParse(t, y)
	m := c.match("d", desc("a", "123"))
	if m.limit == nil || m.limit.unit != rlspb.RateLimitResponse_RateLimit_MINUTE || m.limit.name != "a_limit" || !m.limit.quota {
		t.Fatalf("got %+v, want the minute limit a_limit in quota mode", m.limit)
	}
	if got := c.Domains(); len(got) != 1 || got[0] != "d" {
		t.Errorf("domains %v, want [d] (a file holds one document)", got)
	}
}

func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"k_foo*", "k_foo", true}, {"k_foo*", "k_foobar", true}, {"k_foo*", "k_fo", false},
		{"k_a*b", "k_ab", true}, {"k_a*b", "k_aXb", true}, {"k_a*b", "k_aXbY", false},
		{"k_ab*ba", "k_aba", false}, {"k_a*b*c", "k_abbc", true}, {"k_a*b*c", "k_acb", false},
		{"k_*", "k_", true}, {"k_x", "k_x", true},
	} {
		if got := wildcardMatch(strings.Split(tc.pattern, "*"), tc.s); got != tc.want {
			t.Errorf("%q ~ %q = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(shopYAML))
	f.Add([]byte("domain: d\ndescriptors: [{key: a, rate_limit: {unit: second}}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(File{Name: "f", Data: b})
		if err == nil {
			for _, d := range c.Domains() {
				c.match(d, desc("a", "b", "c", "d"))
			}
		}
	})
}
