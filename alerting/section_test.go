package alerting

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

func TestFromSection(t *testing.T) {
	doc, err := rules.Parse([]byte(`{"rules": [], "alerting": {"rejectionRatio": 0.5, "window": "2m", "for": "1m",
		"minRequests": 10, "webhook": "http://127.0.0.1:9/hook"}}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	opts, err := FromSection(doc.Alerting)
	if err != nil {
		t.Fatalf("FromSection: %v", err)
	}
	if len(opts) != 2 {
		t.Fatalf("got %d options, want config and webhook sink", len(opts))
	}
	a := New(flow.NewEngine(), opts...)
	defer a.Close()
	if err := a.Err(); err != nil {
		t.Fatalf("alerter: %v", err)
	}
	var o options
	for _, opt := range opts[:1] {
		opt(&o)
	}
	want := Config{RejectionRatio: 0.5, ResolveRatio: 0.4, Window: 2 * time.Minute, For: time.Minute,
		Interval: 10 * time.Second, RepeatInterval: 4 * time.Hour, MinRequests: 10}
	if o.cfg != want {
		t.Fatalf("config = %+v, want %+v", o.cfg, want)
	}
	if _, err := FromSection(&rules.AlertingSection{Webhook: "::bad"}); err == nil {
		t.Fatal("FromSection with a bad webhook URL: want an error")
	}
}
