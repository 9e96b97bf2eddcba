package rules

import (
	"errors"

	"github.com/flowgate/flowgate/adaptive/cpuconfig"
	"github.com/flowgate/flowgate/alerting"
)

// AdaptiveConfig returns the "adaptive" section, or its owner's defaults
// (cpuconfig.Defaults) when the document has none: what adaptive.WithConfig
// takes.
func (d *Document) AdaptiveConfig() cpuconfig.Config {
	if d.Adaptive == nil {
		return cpuconfig.Defaults()
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

// ConfigSetter takes the adaptive section: *adaptive.Controller is one.
// An interface, so that reading rules does not link the CPU samplers.
type ConfigSetter interface {
	SetConfig(cpuconfig.Config) error
}

// ApplySections gives ctl the document's adaptive settings and al its
// alerting thresholds and timing (Controller.SetConfig, Alerter.SetConfig),
// the owners' defaults for a section the document leaves out: call it from
// a Watch's OnReload so that both follow the file. Either may be nil. A
// webhook that changed needs a new Alerter: the sinks stay as built. The
// sections were validated by Parse, so an error here means a controller or
// alerter that was built invalid.
func (d *Document) ApplySections(ctl ConfigSetter, al *alerting.Alerter) error {
	var errs []error
	if ctl != nil {
		errs = append(errs, ctl.SetConfig(d.AdaptiveConfig()))
	}
	if al != nil {
		errs = append(errs, al.SetConfig(d.AlertingSection().Config))
	}
	return errors.Join(errs...)
}
