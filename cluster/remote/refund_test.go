package remote

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

// TestRefundVersusRelease: a user level holding a concurrency rule and two
// rate rules admits a call that the global level then refuses. The refund
// must give back the rate permits as well as the concurrency permit, while
// Exit of an admitted call releases only its concurrency permit. Checked
// on Redis's keys, through the embedded server and through a replica.
func TestRefundVersusRelease(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	_, addrs := redisReplicas(t, srv, 1)
	for _, tc := range []struct {
		name string
		ts   func(t *testing.T) flow.TokenServer
	}{
		{"embedded", func(t *testing.T) flow.TokenServer { return newServer(t, srv.Client()) }},
		{"replica", func(t *testing.T) flow.TokenServer { return newRemote(t, addrs, WithTimeout(2*time.Second)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := uniq("refund-" + tc.name)
			user := func(r flow.Rule) flow.Rule { r.Level = flow.LevelUser; return r }
			conc := user(crule("cc", res, flow.AlgoConcurrency, 5, time.Second))
			fwin := user(crule("fw", res, flow.AlgoFixedWindow, 100, time.Hour))
			slog := user(crule("log", res, flow.AlgoSlidingLog, 100, time.Hour))
			// The global level is checked after the user level: a local
			// rule that admits one call and refuses the next.
			gate := flow.Rule{ID: "gate", Resource: res, Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Hour}
			e := newEngine(t, tc.ts(t), t0, conc, fwin, slog, gate)
			key := func(id string) string { return "flowgate:{" + res + "|user|alice}:" + id }

			held, err := e.Entry(res, flow.WithUser("alice"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Entry(res, flow.WithUser("alice"))
			var be *flow.BlockError
			if !errors.As(err, &be) || be.RuleID != "gate" {
				t.Fatalf("second call: got %v, want refused by gate", err)
			}
			// Only the held call is counted: the refused one's permit and
			// rate permits came back.
			checkKeys(t, rdb, key, 1, 1, 1)
			held.Exit()
			// Exit releases the permit; the rate permits stay spent.
			checkKeys(t, rdb, key, 0, 1, 1)
		})
	}
}

// checkKeys compares the concurrency permits held, the fixed window's count
// and the sliding log's entries with the wanted values (-1: not checked).
func checkKeys(t *testing.T, rdb redis.UniversalClient, key func(id string) string, conc, fw, log int64) {
	t.Helper()
	ctx := context.Background()
	gotConc, err1 := rdb.ZCard(ctx, key("cc")).Result()
	gotFw, err2 := rdb.HGet(ctx, key("fw"), "c").Int64()
	gotLog, err3 := rdb.ZCard(ctx, key("log")).Result()
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if fw < 0 {
		gotFw, gotLog = fw, log
	}
	if gotConc != conc || gotFw != fw || gotLog != log {
		t.Fatalf("permits held %d, fixed window count %d, sliding log entries %d; want %d, %d, %d",
			gotConc, gotFw, gotLog, conc, fw, log)
	}
}
