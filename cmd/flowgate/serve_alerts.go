package main

import (
	"log/slog"
	"sync"

	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// serveAlerts is serve's alerter: it watches the token service's own
// decisions (tokenrpc.Server.Snapshot: per resource, what the cluster
// granted and refused) and takes its thresholds, timing and webhook from
// the rules document's "alerting" section, following it on reload. Alerts
// go to the log, and to the section's webhook when it names one.
//
// The document's "adaptive" section has nothing to act on here: the
// factor of an adaptive cluster rule is each client's (its own CPU), sent
// with every request; the token service's CPU says nothing about the
// services it decides for.
type serveAlerts struct {
	log     *slog.Logger
	mu      sync.Mutex
	al      *alerting.Alerter
	webhook string // the sink's, as built
}

// newServeAlerts builds the alerter from doc; it starts nothing.
func newServeAlerts(doc *rules.Document, snapshots func() flow.Snapshot, clk clock.Clock, log *slog.Logger) (*serveAlerts, error) {
	s := doc.AlertingSection()
	opts, err := s.Options(alerting.WithHTTPLogger(log))
	if err != nil {
		return nil, err
	}
	al := alerting.New(nil, append(opts, alerting.WithSnapshots(snapshots), alerting.WithClock(clk),
		alerting.WithLogger(log), alerting.WithSink(alerting.NewSlogSink(log)))...)
	if err := al.Err(); err != nil {
		return nil, err
	}
	sa := &serveAlerts{log: log, al: al, webhook: s.Webhook}
	sa.logConfig(s)
	return sa, nil
}

// apply gives the alerter the document's section (the defaults when it has
// none). A changed webhook is reported, not applied: the sinks stay as
// built until serve restarts.
func (sa *serveAlerts) apply(doc *rules.Document) {
	sa.mu.Lock()
	defer sa.mu.Unlock()
	if err := doc.ApplySections(nil, sa.al); err != nil {
		sa.log.Error("flowgate serve: alerting section not applied", "err", err)
		return
	}
	s := doc.AlertingSection()
	if s.Webhook != sa.webhook {
		sa.log.Warn("flowgate serve: the alerting webhook changed; it applies after a restart")
	}
	sa.logConfig(s)
}

func (sa *serveAlerts) logConfig(s alerting.Section) {
	c := s.Config
	sa.log.Info("flowgate serve: alerting section applied", "rejectionRatio", c.RejectionRatio,
		"resolveRatio", c.ResolveRatio, "window", c.Window, "for", c.For, "interval", c.Interval,
		"minRequests", c.MinRequests, "webhook", s.Webhook != "")
}

// Start runs the alerter; Close stops it.
func (sa *serveAlerts) Start()       { sa.al.Start() }
func (sa *serveAlerts) Close() error { return sa.al.Close() }
