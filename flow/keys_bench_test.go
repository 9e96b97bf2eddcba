package flow

import (
	"strconv"
	"testing"
	"time"
)

// The refusal path of a user rule with the top-keys summary on (the
// default) and off (WithTopKeys(0, 0), the cost before it existed), in one
// run:
//
//	go test ./flow -run '^$' -bench 'EntryBlockedUser' -benchmem -count 5
func BenchmarkEntryBlockedUser(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"topkeys=off", []Option{WithTopKeys(0, 0)}},
		{"topkeys=on", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := NewEngine(tc.opts...)
			if err := e.LoadRules([]Rule{{ID: "u", Resource: "r", Level: LevelUser, Algorithm: AlgoFixedWindow, Limit: 1, Window: time.Hour}}); err != nil {
				b.Fatal(err)
			}
			// 1000 users, each over its limit: refusals spread over keys
			// that all stay in the summary (512 counters would churn
			// with more; churn costs a map delete and insert more).
			users := make([]EntryOption, 1000)
			for i := range users {
				users[i] = WithUser("user-" + strconv.Itoa(i))
				if p, err := e.Entry("r", users[i]); err == nil {
					p.Exit()
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := e.Entry("r", users[i]); err == nil {
					b.Fatal("passed")
				}
				if i++; i == len(users) {
					i = 0
				}
			}
		})
	}
}

func BenchmarkTopKeysRecordChurn(b *testing.B) {
	names := make([]string, 1<<16)
	for i := range names {
		names[i] = "ip-" + strconv.Itoa(i)
	}
	tk := newTopKeys(DefaultTopKeyCounters/topShards, int64(time.Hour), 0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tk.record(names[i&(len(names)-1)], 1)
		i++
	}
}
