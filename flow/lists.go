package flow

import (
	"encoding/binary"
	"net/netip"
	"sort"
	"strings"

	"github.com/flowgate/flowgate/flow/internal/algo"
)

// Reasons of the refusals by an allow or deny rule.
const (
	ReasonDenied     = "on deny list"
	ReasonNotAllowed = "not on allow list"
)

func (a Algorithm) isList() bool { return a == AlgoAllow || a == AlgoDeny }

// keyed reports whether a rule at level l counts per key.
func (l Level) keyed() bool { return l == LevelUser || l == LevelIP || l == LevelParam }

// valueList is the compiled Values of an allow or deny rule. Lookups cost
// one map probe for user and param lists, and one per distinct prefix
// length present for ip lists (at most 33 for IPv4, 129 for IPv6), whatever
// the number of values: a list of 100 000 CIDRs is not scanned.
type valueList struct {
	strs map[string]struct{} // user and param lists
	v4   []v4Set             // ip lists, one set per prefix length, longest first
	v6   []v6Set
}

type v4Set struct {
	mask uint32
	set  map[uint32]struct{} // masked addresses
}

// v6Set keys addresses by their two halves: [16]byte keys hash slower.
type v6Set struct {
	hi, lo uint64 // the mask
	set    map[[2]uint64]struct{}
}

// newListRule finishes compiling an allow or deny rule: it holds no
// limiter, only its values.
func newListRule(cr *compiledRule) (*compiledRule, error) {
	l := &valueList{}
	if cr.rule.Level != LevelIP {
		l.strs = make(map[string]struct{}, len(cr.rule.Values))
		for _, v := range cr.rule.Values {
			l.strs[v] = struct{}{}
		}
		cr.list = l
		return cr, nil
	}
	v4 := map[int]map[uint32]struct{}{}
	v6 := map[int]map[[2]uint64]struct{}{}
	for _, v := range cr.rule.Values {
		p, err := parseListPrefix(v)
		if err != nil {
			return nil, err // validated before: unreachable
		}
		if p.Addr().Is4() {
			if v4[p.Bits()] == nil {
				v4[p.Bits()] = map[uint32]struct{}{}
			}
			v4[p.Bits()][v4Key(p.Addr())] = struct{}{}
			continue
		}
		if v6[p.Bits()] == nil {
			v6[p.Bits()] = map[[2]uint64]struct{}{}
		}
		v6[p.Bits()][v6Key(p.Addr())] = struct{}{}
	}
	for bits, set := range v4 {
		l.v4 = append(l.v4, v4Set{mask: ^uint32(0) << (32 - bits), set: set})
	}
	for bits, set := range v6 {
		hi, lo := mask128(bits)
		l.v6 = append(l.v6, v6Set{hi: hi, lo: lo, set: set})
	}
	// Longest first: the most specific entries are the likeliest hits.
	sort.Slice(l.v4, func(i, j int) bool { return l.v4[i].mask > l.v4[j].mask })
	sort.Slice(l.v6, func(i, j int) bool {
		return l.v6[i].hi > l.v6[j].hi || l.v6[i].hi == l.v6[j].hi && l.v6[i].lo > l.v6[j].lo
	})
	cr.list = l
	return cr, nil
}

// mask128 is the mask of a /bits IPv6 prefix (Go shifts by the full
// width give 0, so /0 needs no case of its own).
func mask128(bits int) (hi, lo uint64) {
	if bits <= 64 {
		return ^uint64(0) << (64 - bits), 0
	}
	return ^uint64(0), ^uint64(0) << (128 - bits)
}

func v4Key(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

func v6Key(a netip.Addr) [2]uint64 {
	b := a.As16()
	return [2]uint64{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// has reports whether key is on the list. At the ip level key is an
// address (IPv4-mapped IPv6 counts as IPv4) or, as flowhttp's
// WithIPv6Prefix gives it, a prefix: its (masked) address is looked up.
// A key that is neither is on no ip list.
func (l *valueList) has(key string) bool {
	if l.strs != nil {
		_, ok := l.strs[key]
		return ok
	}
	var a netip.Addr
	if strings.IndexByte(key, '/') >= 0 {
		p, err := netip.ParsePrefix(key)
		if err != nil {
			return false
		}
		a = p.Masked().Addr()
	} else {
		var err error
		if a, err = netip.ParseAddr(key); err != nil {
			return false
		}
	}
	a = a.Unmap()
	if a.Is4() {
		k := v4Key(a)
		for i := range l.v4 {
			if _, ok := l.v4[i].set[k&l.v4[i].mask]; ok {
				return true
			}
		}
		return false
	}
	k := v6Key(a)
	for i := range l.v6 {
		s := &l.v6[i]
		if _, ok := s.set[[2]uint64{k[0] & s.hi, k[1] & s.lo}]; ok {
			return true
		}
	}
	return false
}

// list applies an allow or deny rule to the call's key. A call without
// the rule's identity (no WithIP, WithUser or WithParam of the rule's
// name, or "") passes a deny rule and is refused by an allow rule (an allow list admits
// only callers known to be on it) unless the rule has AllowMissing. A
// shadow list's would-be refusal is counted as a shadow refusal, not as a
// list refusal.
func (st *entryState) list(cr *compiledRule, key string) bool {
	if key == "" && cr.rule.AllowMissing {
		return true
	}
	on := key != "" && cr.list.has(key)
	if on != (cr.rule.Algorithm == AlgoDeny) {
		return true
	}
	if !cr.shadow.Load() {
		st.rr.stats.listRefusal(cr.rule.Level, cr.rule.Algorithm == AlgoDeny)
	}
	return st.deny(cr, cr.reason(), "", algo.Decision{})
}
