package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/adaptive"
	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

type fixedCPU float64

func (f fixedCPU) CPU() (float64, error) { return float64(f), nil }

// TestSectionsFollowReload: the controller and the alerter start from the
// file's "adaptive" and "alerting" sections and follow a reload that changes
// them; a file with a bad section changes nothing; a file without the
// sections brings the owners' defaults back.
func TestSectionsFollowReload(t *testing.T) {
	const rule = `{"id": "r", "resource": "r", "algorithm": "fixed_window", "limit": 10, "adaptive": true}`
	path := filepath.Join(t.TempDir(), "rules.json")
	write := func(doc string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"rules": [` + rule + `],
	  "adaptive": {"cpuTarget": 0.7},
	  "alerting": {"rejectionRatio": 0.3, "window": "2s", "for": "1s", "interval": "250ms", "minRequests": 50}}`)

	clk := clock.NewFake(time.Unix(0, 0))
	eng := flow.NewEngine(flow.WithClock(clk))
	doc, err := rules.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctrls, err := newControls(eng, doc,
		[]adaptive.Option{adaptive.WithSampler(fixedCPU(0.5)), adaptive.WithClock(clk)},
		[]alerting.Option{alerting.WithClock(clk)})
	if err != nil {
		t.Fatal(err)
	}
	defer ctrls.Close()
	var mu sync.Mutex
	var applyErrs []error
	w, err := rules.Watch(context.Background(), path, eng, rules.WithOnReload(func(ev rules.Event) {
		mu.Lock()
		defer mu.Unlock()
		if err := ctrls.onReload(ev); err != nil {
			applyErrs = append(applyErrs, err)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	check := func(when string, target, bandLow, minFactor, ratio, resolve float64, window time.Duration) {
		t.Helper()
		c, a := ctrls.ctl.Config(), ctrls.al.Config()
		if c.CPUTarget != target || c.BandLow != bandLow || c.MinFactor != minFactor {
			t.Errorf("%s: adaptive target %v band low %v minFactor %v, want %v %v %v",
				when, c.CPUTarget, c.BandLow, c.MinFactor, target, bandLow, minFactor)
		}
		if a.RejectionRatio != ratio || a.ResolveRatio != resolve || a.Window != window {
			t.Errorf("%s: alerting ratio %v resolve %v window %v, want %v %v %v",
				when, a.RejectionRatio, a.ResolveRatio, a.Window, ratio, resolve, window)
		}
	}
	check("at start", 0.7, 0.6, 0.1, 0.3, 0.24, 2*time.Second)

	write(`{"rules": [` + rule + `],
	  "adaptive": {"cpuTarget": 0.6, "minFactor": 0.2},
	  "alerting": {"rejectionRatio": 0.5, "window": "4s", "for": "1s", "interval": "250ms", "minRequests": 50}}`)
	if err := w.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	check("after the edit", 0.6, 0.5, 0.2, 0.5, 0.4, 4*time.Second)

	write(`{"rules": [` + rule + `], "adaptive": {"cpuTarget": 2}}`)
	if err := w.Reload(); err == nil {
		t.Fatal("Reload of a bad adaptive section: want an error")
	}
	check("after a bad file", 0.6, 0.5, 0.2, 0.5, 0.4, 4*time.Second)

	write(`{"rules": [` + rule + `]}`)
	if err := w.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	check("without the sections", 0.8, 0.7, 0.1, 0.3, 0.24, time.Minute)

	mu.Lock()
	defer mu.Unlock()
	if len(applyErrs) != 0 {
		t.Fatalf("applying the sections: %v", applyErrs)
	}
}
