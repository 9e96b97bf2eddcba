package rules

import (
	"github.com/flowgate/flowgate/adaptive/cpuconfig"
	"github.com/flowgate/flowgate/alerting"
)

// The "adaptive" and "alerting" sections belong to the packages that use
// them: each setting's meaning, default and valid range live there
// (cpuconfig.Config, alerting.Section). This file only reads the JSON
// (names, types, duration syntax, with the document's paths and line
// numbers), then reports the owner's Check problems under the section's
// path. A field whose JSON is unreadable keeps its default, so it is
// reported once.

var adaptiveKeys = []string{"cpuTarget", "bandLow", "bandHigh", "minFactor", "period", "cpuSource", "systemCPU",
	"boostFactor", "boostBelow", "boostAbove"}

// readAdaptive reads the "adaptive" section into a cpuconfig.Config with
// its defaults filled in.
func readAdaptive(p *problems, v *node) *cpuconfig.Config {
	var c cpuconfig.Config // zero fields take the owner's defaults
	o := &object{p: p, index: -1, prefix: "adaptive."}
	if !o.walk(v, "", adaptiveKeys, func(key string, v *node) {
		switch key {
		case "cpuTarget":
			setIf(&c.CPUTarget)(o.number(key, v))
		case "bandLow":
			setIf(&c.BandLow)(o.number(key, v))
		case "bandHigh":
			setIf(&c.BandHigh)(o.number(key, v))
		case "minFactor":
			setIf(&c.MinFactor)(o.number(key, v))
		case "period":
			setIf(&c.Period)(o.duration(key, v))
		case "systemCPU":
			setIf(&c.SystemGuard.CPU)(o.number(key, v))
		case "boostFactor":
			setIf(&c.Boost.Factor)(o.number(key, v))
		case "boostBelow":
			setIf(&c.Boost.Below)(o.number(key, v))
		case "boostAbove":
			setIf(&c.Boost.Above)(o.number(key, v))
		case "cpuSource":
			if src, ok := o.str(key, v); ok {
				c.CPUSource = cpuconfig.CPUSource(src)
			}
		}
	}) {
		return nil
	}
	c = c.WithDefaults()
	c.Check(func(field, msg string) { o.fail(field, "%s", msg) })
	return &c
}

var alertingKeys = []string{"rejectionRatio", "resolveRatio", "window", "for", "interval",
	"repeatInterval", "minRequests", "webhook"}

// readAlerting reads the "alerting" section into an alerting.Section that
// starts from the owner's defaults.
func readAlerting(p *problems, v *node) *alerting.Section {
	s := alerting.DefaultSection()
	c := &s.Config
	o := &object{p: p, index: -1, prefix: "alerting."}
	resolveRead := false
	if !o.walk(v, "", alertingKeys, func(key string, v *node) {
		switch key {
		case "rejectionRatio":
			setIf(&c.RejectionRatio)(o.number(key, v))
		case "resolveRatio":
			var r float64
			if r, resolveRead = o.number(key, v); resolveRead {
				c.ResolveRatio = r
			}
		case "window":
			setIf(&c.Window)(o.duration(key, v))
		case "for":
			setIf(&c.For)(o.duration(key, v))
		case "interval":
			setIf(&c.Interval)(o.duration(key, v))
		case "repeatInterval":
			setIf(&c.RepeatInterval)(o.duration(key, v))
		case "minRequests":
			setIf(&c.MinRequests)(o.integer(key, v))
		case "webhook":
			setIf(&s.Webhook)(o.str(key, v))
		}
	}) {
		return nil
	}
	if !resolveRead { // the owner's default follows the rejection ratio
		*c = c.WithResolveDefault()
	}
	s.Check(func(field, msg string) { o.fail(field, "%s", msg) })
	return &s
}

// setIf returns a func that stores v in dst when ok: for a reader's
// (value, ok) result.
func setIf[T any](dst *T) func(v T, ok bool) {
	return func(v T, ok bool) {
		if ok {
			*dst = v
		}
	}
}
