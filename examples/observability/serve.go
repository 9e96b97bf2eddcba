package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/clock"
)

// runServe runs on real time: load cycles between two minutes at twice the
// orders limit and one minute within it, so a Prometheus scraping /metrics
// (and the Grafana dashboard) sees the ratio rise, the alert fire and
// resolve. It stops on SIGINT/SIGTERM or after d (0: never).
func runServe(out io.Writer, addr string, d time.Duration) error {
	clk := clock.Real()
	// Faster than the defaults, so a watcher sees it within a minute.
	s, err := newStack(out, addr, clk, alerting.WithWindow(30*time.Second), alerting.WithFor(15*time.Second),
		alerting.WithInterval(5*time.Second))
	if err != nil {
		return err
	}
	defer s.close()
	go func() { // drain the webhook messages: printed by the SinkFunc already
		for range s.hooks {
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	s.al.Start()
	fmt.Fprintf(out, "serving %s/metrics; load cycles 2m at 100 calls/s and 1m at 30 calls/s to %s (limit 50/s); Ctrl-C stops\n",
		s.base, orders)
	start := time.Now()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			perSecond := 100
			if now.Sub(start)%(3*time.Minute) >= 2*time.Minute {
				perSecond = 30
			}
			send(s.eng, orders, perSecond/10)
			send(s.eng, health, 2)
		}
	}
}
