package alerting

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

func TestWindowCounts(t *testing.T) {
	w := newWindow(time.Minute, 10*time.Second)
	sec := int64(time.Second)
	// 10 passed and 5 blocked every second.
	at := func(s int64) sample { return sample{at: s * sec, admitted: uint64(10 * s), blocked: uint64(5 * s)} }
	w.add(at(0))
	if p, b := w.counts(); p != 0 || b != 0 {
		t.Fatalf("one sample: %d, %d, want 0, 0", p, b)
	}
	for s := int64(10); s <= 30; s += 10 {
		w.add(at(s))
	}
	if p, b := w.counts(); p != 300 || b != 150 {
		t.Fatalf("30s of history: %d, %d, want 300, 150 (all of it)", p, b)
	}
	for s := int64(40); s <= 600; s += 10 {
		w.add(at(s))
	}
	if p, b := w.counts(); p != 600 || b != 300 {
		t.Fatalf("full window: %d, %d, want 600, 300", p, b)
	}
}

func TestWindowBoundedUnderFrequentEvaluation(t *testing.T) {
	w := newWindow(time.Minute, 10*time.Second)
	capacity := len(w.buf)
	ms := int64(time.Millisecond)
	// An evaluation every 100ms for 10 minutes, 1 call passed per ms.
	for i := int64(0); i <= 6000; i++ {
		w.add(sample{at: i * 100 * ms, admitted: uint64(i * 100)})
	}
	if len(w.buf) != capacity || w.n > capacity {
		t.Fatalf("ring grew: %d samples in %d slots (was %d)", w.n, len(w.buf), capacity)
	}
	// The baseline is at least one window back and less than window + gap.
	p, _ := w.counts()
	if p < 60000 || p > 65000 {
		t.Fatalf("passed over the window = %d, want in [60000, 65000]", p)
	}
}

func TestWindowRestartsOnReset(t *testing.T) {
	w := newWindow(time.Minute, 10*time.Second)
	sec := int64(time.Second)
	w.add(sample{at: 0, admitted: 100, blocked: 100})
	w.add(sample{at: 10 * sec, admitted: 200, blocked: 200})
	w.add(sample{at: 20 * sec, admitted: 5, blocked: 1}) // counters went back: a new engine
	if p, b := w.counts(); p != 0 || b != 0 {
		t.Fatalf("after a reset: %d, %d, want 0, 0", p, b)
	}
	w.add(sample{at: 30 * sec, admitted: 15, blocked: 3})
	if p, b := w.counts(); p != 10 || b != 2 {
		t.Fatalf("after a reset: %d, %d, want 10, 2", p, b)
	}
	w.add(sample{at: 25 * sec, admitted: 16, blocked: 3}) // clock went back
	if w.n != 1 {
		t.Fatalf("clock went back: %d samples kept, want 1", w.n)
	}
}

func TestFingerprintMatchesPrometheus(t *testing.T) {
	for _, labels := range []map[string]string{
		{},
		{"alertname": DefaultName},
		{"alertname": DefaultName, "resource": "GET /orders", "severity": "warning"},
		{"a": "b\xffc", "service": "ünïcode"},
	} {
		ls := model.LabelSet{}
		for k, v := range labels {
			ls[model.LabelName(k)] = model.LabelValue(v)
		}
		got := Alert{Labels: labels}.Fingerprint()
		if want := ls.Fingerprint().String(); got != want {
			t.Errorf("Fingerprint(%v) = %s, want %s", labels, got, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"zero ratio", func(c *Config) { c.RejectionRatio = 0 }, "rejectionRatio: must be in (0, 1], got 0"},
		{"resolve above", func(c *Config) { c.ResolveRatio = 0.5 }, "resolveRatio: must be <= rejectionRatio 0.3, got 0.5"},
		{"window short", func(c *Config) { c.Window = time.Second }, "window: must be >= interval 10s, got 1s"},
		{"interval", func(c *Config) { c.Interval = 0 }, "interval: must be > 0, got 0s"},
		{"for", func(c *Config) { c.For = -1 }, "for: must be >= 0, got -1ns"},
		{"repeat", func(c *Config) { c.RepeatInterval = 0 }, "repeatInterval: must be > 0, got 0s"},
		{"min", func(c *Config) { c.MinRequests = -1 }, "minRequests: must be >= 0, got -1"},
	} {
		c := Defaults()
		tc.edit(&c)
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
	// Every problem at once.
	err := Config{}.Validate()
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 4 {
		t.Errorf("zero Config: %d problems, want 4 (ratio, interval, window, repeat): %v", n, err)
	}
	// Zero For, MinRequests and ResolveRatio are valid, taken as given.
	c := Defaults()
	c.For, c.MinRequests, c.ResolveRatio = 0, 0, 0
	if err := c.Validate(); err != nil {
		t.Errorf("zero For/MinRequests/ResolveRatio: %v", err)
	}
}

func TestOptionsResolveFollowsThreshold(t *testing.T) {
	if got := newOptions([]Option{WithRejectionRatio(0.5)}).cfg.ResolveRatio; got != 0.4 {
		t.Errorf("ResolveRatio = %v, want 0.8 × 0.5", got)
	}
	if got := newOptions([]Option{WithRejectionRatio(0.5), WithResolveRatio(0.1)}).cfg.ResolveRatio; got != 0.1 {
		t.Errorf("ResolveRatio = %v, want 0.1 as set", got)
	}
	cfg := Defaults()
	cfg.ResolveRatio = 0
	if got := newOptions([]Option{WithConfig(cfg)}).cfg; got != cfg {
		t.Errorf("WithConfig: got %+v, want %+v as given", got, cfg)
	}
}
