package flow

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestLimitPerPermitBound (issue 33, B13): a rate rule whose one permit
// would take longer than MaxPermitInterval to come back is refused by
// LoadRules (4.9e-324 per second used to admit one call, then refuse for
// 2 562 047 h), for the rule's limit and its items'; one permit per
// MaxPermitInterval is the slowest rule taken. Concurrency has no window.
func TestLimitPerPermitBound(t *testing.T) {
	e, _ := newTestEngine(t)
	for _, r := range []Rule{
		{ID: "a", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 4.9e-324},
		{ID: "a", Resource: "r", Algorithm: AlgoFixedWindow, Limit: 0.5, Window: MaxDuration},
		{ID: "a", Resource: "r", Level: LevelParam, Param: "p", Algorithm: AlgoSlidingWindow, Limit: 1,
			Items: map[string]float64{"tiny": 1e-300}},
	} {
		err := e.LoadRules([]Rule{r})
		var re *RuleError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, "MaxPermitInterval") {
			t.Errorf("%+v: got %v, want a limit problem naming MaxPermitInterval", r, err)
		}
	}
	for _, r := range []Rule{
		{ID: "a", Resource: "r", Algorithm: AlgoLeakyBucket, Limit: 1, Window: MaxPermitInterval},
		{ID: "a", Resource: "r", Algorithm: AlgoTokenBucket, Limit: float64(time.Second) / float64(MaxPermitInterval)},
		{ID: "a", Resource: "r", Algorithm: AlgoConcurrency, Limit: 1},
	} {
		if err := e.LoadRules([]Rule{r}); err != nil {
			t.Errorf("%+v: %v, want accepted", r, err)
		}
	}
}

// TestGoRulesHeldToDocumentBounds (issue 33, B12): a Rule built in Go, or
// sent inline to the token server, is held to the bounds the rules
// document reads with (MaxAmount, MaxDuration, MaxCount), each message
// naming its constant.
func TestGoRulesHeldToDocumentBounds(t *testing.T) {
	for _, tc := range []struct {
		r    Rule
		want string
	}{
		{Rule{Resource: "r", Algorithm: AlgoFixedWindow, Limit: 1e300}, "limit: must be at most 1e15 (flow.MaxAmount)"},
		{Rule{Resource: "r", Algorithm: AlgoFixedWindow, Limit: 1, Window: math.MaxInt64}, "window: must be at most 8784h (flow.MaxDuration)"},
		{Rule{Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1, Burst: 1e300}, "burst: must be at most 1e15"},
		{Rule{Resource: "r", Algorithm: AlgoCircuitBreaker, Strategy: BreakerErrorRatio, Threshold: 0.5, OpenFor: time.Second,
			MinRequests: math.MaxInt32}, "minRequests: must be in [1, "},
		{Rule{Resource: "r", Level: LevelUser, Algorithm: AlgoFixedWindow, Limit: 1, MaxKeys: 1 << 31}, "maxKeys: must be at most 268435455"},
	} {
		err := tc.r.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.r, err, tc.want)
		}
	}
}
