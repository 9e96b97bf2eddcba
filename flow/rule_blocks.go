package flow

// BlockedByRule returns how many calls each rule in force has refused since
// it was loaded (a rule kept unchanged across reloads keeps its count), by
// rule id. Refusals by the system guard belong to no rule and are only in
// ResourceStats.Blocked. It reads one atomic per rule.
func (e *Engine) BlockedByRule() map[string]uint64 {
	rs := e.rules.Load()
	out := make(map[string]uint64, len(rs.compiled))
	for _, cr := range rs.compiled {
		out[cr.rule.ID] = cr.refused.Load()
	}
	return out
}
