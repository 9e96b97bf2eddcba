package alerting

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// AlertmanagerSink pushes alerts to Alertmanager's API, POST
// /api/v2/alerts, as Prometheus does. Alertmanager then groups, silences,
// inhibits and routes them. Firing alerts are re-sent every resend interval
// (it is a Repeater) and each push is valid for four of them, so
// Alertmanager resolves the alert by itself if this process dies.
type AlertmanagerSink struct {
	p *poster
}

// NewAlertmanagerSink returns a sink pushing to the Alertmanager at baseURL
// (e.g. "http://alertmanager:9093"; a path prefix is kept).
func NewAlertmanagerSink(baseURL string, opts ...HTTPOption) (*AlertmanagerSink, error) {
	u, err := url.Parse(baseURL)
	if err == nil {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v2/alerts"
		baseURL = u.String()
	}
	p, err := newPoster(baseURL, opts)
	if err != nil {
		return nil, err
	}
	return &AlertmanagerSink{p: p}, nil
}

// RepeatInterval is the resend interval (WithResendInterval, default 1m).
func (s *AlertmanagerSink) RepeatInterval() time.Duration { return s.p.repeat }

// String names the sink by its redacted URL.
func (s *AlertmanagerSink) String() string { return "alertmanager " + s.p.redacted }

// postableAlert is one element of Alertmanager's POST /api/v2/alerts body.
type postableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// Notify pushes a: a firing alert ends 4 resend intervals after this
// evaluation unless pushed again; a resolved one ends when it resolved.
func (s *AlertmanagerSink) Notify(ctx context.Context, a Alert) error {
	ends := a.EndsAt
	if a.Status != StatusResolved || ends.IsZero() {
		ends = a.UpdatedAt.Add(pushValidityMultiple * s.p.repeat)
	}
	body, err := json.Marshal([]postableAlert{{
		Labels: nonNil(a.Labels), Annotations: a.Annotations,
		StartsAt: a.StartsAt.UTC(), EndsAt: ends.UTC(), GeneratorURL: s.p.generatorURL,
	}})
	if err != nil {
		return fmt.Errorf("alerting: alertmanager: %w", err)
	}
	return s.p.post(ctx, body)
}
