package flow

import (
	"net/netip"
	"strconv"
	"testing"
)

// Param rules and lists, beside BenchmarkRateAllow in the same run:
//
//	go test ./flow -run '^$' -bench 'RateAllow$|Param|DenyList' -benchmem -count 3

// paramEngine has a token bucket per tenant over 10 000 tenants, 100 of
// them with items; it returns the tenants, every 100th an item.
func paramEngine(b *testing.B) (*Engine, []string) {
	r := Rule{ID: "per-tenant", Resource: "r", Level: LevelParam, Param: "tenant", Algorithm: AlgoTokenBucket,
		Limit: 1e9, Items: map[string]float64{}}
	tenants := make([]string, 10000)
	for i := range tenants {
		tenants[i] = "tenant-" + strconv.Itoa(i)
		if i%100 == 0 {
			r.Items[tenants[i]] = 2e9
		}
	}
	return benchEngine(b, r), tenants
}

func BenchmarkEntryExitParam10kValues100Items(b *testing.B) {
	e, tenants := paramEngine(b)
	for _, t := range tenants { // every key tracked: steady state
		p, _ := e.Entry("r", WithParam("tenant", t))
		p.Exit()
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p, err := e.Entry("r", WithParam("tenant", tenants[i]))
		if err != nil {
			b.Fatal(err)
		}
		p.Exit()
		if i++; i == len(tenants) {
			i = 0
		}
	}
}

// denyEngine has an ip deny list of 100 000 CIDRs: /16 to /32 IPv4 and
// /32 to /64 IPv6 prefixes (about 50 distinct lengths), none matching the
// callers, which are 1000 addresses of both families.
func denyEngine(b *testing.B) (*Engine, []string) {
	values := make([]string, 0, 100000)
	for i := 0; len(values) < 100000; i++ {
		if i%2 == 0 {
			bits := 16 + i%17
			a := netip.AddrFrom4([4]byte{byte(11 + i%100), byte(i >> 8), byte(i), byte(i >> 16)})
			values = append(values, netip.PrefixFrom(a, bits).Masked().String())
		} else {
			bits := 32 + i%33
			a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i >> 16), byte(i >> 8), byte(i), 7: byte(i)})
			values = append(values, netip.PrefixFrom(a, bits).Masked().String())
		}
	}
	values = dedupe(values)
	r := Rule{ID: "nets", Resource: "r", Level: LevelIP, Algorithm: AlgoDeny, Values: values}
	callers := make([]string, 1000)
	for i := range callers {
		if i%2 == 0 {
			callers[i] = netip.AddrFrom4([4]byte{192, 168, byte(i >> 8), byte(i)}).String()
		} else {
			callers[i] = netip.AddrFrom16([16]byte{0xfd, 0, 14: byte(i >> 8), 15: byte(i)}).String()
		}
	}
	return benchEngine(b, r), callers
}

func dedupe(vs []string) []string {
	seen := make(map[string]bool, len(vs))
	out := vs[:0]
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func BenchmarkEntryExitDenyList100kCIDRs(b *testing.B) {
	e, callers := denyEngine(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p, err := e.Entry("r", WithIP(callers[i]))
		if err != nil {
			b.Fatal(err)
		}
		p.Exit()
		if i++; i == len(callers) {
			i = 0
		}
	}
}

// Decide through a param rule with items and an ip deny list allocates
// nothing, admitted or refused by the list.
func TestDecideParamsAndListsAllocateNothing(t *testing.T) {
	e, _ := newTestEngine(t,
		Rule{ID: "nets", Resource: "r", Level: LevelIP, Algorithm: AlgoDeny, Values: []string{"10.0.0.0/8", "2001:db8::/32"}},
		Rule{ID: "p", Resource: "r", Level: LevelParam, Param: "tenant", Algorithm: AlgoTokenBucket, Limit: 1e9,
			Items: map[string]float64{"vip": 2e9}})
	pass := func() {
		if d := e.Decide("r", WithIP("192.0.2.1"), WithParam("tenant", "vip"), WithParam("origin", "web")); !d.Allowed {
			t.Fatal("refused")
		} else {
			d.Permit.Exit()
		}
	}
	deny := func() {
		if d := e.Decide("r", WithIP("10.1.1.1"), WithParam("tenant", "vip")); d.Allowed || d.Block.Reason != ReasonDenied {
			t.Fatalf("got %+v, want a deny", d.Block)
		}
	}
	pass()
	if n := testing.AllocsPerRun(500, pass); n != 0 {
		t.Errorf("pass: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(500, deny); n != 0 {
		t.Errorf("deny: %v allocs, want 0", n)
	}
}
