package flow

import (
	"errors"
	"testing"
	"time"
)

// A refResource rule refuses writes while reads have used up its limit in
// the current window, releases them when the window turns, and takes
// nothing from reads.
func TestRefResourceThrottlesAndReleases(t *testing.T) {
	ref := fw("writes-when-reads-hot", "write", LevelGlobal, 3, time.Second)
	ref.RefResource = "read"
	e, clk := newTestEngine(t, ref)
	if got := seq(t, e, "write", 5); got != "pass pass pass pass pass" {
		t.Fatalf("writes with reads idle: %q (a write must take nothing)", got)
	}
	if got := seq(t, e, "read", 2); got != "pass pass" {
		t.Fatalf("reads: %q", got)
	}
	if got := try(t, e, "write"); got != "" {
		t.Fatalf("2 reads of 3: write refused by %q", got)
	}
	if got := seq(t, e, "read", 4); got != "pass pass pass pass" {
		t.Fatalf("reads past the rule's limit are never refused by it: %q", got)
	}
	_, err := e.Entry("write")
	var be *BlockError
	if !errors.As(err, &be) || be.RuleID != "writes-when-reads-hot" || be.Reason != ReasonRefResourceHot || be.RetryAfter <= 0 {
		t.Fatalf("write while reads hot: got %v", err)
	}
	clk.Advance(time.Second)
	if got := seq(t, e, "write", 3); got != "pass pass pass" {
		t.Fatalf("next window: %q", got)
	}
	// Reads with WithTokens count their tokens.
	try(t, e, "read", WithTokens(3))
	if got := try(t, e, "write"); got != "writes-when-reads-hot" {
		t.Fatalf("after a 3-token read: %q", got)
	}
	rs := e.Snapshot().Resources
	if len(rs) != 2 || rs[0].Resource != "read" || rs[0].Passed != 7 {
		t.Fatalf("read statistics: %+v", rs)
	}
}
