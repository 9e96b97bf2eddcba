package alerting

import (
	"net/url"
)

// Section is the rules document's "alerting" section: the alerter's
// thresholds and timing, and an optional webhook. This package owns each
// setting and its default; package rules reads the document's fields into
// a Section that starts from Defaults, and reports Check's problems under
// "alerting.".
type Section struct {
	// Config holds the thresholds and timing, field for field as in the
	// document.
	Config Config
	// Webhook, when set, is an http(s) URL that receives Alertmanager
	// webhook (v4) notifications.
	Webhook string
}

// DefaultSection is the section of a document that has none, or that sets
// no field: Defaults() and no webhook.
func DefaultSection() Section { return Section{Config: Defaults()} }

// Check calls report with the field name and message of every problem of
// s, as Config.Check does, then the webhook's.
func (s Section) Check(report func(field, msg string)) {
	s.Config.Check(report)
	if s.Webhook == "" {
		return
	}
	if u, err := url.Parse(s.Webhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL may hold a token: do not echo it.
		report("webhook", "must be an absolute http or https URL")
	}
}

// Options turns s into alerter options: WithConfig with its thresholds
// and, when it names a webhook, WithSink with an Alertmanager webhook (v4)
// sink built with httpOpts.
func (s Section) Options(httpOpts ...HTTPOption) ([]Option, error) {
	opts := []Option{WithConfig(s.Config)}
	if s.Webhook != "" {
		sink, err := NewWebhookSink(s.Webhook, httpOpts...)
		if err != nil {
			return nil, err
		}
		opts = append(opts, WithSink(sink))
	}
	return opts, nil
}

// SetConfig replaces the thresholds and timing from the next evaluation on,
// as a rules document's reload does: each resource keeps its state (a firing
// alert stays firing until the new thresholds resolve it) and its samples,
// re-spaced for a new Window or Interval; Start's next sleep uses the new
// Interval, and sinks that do not set their own repeat the new
// RepeatInterval. Sinks stay as they are (a changed webhook needs a new
// Alerter). An invalid c changes nothing and is returned as an error.
func (a *Alerter) SetConfig(c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	old := a.cfg
	a.cfg = c
	if c.Window != old.Window || c.Interval != old.Interval {
		for _, s := range a.series {
			s.win = s.win.respaced(c.Window, c.Interval)
		}
		if a.all != nil {
			a.all.win = a.all.win.respaced(c.Window, c.Interval)
		}
	}
	for _, q := range a.queues {
		if !q.own {
			q.repeat = c.RepeatInterval
		}
	}
	return nil
}
