package alerting

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// BenchmarkEvaluate is one evaluation tick over 100 resources with traffic,
// none changing state: the steady cost Start pays every Interval.
func BenchmarkEvaluate(b *testing.B) {
	clk := clock.NewFake(t0)
	eng := flow.NewEngine(flow.WithClock(clk))
	var rules []flow.Rule
	for i := range 100 {
		rules = append(rules, fixedWindow(fmt.Sprintf("res-%03d", i), 1000, time.Second))
	}
	if err := eng.LoadRules(rules); err != nil {
		b.Fatal(err)
	}
	for _, r := range rules {
		for range 10 {
			if p, err := eng.Entry(r.Resource); err == nil {
				p.Exit()
			}
		}
	}
	al := New(eng, WithClock(clk))
	defer al.Close()
	ctx := context.Background()
	b.Run("evaluate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			clk.Advance(10 * time.Second)
			if err := al.Evaluate(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The engine's share: what Evaluate costs beyond this is the alerter's.
	b.Run("snapshot-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = eng.Snapshot()
		}
	})
}

// BenchmarkWebhookMessage is building and encoding one webhook payload.
func BenchmarkWebhookMessage(b *testing.B) {
	hook, err := NewWebhookSink("http://127.0.0.1:1/hook")
	if err != nil {
		b.Fatal(err)
	}
	a := testAlert()
	a.Annotations = map[string]string{"summary": "s", "description": "d"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonMarshal(hook.message(a)); err != nil {
			b.Fatal(err)
		}
	}
}

var jsonMarshal = json.Marshal
