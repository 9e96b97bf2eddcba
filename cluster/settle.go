package cluster

import (
	"context"
	"fmt"
	"strconv"

	"github.com/flowgate/flowgate/flow"
)

// settle settles a call that ran at its actual cost (req.Settle, on
// Release at Exit): a leased rule set settles against its lease first
// (see leaseTable.absorb), and what the lease cannot absorb, with the
// release of the call's concurrency permits, goes to Redis in one call of
// settle.lua, which settles each rule as flow's local algorithm would.
// p is the plan of res's stripe.
func (s *RedisTokenServer) settle(ctx context.Context, p *plan, req *flow.TokenRequest, res flow.TokenResult) error {
	s.st.settled.Add(1)
	d := max(req.Actual, 0) - req.Tokens
	if d != 0 && s.leases != nil && p.leasable {
		rest := s.leases.absorb(p, req.Key, res.At, d)
		s.st.noteSettled(int64(d-rest), 0)
		d = rest
	}
	if d == 0 && res.Lease == "" {
		return nil
	}
	var nonce any = ""
	if p.nonce {
		nonce = s.newNonce() // names a sliding log's charged entries
	}
	if res.Lease != "" {
		if len(p.conc) == 0 {
			return fmt.Errorf("cluster: settle: lease %q for rules without concurrency", res.Lease)
		}
		nonce = res.Lease
		s.held.remove(res.Lease) // as Release: stop renewing first
	}
	arg := strconv.Itoa(d) + "@" + strconv.FormatInt(max(res.At, 0), 10) + "@" + strconv.Itoa(req.Tokens)
	_, err := s.call(ctx, mainSettle, p, req.Key, nonce, arg, 0, nil)
	return err
}

// noteSettled counts a settlement that moved d permits (charged when
// positive, given back when negative) and could not charge forgiven.
func (st *stats) noteSettled(d, forgiven int64) {
	switch {
	case d > 0:
		st.settleCharged.Add(uint64(d))
	case d < 0:
		st.settleRefunded.Add(uint64(-d))
	}
	if forgiven > 0 {
		st.settleForgiven.Add(uint64(forgiven))
	}
}

// noteSettleReply counts settle.lua's reply {charged, given back, not
// charged}; a malformed one counts nothing (the call itself succeeded).
func (st *stats) noteSettleReply(v any) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 3 {
		return
	}
	var n [3]int64
	for i, e := range arr {
		if n[i], ok = e.(int64); !ok || n[i] < 0 {
			return
		}
	}
	st.noteSettled(n[0], n[2])
	st.noteSettled(-n[1], 0)
}

// absorb settles d permits (see settle) against key's live lease when the
// call was served from that lease's batch (at, the batch's Redis time),
// or from any batch when every rule is a token bucket (a bucket's permits
// are the same whenever counted): a charge takes what the lease has left,
// a refund goes back into it, to be spent or returned with the rest. It
// returns what the lease could not absorb, for Redis. A call served from
// an earlier batch settles in Redis: a window's permits belong to the
// window they were counted in.
func (t *leaseTable) absorb(p *plan, key string, at int64, d int) int {
	l := t.find(leaseKey{p, key})
	if l == nil {
		return d
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead || t.s.now() >= l.until || (l.at != at && !p.bucketsOnly) {
		return d
	}
	if d < 0 {
		l.left -= d
		return 0
	}
	take := min(d, l.left)
	l.left -= take
	return d - take
}
