package main

import (
	"errors"

	"github.com/flowgate/flowgate/adaptive"
	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// controls are the adaptive controller and the alerter, built from the
// rules document's "adaptive" and "alerting" sections and kept in step
// with them on every reload: the file is the one place their settings are
// written, as for the rules.
type controls struct {
	ctl *adaptive.Controller
	al  *alerting.Alerter
}

// newControls builds both from doc. ctlOpts and alertOpts come after the
// sections' settings (the demo's sink, WithOverall(false); a test's
// sampler and clock). Nothing is started.
func newControls(eng *flow.Engine, doc *rules.Document, ctlOpts []adaptive.Option, alertOpts []alerting.Option) (*controls, error) {
	opts, err := doc.AlertingSection().Options()
	if err != nil {
		return nil, err
	}
	c := &controls{
		ctl: adaptive.NewController(eng, append([]adaptive.Option{adaptive.WithConfig(doc.AdaptiveConfig())}, ctlOpts...)...),
		al:  alerting.New(eng, append(opts, alertOpts...)...),
	}
	if err := errors.Join(c.ctl.Err(), c.al.Err()); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// onReload applies a reloaded document's sections; a refused file changes
// nothing (the watcher keeps the last good document).
func (c *controls) onReload(ev rules.Event) error {
	if ev.Err != nil || !ev.Changed || ev.Doc == nil {
		return nil
	}
	return ev.Doc.ApplySections(c.ctl, c.al)
}

// Start starts the controller's and the alerter's tickers.
func (c *controls) Start() {
	c.ctl.Start()
	c.al.Start()
}

// Close stops both; it is idempotent.
func (c *controls) Close() {
	_ = c.ctl.Close()
	_ = c.al.Close()
}
