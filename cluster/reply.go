package cluster

import (
	"fmt"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// reply is a decoded decision script answer.
type reply struct {
	allowed   bool
	refused   int   // rule index, -1 when allowed
	remaining int64 // permits left at the most constrained rule
	wait      time.Duration
	retry     time.Duration // refused: until the request would pass; 0 unknown
	never     bool          // refused: the request can never pass (acquire.lua's retry -1)
	granted   int64         // lease.lua: permits taken
	reset     time.Duration // lease.lua: until the soonest rule's state resets
	at        int64         // Redis time the permits were counted (acquire.lua) or the batch taken (lease.lua), us
}

// decodeReply turns a script's reply into a reply, checking every element:
// want is 6 for acquire.lua (its sixth element is lease.lua's eighth, the
// time) and 8 for lease.lua. Every number is an integer the script computed
// (microseconds for times).
func decodeReply(v any, want int) (reply, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != want {
		return reply{}, fmt.Errorf("cluster: script reply: got %T of length %d, want %d integers", v, lenOf(v), want)
	}
	var n [8]int64
	for i, e := range arr {
		x, ok := e.(int64)
		if !ok {
			return reply{}, fmt.Errorf("cluster: script reply[%d]: got %T, want an integer", i, e)
		}
		n[i] = x
	}
	if want == 6 {
		n[5], n[7] = 0, n[5]
	}
	if n[0] != 0 && n[0] != 1 {
		return reply{}, fmt.Errorf("cluster: script reply[0]: got %d, want 0 or 1", n[0])
	}
	r := reply{
		allowed:   n[0] == 1,
		refused:   int(n[1]),
		remaining: n[2],
		wait:      time.Duration(n[3]) * time.Microsecond,
		retry:     time.Duration(max(n[4], 0)) * time.Microsecond,
		never:     n[4] == -1 && n[0] == 0,
		granted:   n[5],
		reset:     time.Duration(n[6]) * time.Microsecond,
		at:        n[7],
	}
	if r.allowed != (r.refused == -1) || r.wait < 0 || n[4] < -1 || n[4] == -1 && !r.never || r.remaining < 0 || r.granted < 0 {
		return reply{}, fmt.Errorf("cluster: script reply: inconsistent %v", arr)
	}
	return r, nil
}

// retryAfter is the refusal's RetryAfter as flow.TokenResult says it:
// flow.Never for a request that can never pass.
func (r *reply) retryAfter() time.Duration {
	if r.never {
		return flow.Never
	}
	return r.retry
}

func lenOf(v any) int {
	if arr, ok := v.([]any); ok {
		return len(arr)
	}
	return 0
}
