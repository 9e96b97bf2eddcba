package alerting

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// WebhookSink POSTs each notification as an Alertmanager webhook (version
// "4") message, one alert per message, so any receiver written for
// Alertmanager's webhook_config accepts it.
type WebhookSink struct {
	p *poster
}

// NewWebhookSink returns a sink posting to rawURL (absolute http or https;
// never echoed in errors or logs but with userinfo and query redacted).
func NewWebhookSink(rawURL string, opts ...HTTPOption) (*WebhookSink, error) {
	p, err := newPoster(rawURL, opts)
	if err != nil {
		return nil, err
	}
	return &WebhookSink{p: p}, nil
}

// Notify posts a, retrying as configured.
func (s *WebhookSink) Notify(ctx context.Context, a Alert) error {
	body, err := json.Marshal(s.message(a))
	if err != nil {
		return fmt.Errorf("alerting: webhook: %w", err)
	}
	return s.p.post(ctx, body)
}

// String names the sink by its redacted URL.
func (s *WebhookSink) String() string { return "webhook " + s.p.redacted }

// webhookMessage is Alertmanager's webhook payload, version 4.
type webhookMessage struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []webhookAlert    `json:"alerts"`
}

type webhookAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"` // zero (0001-01-01T00:00:00Z) while firing, as Alertmanager
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

func (s *WebhookSink) message(a Alert) webhookMessage {
	labels := nonNil(a.Labels)
	annotations := nonNil(a.Annotations)
	// Group by alertname and resource: one group per alert, as an
	// Alertmanager route with group_by [alertname, resource] would.
	group := map[string]string{}
	for _, k := range []string{"alertname", "resource"} {
		if v, ok := labels[k]; ok {
			group[k] = v
		}
	}
	return webhookMessage{
		Version:           "4",
		GroupKey:          "{}:" + labelString(group),
		Status:            a.Status,
		Receiver:          s.p.receiver,
		GroupLabels:       group,
		CommonLabels:      labels,
		CommonAnnotations: annotations,
		ExternalURL:       s.p.externalURL,
		Alerts: []webhookAlert{{
			Status: a.Status, Labels: labels, Annotations: annotations,
			StartsAt: a.StartsAt.UTC(), EndsAt: a.EndsAt.UTC(),
			GeneratorURL: s.p.generatorURL, Fingerprint: a.Fingerprint(),
		}},
	}
}

// labelString formats labels as Alertmanager does in group keys:
// {a="x", b="y"}, names sorted, values quoted.
func labelString(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + "=" + strconv.Quote(labels[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
