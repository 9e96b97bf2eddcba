package remote

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// TestSettleThroughReplica: a call's actual cost is settled through a
// replica as through the embedded server, in the Exit that releases its
// concurrency permit: a charge and a refund land on Redis's keys of the
// fixed window and the sliding log, and the permit is released.
func TestSettleThroughReplica(t *testing.T) {
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
			res := uniq("settle-" + tc.name)
			user := func(r flow.Rule) flow.Rule { r.Level = flow.LevelUser; return r }
			conc := user(crule("cc", res, flow.AlgoConcurrency, 5, time.Second))
			fwin := user(crule("fw", res, flow.AlgoFixedWindow, 100, time.Hour))
			slog := user(crule("log", res, flow.AlgoSlidingLog, 100, time.Hour))
			e := newEngine(t, tc.ts(t), t0, conc, fwin, slog)
			key := func(id string) string { return "flowgate:{" + res + "|user|alice}:" + id }
			call := func(reserve, actual int) {
				t.Helper()
				p, err := e.Entry(res, flow.WithUser("alice"), flow.WithTokens(reserve))
				if err != nil {
					t.Fatal(err)
				}
				checkKeys(t, rdb, key, int64(reserve), -1, -1)
				p.Exit(flow.WithActualCost(actual))
			}
			call(2, 7) // 5 charged
			checkKeys(t, rdb, key, 0, 7, 7)
			call(5, 1) // 4 given back
			checkKeys(t, rdb, key, 0, 8, 8)
		})
	}
}
