package rules

import (
	"math"
	"net/url"
	"time"
)

// AdaptiveSection is the document's "adaptive" section: settings for the
// CPU-driven controller (package adaptive). Parse fills the defaults below
// for fields left out.
type AdaptiveSection struct {
	// CPUTarget is the CPU utilisation (0..1) the controller steers to. Default 0.80.
	CPUTarget float64
	// BandLow and BandHigh bound the hysteresis band around CPUTarget inside
	// which the factor is held. Defaults CPUTarget-0.10 and CPUTarget+0.08
	// (0.70 and 0.88 for the default target), within (0, 1].
	BandLow, BandHigh float64
	// MinFactor is the lowest scale applied to adaptive rules, in (0, 1]. Default 0.1.
	MinFactor float64
	// Period is the CPU sampling period. Default 250ms.
	Period time.Duration
	// CPUSource is what the controller measures: "auto" (default: the
	// cgroup when it limits the process's CPU, else the process), "cgroup",
	// "process" or "host".
	CPUSource string
}

// Defaults of the adaptive section.
const (
	DefaultCPUTarget = 0.80
	DefaultBandLow   = 0.70
	DefaultBandHigh  = 0.88
	DefaultMinFactor = 0.1
	DefaultPeriod    = 250 * time.Millisecond
	DefaultCPUSource = "auto"
)

// AlertingSection is the document's "alerting" section: settings for the
// rejection-ratio alerter (package alerting). Parse fills the defaults
// below for fields left out.
type AlertingSection struct {
	// RejectionRatio is the blocked/total ratio above which an alert fires. Default 0.3.
	RejectionRatio float64
	// ResolveRatio is the ratio below which a firing alert resolves, at most
	// RejectionRatio, so a ratio hovering at the threshold does not flap.
	// Default 0.8 × RejectionRatio.
	ResolveRatio float64
	// Window is the span the ratio is measured over. Default 1m.
	Window time.Duration
	// For is how long the ratio must stay high before the alert fires. Default 30s.
	For time.Duration
	// Interval is how often the alerter evaluates. Default 10s.
	Interval time.Duration
	// RepeatInterval is how often a still-firing alert is re-sent. Default 4h
	// (Alertmanager's repeat_interval).
	RepeatInterval time.Duration
	// MinRequests is the fewest requests in Window for the ratio to count. Default 100.
	MinRequests int
	// Webhook, when set, is an http(s) URL that receives Alertmanager webhook
	// (v4) notifications.
	Webhook string
}

// Defaults of the alerting section.
const (
	DefaultRejectionRatio  = 0.3
	DefaultResolveFraction = 0.8 // ResolveRatio = 0.8 × RejectionRatio
	DefaultAlertWindow     = time.Minute
	DefaultAlertFor        = 30 * time.Second
	DefaultAlertInterval   = 10 * time.Second
	DefaultRepeatInterval  = 4 * time.Hour
	DefaultMinRequests     = 100
)

var adaptiveKeys = []string{"cpuTarget", "bandLow", "bandHigh", "minFactor", "period", "cpuSource"}

func readAdaptive(p *problems, v *node) *AdaptiveSection {
	a := &AdaptiveSection{}
	o := &object{p: p, index: -1, prefix: "adaptive."}
	if !o.walk(v, "", adaptiveKeys, func(key string, v *node) {
		switch key {
		case "cpuTarget":
			a.CPUTarget, _ = o.fraction(key, v, false)
		case "bandLow":
			a.BandLow, _ = o.fraction(key, v, false)
		case "bandHigh":
			a.BandHigh, _ = o.fraction(key, v, false)
		case "minFactor":
			a.MinFactor, _ = o.fraction(key, v, false)
		case "period":
			a.Period, _ = o.between(key, v, time.Millisecond, time.Minute)
		case "cpuSource":
			if src, ok := o.str(key, v); ok {
				switch src {
				case "auto", "cgroup", "process", "host":
					a.CPUSource = src
				default:
					o.fail(key, "%q: must be auto, cgroup, process or host", src)
				}
			}
		}
	}) {
		return nil
	}
	if a.CPUTarget == 0 {
		a.CPUTarget = DefaultCPUTarget
	}
	// The band's defaults follow the target (0.70 and 0.88 around 0.80),
	// rounded to hundredths so 0.8-0.1 prints as 0.7.
	if a.BandLow == 0 {
		a.BandLow = max(0.01, math.Round((a.CPUTarget-(DefaultCPUTarget-DefaultBandLow))*100)/100)
		a.BandLow = min(a.BandLow, a.CPUTarget)
	}
	if a.BandHigh == 0 {
		a.BandHigh = min(1, math.Round((a.CPUTarget+(DefaultBandHigh-DefaultCPUTarget))*100)/100)
		a.BandHigh = max(a.BandHigh, a.CPUTarget)
	}
	if a.MinFactor == 0 {
		a.MinFactor = DefaultMinFactor
	}
	if a.CPUSource == "" {
		a.CPUSource = DefaultCPUSource
	}
	if a.Period == 0 {
		a.Period = DefaultPeriod
	}
	if a.BandLow > a.CPUTarget {
		o.fail("bandLow", "%v: must be <= cpuTarget (%v)", a.BandLow, a.CPUTarget)
	}
	if a.BandHigh < a.CPUTarget {
		o.fail("bandHigh", "%v: must be >= cpuTarget (%v)", a.BandHigh, a.CPUTarget)
	}
	return a
}

var alertingKeys = []string{"rejectionRatio", "resolveRatio", "window", "for", "interval",
	"repeatInterval", "minRequests", "webhook"}

func readAlerting(p *problems, v *node) *AlertingSection {
	a := &AlertingSection{}
	o := &object{p: p, index: -1, prefix: "alerting."}
	resolveGiven := false
	if !o.walk(v, "", alertingKeys, func(key string, v *node) {
		switch key {
		case "rejectionRatio":
			a.RejectionRatio, _ = o.fraction(key, v, false)
		case "resolveRatio":
			a.ResolveRatio, resolveGiven = o.fraction(key, v, true)
		case "window":
			a.Window, _ = o.between(key, v, time.Second, 24*time.Hour)
		case "for":
			a.For, _ = o.between(key, v, 0, 24*time.Hour)
		case "interval":
			a.Interval, _ = o.between(key, v, 100*time.Millisecond, time.Hour)
		case "repeatInterval":
			a.RepeatInterval, _ = o.between(key, v, time.Second, 7*24*time.Hour)
		case "minRequests":
			if n, ok := o.integer(key, v); ok {
				if n < 0 {
					o.fail(key, "must be >= 0, got %d", n)
				}
				a.MinRequests = n
			}
		case "webhook":
			if s, ok := o.str(key, v); ok {
				if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					// The URL may hold a token: do not echo it.
					o.fail(key, "must be an absolute http or https URL")
				}
				a.Webhook = s
			}
		}
	}) {
		return nil
	}
	if a.RejectionRatio == 0 {
		a.RejectionRatio = DefaultRejectionRatio
	}
	if !resolveGiven {
		a.ResolveRatio = DefaultResolveFraction * a.RejectionRatio
	} else if a.ResolveRatio > a.RejectionRatio {
		o.fail("resolveRatio", "%v: must be <= rejectionRatio (%v)", a.ResolveRatio, a.RejectionRatio)
	}
	if a.Window == 0 {
		a.Window = DefaultAlertWindow
	}
	if !o.given["for"] {
		a.For = DefaultAlertFor
	}
	if a.Interval == 0 {
		a.Interval = DefaultAlertInterval
	}
	if a.RepeatInterval == 0 {
		a.RepeatInterval = DefaultRepeatInterval
	}
	if !o.given["minRequests"] {
		a.MinRequests = DefaultMinRequests
	}
	return a
}

// fraction reads a ratio in (0, 1], or [0, 1] when zeroOK.
func (o *object) fraction(key string, v *node, zeroOK bool) (float64, bool) {
	f, ok := o.number(key, v)
	if !ok {
		return 0, false
	}
	if f > 1 || f < 0 || (f == 0 && !zeroOK) {
		if zeroOK {
			o.fail(key, "%s: must be in [0, 1]", v.text)
		} else {
			o.fail(key, "%s: must be in (0, 1]", v.text)
		}
		return 0, false
	}
	return f, true
}

// between reads a duration in [lo, hi].
func (o *object) between(key string, v *node, lo, hi time.Duration) (time.Duration, bool) {
	d, ok := o.duration(key, v)
	if !ok {
		return 0, false
	}
	if d < lo || d > hi {
		o.fail(key, "%q: must be between %v and %v", v.text, fmtDuration(lo), fmtDuration(hi))
		return 0, false
	}
	return d, true
}
