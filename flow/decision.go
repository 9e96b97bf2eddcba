package flow

import "context"

// Decision is the outcome of Decide, returned by value so that a refusal
// allocates nothing: the BlockError lives in the Decision, on the caller's
// stack, instead of behind the error Entry returns.
type Decision struct {
	// Allowed reports that the call was admitted.
	Allowed bool
	// Permit is the admitted call: Exit it when the call ends. The zero
	// Permit when refused.
	Permit Permit
	// Block says why the call was refused. When admitted its fields are
	// zero: its Refuser is a shared empty one, so that reading them is safe.
	Block BlockError
}

// noRefuser is an admitted Decision's Refuser: all zero.
var noRefuser Refuser

// Decide is Entry without the error: it decides exactly as Entry does and
// returns the outcome by value, so that a refused call allocates nothing
// (Entry's *BlockError is the one allocation of a refusal). Middleware that
// answers refusals itself uses it; d.Err() gives Entry's error when one is
// needed.
func (e *Engine) Decide(resource string, opts ...EntryOption) (d Decision) {
	var err error
	d.Permit, err = e.decide(context.Background(), resource, opts, &d.Block)
	d.Allowed = err == nil
	if d.Allowed {
		d.Block.Refuser = &noRefuser
	}
	return d
}

// Decide is shorthand for Default().Decide(resource, opts...).
func Decide(resource string, opts ...EntryOption) Decision {
	return Default().Decide(resource, opts...)
}

// Err is the error Entry would have returned: nil when the call was
// admitted, else a *BlockError holding a copy of d.Block (this allocates).
func (d *Decision) Err() error {
	if d.Allowed {
		return nil
	}
	return d.Block.onHeap()
}
