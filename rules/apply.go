package rules

import (
	"errors"

	"github.com/flowgate/flowgate/adaptive"
	"github.com/flowgate/flowgate/alerting"
)

// AdaptiveConfig returns the "adaptive" section, or package adaptive's
// defaults when the document has none: what adaptive.WithConfig takes.
func (d *Document) AdaptiveConfig() adaptive.Config {
	if d.Adaptive == nil {
		return adaptive.Defaults()
	}
	return *d.Adaptive
}

// AlertingSection returns the "alerting" section, or package alerting's
// defaults when the document has none: its Options build an alerter.
func (d *Document) AlertingSection() alerting.Section {
	if d.Alerting == nil {
		return alerting.DefaultSection()
	}
	return *d.Alerting
}

// ApplySections gives ctl the document's adaptive settings and al its
// alerting thresholds and timing (Controller.SetConfig, Alerter.SetConfig),
// the owners' defaults for a section the document leaves out: call it from
// a Watch's OnReload so that both follow the file. Either may be nil. A
// webhook that changed needs a new Alerter: the sinks stay as built. The
// sections were validated by Parse, so an error here means a controller or
// alerter that was built invalid.
func (d *Document) ApplySections(ctl *adaptive.Controller, al *alerting.Alerter) error {
	var errs []error
	if ctl != nil {
		errs = append(errs, ctl.SetConfig(d.AdaptiveConfig()))
	}
	if al != nil {
		errs = append(errs, al.SetConfig(d.AlertingSection().Config))
	}
	return errors.Join(errs...)
}
