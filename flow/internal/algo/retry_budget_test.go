package algo

import (
	"testing"
	"time"
)

func drainBudget(b *Budget, now int64) int {
	n := 0
	for b.TryAcquire(now, 1, 0).OK() {
		n++
		if n > 1e6 {
			break
		}
	}
	return n
}

func TestBudgetMinimumHolds(t *testing.T) {
	b := newBudget(BudgetSpec{Ratio: 0.2, MinPerSecond: 10, TTL: 10 * time.Second}, 0)
	if got := drainBudget(b, 0); got != 100 {
		t.Fatalf("retries with no traffic = %d, want 100 (10/s over a 10s TTL)", got)
	}
	// The reserve is never spent for good: withdrawals expire with the TTL.
	if got := drainBudget(b, int64(11*time.Second)); got != 100 {
		t.Fatalf("retries after a TTL = %d, want 100", got)
	}
}

func TestBudgetDepositsAndExpiry(t *testing.T) {
	b := newBudget(BudgetSpec{Ratio: 0.2, MinPerSecond: 0, TTL: 10 * time.Second}, 0)
	b.Deposit(0, 50) // 50 first attempts earn 10 retries
	if got := drainBudget(b, 0); got != 10 {
		t.Fatalf("retries after 50 first attempts at 0.2 = %d, want 10", got)
	}
	b.Deposit(int64(time.Second), 25) // 5 more
	if got := drainBudget(b, int64(time.Second)); got != 5 {
		t.Fatalf("retries after 25 more = %d, want 5", got)
	}
	b.Deposit(int64(2*time.Second), 100) // 20, expiring at 12s
	if got := b.Remaining(int64(11 * time.Second)); got < 19.999 {
		t.Fatalf("remaining at 11s = %v, want 20", got)
	}
	// Deposits expire with their TTL: at 12.5s the 20 are gone; the two
	// earlier slots, net zero, went before them.
	if got := b.Remaining(int64(12*time.Second + 500*time.Millisecond)); got != 0 {
		t.Fatalf("remaining after the deposits expired = %v, want 0", got)
	}
	if b.TryAcquire(int64(13*time.Second), 1, 0).OK() {
		t.Fatal("retry passed with an empty budget and no minimum")
	}
}

func TestBudgetRefund(t *testing.T) {
	b := newBudget(BudgetSpec{Ratio: 1, TTL: time.Second}, 0)
	b.Deposit(0, 1)
	if !b.TryAcquire(0, 1, 0).OK() || b.TryAcquire(0, 1, 0).OK() {
		t.Fatal("one deposit at ratio 1 should allow exactly one retry")
	}
	b.Refund(0, 1)
	if !b.TryAcquire(0, 1, 0).OK() {
		t.Fatal("a refunded retry was not given back")
	}
}
