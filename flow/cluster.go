package flow

import (
	"context"
	"time"
)

// TokenServer decides cluster rules for every instance of a service (package
// cluster implements it on Redis). The engine never imports Redis.
type TokenServer interface {
	// Acquire decides, in ONE atomic step, every cluster rule of one level
	// that applies to one key.
	Acquire(ctx context.Context, req TokenRequest) (TokenResult, error)
	// Release gives tokens back (a later level refused) or releases
	// concurrency permits (Exit).
	Release(ctx context.Context, req TokenRequest, res TokenResult) error
	// Instances is the last known number of live instances (>= 1), for the
	// local fallback at Limit/Instances().
	Instances() int
}

// TokenRequest asks the token server for the cluster rules of one level.
type TokenRequest struct {
	Resource string
	Level    Level
	Key      string // user id or IP; "" at the global level
	Tokens   int
	Rules    []*Rule // the cluster rules of this level, immutable, shared: do not modify
	Factor   float64 // adaptive factor to apply to adaptive rules' limits
}

// TokenResult is the token server's answer.
type TokenResult struct {
	Allowed    bool
	Refused    int // index into Rules of the rule that refused; -1 when allowed
	Remaining  float64
	Wait       time.Duration // allowed leaky-bucket slot: the engine waits this long (honouring ctx)
	RetryAfter time.Duration // refused: honest time until it would pass; 0 unknown
	Lease      string        // opaque; concurrency permits to Release on Exit
}

// ClusterStats counts token server outcomes.
type ClusterStats struct {
	Requests  map[string]uint64 // "passed", "blocked", "error"
	Fallbacks map[string]uint64 // "local", "allow", "deny"
}
