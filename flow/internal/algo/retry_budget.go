package algo

import (
	"math"
	"sync"
	"time"
)

// BudgetSpec is a retry_budget's settings.
type BudgetSpec struct {
	Ratio        float64       // retries each first attempt earns
	MinPerSecond float64       // retries always allowed per second, whatever the traffic
	TTL          time.Duration // how long a deposit stays
}

// budgetSlots is the number of slots a retry budget's TTL is cut into:
// deposits leave in steps of TTL/budgetSlots.
const budgetSlots = 10

// Budget is a retry budget as Finagle's RetryBudget and tower's
// TpsBudget keep one: every first attempt deposits Ratio, every retry
// withdraws 1, deposits expire after TTL, and a reserve of
// MinPerSecond·TTL is always there, so a client with little traffic may
// still retry. A retry passes while reserve + the live deposits − the live
// withdrawals ≥ 1. A mutex guards the slots (see Throttle for why).
type Budget struct {
	mu      sync.Mutex
	ratio   float64
	reserve float64
	step    int64
	head    int64
	slot    [budgetSlots]float64 // deposits minus withdrawals per slot
	sum     float64
}

func newBudget(s BudgetSpec, now int64) *Budget {
	step := max(int64(s.TTL)/budgetSlots, 1)
	return &Budget{ratio: s.Ratio, reserve: s.MinPerSecond * s.TTL.Seconds(), step: step, head: floorDiv(now, step)}
}

// advance expires the slots that left the TTL at now. b.mu is held.
func (b *Budget) advance(now int64) {
	idx := floorDiv(now, b.step)
	if idx <= b.head {
		return
	}
	n := min(idx-b.head, budgetSlots)
	for i := int64(1); i <= n; i++ {
		s := floorMod(b.head+i, budgetSlots)
		b.sum -= b.slot[s]
		b.slot[s] = 0
	}
	if n == budgetSlots {
		b.sum = 0
	}
	b.head = idx
}

// Deposit credits n first attempts at now.
func (b *Budget) Deposit(now int64, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	d := b.ratio * float64(n)
	b.slot[floorMod(b.head, budgetSlots)] += d
	b.sum += d
}

// balance is what may still be withdrawn. b.mu is held.
func (b *Budget) balance() float64 { return b.reserve + b.sum }

// TryAcquire withdraws n retries at now when the balance allows them.
// maxWait is ignored: a budget never queues.
func (b *Budget) TryAcquire(now int64, n int, _ time.Duration) Decision {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	// The epsilon keeps 5 deposits of 0.2 from falling short of 1.
	if b.balance()+1e-9 < float64(n) {
		return Decision{Verdict: Refused, Wait: time.Duration(b.step), Remaining: math.Max(0, b.balance())}
	}
	b.slot[floorMod(b.head, budgetSlots)] -= float64(n)
	b.sum -= float64(n)
	return Decision{Verdict: Granted, Remaining: b.balance()}
}

// Refund gives back n retries withdrawn at at whose call did not go out.
func (b *Budget) Refund(at int64, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(at)
	idx := floorDiv(at, b.step)
	if idx <= b.head-budgetSlots {
		return
	}
	b.slot[floorMod(idx, budgetSlots)] += float64(n)
	b.sum += float64(n)
}

// Remaining reports the retries the budget allows now.
func (b *Budget) Remaining(now int64) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	return math.Max(0, b.balance())
}

// SetLimit does nothing: a budget has no limit.
func (b *Budget) SetLimit(int64, float64) {}
