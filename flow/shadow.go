package flow

import (
	"context"
	"log/slog"
)

// Shadow rules (Rule.Shadow) decide every call as they would if they
// enforced, and never refuse one. How their permits meet the other rules':
//
//   - A shadow refusal takes nothing: the rule's limiter refused, so it
//     holds nothing for the call, which goes on to the next rule.
//   - A shadow pass takes its permits from the shadow rule's own limiter
//     (every rule has its own), so it never takes a permit an enforcing
//     rule then lacks. Like any rule's, they are given back when a later
//     enforcing rule refuses the call, and a shadow concurrency slot is
//     held until Exit.
//   - A shadow rule never makes a call wait (a MaxWait slot is booked, as
//     enforcing would book it, but not waited for) and never sets the
//     call's Quota: both would change what the caller sees.
//   - A shadow circuit breaker sees only the calls it would have let
//     through, so it moves closed, open and half-open exactly as an
//     enforcing one fed the same outcomes would.
//
// So a shadow rule's state, and its count of would-be refusals, are those
// of an enforcing copy of it that saw the same calls, and flipping Shadow
// off on reload keeps that state (ruleEqual ignores Shadow).

// shadowRefused counts a shadow rule's would-be refusal (an item's on its
// rule) and logs it at debug; nothing is built when the logger would drop
// the record.
func (e *Engine) shadowRefused(resource string, cr *compiledRule, reason string) {
	cr.owner().shadowBlocked.Add(1)
	if l := e.cf.log; l != nil && l.Enabled(context.Background(), slog.LevelDebug) {
		l.LogAttrs(context.Background(), slog.LevelDebug, "flow: shadow rule would have refused",
			slog.String("resource", resource), slog.String("rule", cr.rule.ID),
			slog.String("level", cr.rule.Level.String()), slog.String("reason", reason))
	}
}
