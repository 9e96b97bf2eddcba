package tokenrpc

import (
	"errors"
	"fmt"

	"github.com/flowgate/flowgate/cluster/tokenpb"
)

// Bounds on one request. A request over any of them is answered
// STATUS_BAD_REQUEST, naming the field and the bound, before its namespace
// is counted, anything is looked up or kept, or the token server (Redis) is
// asked: a client can neither grow the server's memory with long names nor
// tie Redis up with one enormous call, and such a refusal counts against no
// breaker (the client's sees an answer, the token server's sees no call).
const (
	// MaxResourceBytes bounds the request's resource, and each inline
	// rule's. Resources are kept (per-resource decision counts, interned
	// rule sets, the token server's plans), so their length sets what each
	// cache can hold.
	MaxResourceBytes = 256
	// MaxKeyBytes bounds the key: a user id, an IP or a param value.
	MaxKeyBytes = 256
	// MaxNamespaceBytes bounds the namespace.
	MaxNamespaceBytes = 64
	// MaxNameBytes bounds every other name a request carries: each rule
	// id (named or inline), the param, and each inline rule's param,
	// algorithm, threshold and fallback.
	MaxNameBytes = 128
	// MaxRulesPerRequest bounds the rules of one request, inline or named
	// by id. An engine sends the cluster rules of one resource at one
	// level together: a handful. Each rule is a key and a step of one
	// Redis script call, which must finish within the token server's
	// timeout.
	MaxRulesPerRequest = 16
)

// maxBoundProblems bounds the problems one refusal lists; the count of the
// others follows them.
const maxBoundProblems = 8

// checkBounds reports every field of in over its bound (see
// MaxResourceBytes and the others), at most maxBoundProblems of them and
// the count of the rest. It reads lengths only: its cost does not grow
// with the size of the names.
func checkBounds(in *tokenpb.AcquireRequest) error {
	var p problems
	p.length("namespace", -1, "", in.GetNamespace(), MaxNamespaceBytes, "MaxNamespaceBytes")
	p.length("resource", -1, "", in.GetResource(), MaxResourceBytes, "MaxResourceBytes")
	p.length("key", -1, "", in.GetKey(), MaxKeyBytes, "MaxKeyBytes")
	p.length("param", -1, "", in.GetParam(), MaxNameBytes, "MaxNameBytes")
	rules, ids := in.GetRules(), in.GetRuleIds()
	if n := max(len(rules), len(ids)); n > MaxRulesPerRequest {
		// Say so before looking at any rule: each would be a problem.
		p.add(fmt.Errorf("rules: %d rules in one request, at most %d (tokenrpc.MaxRulesPerRequest)", n, MaxRulesPerRequest))
		return p.err()
	}
	for i, id := range ids {
		p.length("rule_ids", i, "", id, MaxNameBytes, "MaxNameBytes")
	}
	for i, r := range rules {
		p.length("rules", i, "resource", r.GetResource(), MaxResourceBytes, "MaxResourceBytes")
		p.length("rules", i, "id", r.GetId(), MaxNameBytes, "MaxNameBytes")
		p.length("rules", i, "param", r.GetParam(), MaxNameBytes, "MaxNameBytes")
		p.length("rules", i, "algorithm", r.GetAlgorithm(), MaxNameBytes, "MaxNameBytes")
		p.length("rules", i, "threshold", r.GetThreshold(), MaxNameBytes, "MaxNameBytes")
		p.length("rules", i, "fallback", r.GetFallback(), MaxNameBytes, "MaxNameBytes")
	}
	return p.err()
}

// problems gathers the first maxBoundProblems problems and counts the rest.
type problems struct {
	list []error
	more int
}

func (p *problems) add(err error) {
	if len(p.list) < maxBoundProblems {
		p.list = append(p.list, err)
		return
	}
	p.more++
}

// length adds a problem when s is longer than max bytes. The field is
// list, or list[i] when i >= 0, then .field when field is set; the
// message names the bound's constant and reads its value. Nothing is
// formatted unless s is too long: this runs on every request.
func (p *problems) length(list string, i int, field, s string, max int, constant string) {
	if len(s) <= max {
		return
	}
	at := list
	if i >= 0 {
		at = fmt.Sprintf("%s[%d]", list, i)
	}
	if field != "" {
		at += "." + field
	}
	p.add(fmt.Errorf("%s: %d bytes, at most %d (tokenrpc.%s)", at, len(s), max, constant))
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	if p.more > 0 {
		p.list = append(p.list, fmt.Errorf("and %d more over their bounds", p.more))
	}
	return errors.Join(p.list...)
}
