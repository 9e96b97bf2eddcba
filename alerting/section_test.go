package alerting

import (
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

func TestSectionOptions(t *testing.T) {
	s := DefaultSection()
	s.Config.RejectionRatio, s.Config.Window, s.Config.MinRequests = 0.5, 2*time.Minute, 10
	s.Config = s.Config.WithResolveDefault()
	s.Webhook = "http://127.0.0.1:9/hook"
	var problems []string
	s.Check(func(field, msg string) { problems = append(problems, field+": "+msg) })
	if len(problems) != 0 {
		t.Fatalf("Check: %v", problems)
	}
	opts, err := s.Options()
	if err != nil {
		t.Fatalf("Options: %v", err)
	}
	if len(opts) != 2 {
		t.Fatalf("got %d options, want config and webhook sink", len(opts))
	}
	a := New(flow.NewEngine(), opts...)
	defer a.Close()
	if err := a.Err(); err != nil {
		t.Fatalf("alerter: %v", err)
	}
	want := Config{RejectionRatio: 0.5, ResolveRatio: 0.4, Window: 2 * time.Minute, For: 30 * time.Second,
		Interval: 10 * time.Second, RepeatInterval: 4 * time.Hour, MinRequests: 10}
	if got := a.Config(); got != want {
		t.Fatalf("config = %+v, want %+v", got, want)
	}

	bad := Section{Config: Config{RejectionRatio: 2, Interval: time.Second, Window: time.Second, RepeatInterval: time.Hour},
		Webhook: "ftp://user:secret@host/x"}
	problems = nil
	bad.Check(func(field, msg string) { problems = append(problems, field+": "+msg) })
	got := strings.Join(problems, "\n")
	if want := "rejectionRatio: must be in (0, 1], got 2\nwebhook: must be an absolute http or https URL"; got != want {
		t.Fatalf("Check:\n got %s\nwant %s", got, want)
	}
	if strings.Contains(got, "secret") {
		t.Fatal("Check echoed the webhook's credentials")
	}
	if _, err := (Section{Config: Defaults(), Webhook: "::bad"}).Options(); err == nil {
		t.Fatal("Options with a bad webhook URL: want an error")
	}
}

// TestSetConfig: a reload's new thresholds apply from the next evaluation;
// the resource keeps its state and its samples (also across a new window).
func TestSetConfig(t *testing.T) {
	r := newRig(t, []flow.Rule{fixedWindow("orders", 10, time.Second)}, WithFor(0))
	r.tick(map[string]int{"orders": 20}) // ratio 0.5 > 0.3
	if s := r.state("orders"); s.State != Firing {
		t.Fatalf("orders: %+v, want firing", s)
	}

	if err := r.al.SetConfig(Config{RejectionRatio: 2}); err == nil {
		t.Fatal("SetConfig(invalid): want an error")
	}
	if got := r.al.Config(); got.RejectionRatio != DefaultRejectionRatio {
		t.Fatalf("an invalid SetConfig changed the config: %+v", got)
	}

	c := r.al.Config()
	c.RejectionRatio, c.ResolveRatio, c.Window = 0.8, 0.6, 2*time.Minute
	if err := r.al.SetConfig(c); err != nil {
		t.Fatal(err)
	}
	if s := r.state("orders"); s.State != Firing || s.Ratio != 0.5 {
		t.Fatalf("orders right after SetConfig: %+v, want still firing at 0.5", s)
	}
	r.tick(map[string]int{"orders": 20}) // still 0.5, now below the new resolve ratio 0.6
	s := r.state("orders")
	if s.State != Resolved {
		t.Fatalf("orders: %+v, want resolved under the new thresholds", s)
	}
	// The window was respaced, not emptied: it still spans both ticks.
	if s.Requests != 400 || s.Blocked != 200 {
		t.Fatalf("orders counts %d/%d, want 200 blocked of 400 over both ticks", s.Blocked, s.Requests)
	}
	if _, resolved := r.rec.statuses(); resolved != 1 {
		t.Fatalf("%d resolved notifications, want 1", resolved)
	}
}
