package alerting

import (
	"github.com/flowgate/flowgate/rules"
)

// FromSection turns the rules document's "alerting" section into alerter
// options: WithConfig with the section's thresholds and, when the section
// names a webhook, WithSink with an Alertmanager webhook (v4) sink for it,
// built with httpOpts. A nil section gives WithConfig(Defaults()).
func FromSection(s *rules.AlertingSection, httpOpts ...HTTPOption) ([]Option, error) {
	if s == nil {
		return []Option{WithConfig(Defaults())}, nil
	}
	opts := []Option{WithConfig(Config{
		RejectionRatio: s.RejectionRatio,
		ResolveRatio:   s.ResolveRatio,
		Window:         s.Window,
		For:            s.For,
		Interval:       s.Interval,
		RepeatInterval: s.RepeatInterval,
		MinRequests:    s.MinRequests,
	})}
	if s.Webhook != "" {
		sink, err := NewWebhookSink(s.Webhook, httpOpts...)
		if err != nil {
			return nil, err
		}
		opts = append(opts, WithSink(sink))
	}
	return opts, nil
}
