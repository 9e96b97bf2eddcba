package tokenrpc

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/flowgate/flowgate/flow"
)

// maxResources bounds the resources counted apart in Snapshot; past it,
// new ones are not counted, so clients sending rules inline cannot grow the
// server's memory.
const maxResources = 10000

// decisions counts, per resource, the acquires the token server granted
// and refused (by the refusing rule's level). It is what an alerter reads
// to watch the cluster's rejection ratio (flowgate serve applies the rules
// document's "alerting" section to one): the service's own view, as an
// engine's Snapshot is an instance's.
type decisions struct {
	m sync.Map // resource -> *decisionCount
	n atomic.Int64
}

type decisionCount struct {
	passed  atomic.Uint64
	blocked [flow.NumLevels]atomic.Uint64
}

// record counts one decision: one map load and one atomic add, against a
// Redis round trip per call.
func (d *decisions) record(resource string, lv flow.Level, allowed bool) {
	v, ok := d.m.Load(resource)
	if !ok {
		if d.n.Load() >= maxResources {
			return
		}
		var loaded bool
		if v, loaded = d.m.LoadOrStore(resource, new(decisionCount)); !loaded {
			d.n.Add(1)
		}
	}
	c := v.(*decisionCount)
	if allowed {
		c.passed.Add(1)
	} else if lv < flow.NumLevels {
		c.blocked[lv].Add(1)
	}
}

// Snapshot returns the decisions so far as an engine's Snapshot would
// hold them: Time on the server's clock and, per resource sorted by name,
// the lifetime Passed and Blocked (by level) counts; other fields are zero.
// alerting.WithSnapshots(srv.Snapshot) watches the token service's
// rejection ratio.
func (s *Server) Snapshot() flow.Snapshot {
	snap := flow.Snapshot{Time: s.cf.clk.Now(), AdaptiveFactor: 1}
	s.dec.m.Range(func(k, v any) bool {
		c := v.(*decisionCount)
		rs := flow.ResourceStats{Resource: k.(string), Passed: c.passed.Load()}
		for i := range c.blocked {
			rs.Blocked[i] = c.blocked[i].Load()
		}
		snap.Resources = append(snap.Resources, rs)
		return true
	})
	slices.SortFunc(snap.Resources, func(a, b flow.ResourceStats) int { return strings.Compare(a.Resource, b.Resource) })
	return snap
}
