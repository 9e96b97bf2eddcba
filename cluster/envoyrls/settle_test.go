package envoyrls

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

const settleYAML = `
domain: llm
descriptors:
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 60, algorithm: token_bucket, settle: {max_debt: 30}}
  - key: window
    rate_limit: {unit: minute, requests_per_unit: 100, algorithm: fixed_window, settle: {}}
`

// phase sends one call for key=v with hits (0: Envoy's request phase
// with hits_addend 0; more: the response phase's actual cost).
func (h *harness) phase(t *testing.T, key string, hits uint64) (code string, remaining uint32) {
	t.Helper()
	st := h.ask(t, "llm", 0, withHits(desc(key, "v"), hits)).Statuses[0]
	return st.Code.String(), st.LimitRemaining
}

// TestSettleChargesAfterTheFact: the response phase's cost is charged in
// full whatever is left, into a debt capped by max_debt, and answered OK;
// the request phase is refused until the debt is paid.
func TestSettleChargesAfterTheFact(t *testing.T) {
	h := newHarness(t, settleYAML)
	steps := []struct {
		wait      time.Duration
		hits      uint64
		code      string
		remaining uint32 // checked for checks that pass
	}{
		{0, 0, "OK", 60}, // a check takes nothing
		{0, 0, "OK", 60}, // ... twice
		{0, 50, "OK", 0}, // the first stream done: 50 charged
		{0, 0, "OK", 10}, // 10 left
		{0, 40, "OK", 0}, // 40 more than the 10 left: a debt of 30
		{0, 0, "OVER_LIMIT", 0},
		{20 * time.Second, 0, "OVER_LIMIT", 0}, // 10 of the 30 repaid
		{0, 500, "OK", 0},                      // a charge while refusing: not added
		{11 * time.Second, 0, "OK", 1},         // the debt paid, a permit earned
		{0, 1000, "OK", 0},                     // from 1: the debt is capped at 30
		{29 * time.Second, 0, "OVER_LIMIT", 0}, // 29 of the 30 repaid
		{2 * time.Second, 0, "OK", 1},
	}
	for i, s := range steps {
		h.clk.Advance(s.wait)
		code, rem := h.phase(t, "tenant", s.hits)
		if code != s.code || (s.hits == 0 && code == "OK" && rem != s.remaining) {
			t.Fatalf("step %d (after %v, hits %d): %s remaining %d; want %s remaining %d", i, s.wait, s.hits, code, rem, s.code, s.remaining)
		}
	}
	// A fixed window's debt is its window's: the next window starts clear.
	if code, _ := h.phase(t, "window", 150); code != "OK" {
		t.Fatalf("charge: %s", code)
	}
	if code, _ := h.phase(t, "window", 0); code != "OVER_LIMIT" {
		t.Errorf("fixed window after 150 of 100: check %s, want OVER_LIMIT", code)
	}
	h.clk.Advance(time.Minute)
	if code, rem := h.phase(t, "window", 0); code != "OK" || rem != 100 {
		t.Errorf("next window: check %s remaining %d, want OK 100", code, rem)
	}
	st := h.svc.Stats().Limits["llm.tenant"]
	if st.Within != 50+40+1000 || st.Over != 3+500 {
		t.Errorf("stats %+v: want within 1090 (the charges taken), over 503 (3 refused checks, 1 charge not added)", st)
	}
}

func TestSettleConfigRefused(t *testing.T) {
	for _, bad := range []struct{ yaml, want string }{
		{"{unit: minute, requests_per_unit: 5, settle: {}}", "settle: needs an algorithm"},
		{"{unit: minute, requests_per_unit: 5, algorithm: sliding_log, settle: {}}", "does not settle"},
		{"{unit: minute, requests_per_unit: 5, algorithm: token_bucket, settle: {max_debt: -1}}", "maxDebt"},
	} {
		_, err := Parse(File{Name: "f.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: " + bad.yaml + "\n")})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want an error with %q", bad.yaml, err, bad.want)
		}
	}
}

// TestSettleOnRedis: the same phases decided by the token server, so two
// replicas share the debt. It needs the token server to settle a cluster
// rule's actual cost (flow.TokenRequest.Settle); without it, it skips.
func TestSettleOnRedis(t *testing.T) {
	if _, ok := reflect.TypeOf(flow.TokenRequest{}).FieldByName("Settle"); !ok {
		t.Skip("the token server does not settle cluster rules in this tree (no flow.TokenRequest.Settle)")
	}
	srv := redistest.Start(t)
	rdb := srv.Client()
	ts, err := cluster.NewRedisTokenServer(rdb, cluster.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	a := newHarness(t, settleYAML, WithStore(redisStore(t, rdb)), WithTokenServer(ts))
	b := newHarness(t, settleYAML, WithStore(redisStore(t, rdb)), WithTokenServer(ts))
	if code, rem := a.phase(t, "window", 0); code != "OK" || rem != 100 {
		t.Fatalf("first check: %s remaining %d, want OK 100", code, rem)
	}
	if code, _ := a.phase(t, "window", 150); code != "OK" {
		t.Fatalf("charge: %s, want OK", code)
	}
	// The other replica sees the 150 of 100: refused. (Redis's windows are
	// a minute; a run that crossed one would see a fresh window.)
	before := rdb.Time(context.Background()).Val()
	code, _ := b.phase(t, "window", 0)
	after := rdb.Time(context.Background()).Val()
	if code != "OVER_LIMIT" && before.Truncate(time.Minute) == after.Truncate(time.Minute) {
		t.Errorf("replica b after a's charge of 150 of 100: %s, want OVER_LIMIT", code)
	}
}
