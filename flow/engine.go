package flow

import (
	"context"
	"time"
)

// Engine admits or refuses calls to resources according to the rules it
// holds. The zero Engine is not usable; build one with NewEngine.
type Engine struct{ cf config }

// NewEngine returns an engine with no rules: every call passes.
func NewEngine(opts ...Option) *Engine { return &Engine{} }

// Default returns the process-wide engine used by the package-level Entry.
func Default() *Engine { return nil }

// Entry is shorthand for Default().Entry(resource, opts...).
func Entry(resource string, opts ...EntryOption) (*Permit, error) {
	return Default().Entry(resource, opts...)
}

// Entry asks to enter resource.
func (e *Engine) Entry(resource string, opts ...EntryOption) (*Permit, error) { return nil, nil }

// Guard runs fn under a permit.
func (e *Engine) Guard(ctx context.Context, resource string, fn func(context.Context) error, opts ...EntryOption) error {
	return nil
}

// LoadRules validates every rule, then replaces the rules in force.
func (e *Engine) LoadRules(rules []Rule) error { return ValidateRules(rules) }

// Rules returns a copy of the rules in force.
func (e *Engine) Rules() []Rule { return nil }

// Snapshot returns the engine's statistics.
func (e *Engine) Snapshot() Snapshot { return Snapshot{} }

// SetAdaptiveFactor scales adaptive rules.
func (e *Engine) SetAdaptiveFactor(f float64) {}

// AdaptiveFactor returns the factor in force.
func (e *Engine) AdaptiveFactor() float64 { return 1 }

// SetSystemLimit sets the system guard.
func (e *Engine) SetSystemLimit(maxInFlight int64) {}

// InFlight reports calls in flight.
func (e *Engine) InFlight() int64 { return 0 }

// Permit is a call admitted by Entry.
type Permit struct{}

// Exit ends the call.
func (p *Permit) Exit(opts ...ExitOption) {}

// Quota reports the most restrictive rule that applied.
func (p *Permit) Quota() (Quota, bool) { return Quota{}, false }

// Waited reports how long Entry queued.
func (p *Permit) Waited() time.Duration { return 0 }

// Quota describes the rule that most restricted a call, for headers.
type Quota struct {
	RuleID    string
	Limit     float64
	Window    time.Duration
	Remaining float64
	Reset     time.Duration
}
