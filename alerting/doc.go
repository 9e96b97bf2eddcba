// Package alerting owns the rejection-ratio alert: it samples a flow
// engine's lifetime counters, computes blocked/(passed+waited+blocked) per resource
// and over all traffic across a sliding window, moves each through
// inactive → pending → firing → resolved, and hands notifications to sinks.
//
// The ratio of a window is computed from the deltas of the counters sampled
// at each evaluation (a small ring of samples per resource, so memory is
// bounded), and only counts when the window holds at least MinRequests
// calls. An alert goes pending when the ratio is above RejectionRatio, fires
// when it has stayed there for For, re-notifies every RepeatInterval while
// firing, and resolves — with exactly one resolved notification — when the
// ratio falls below the lower ResolveRatio (or nothing is blocked any
// more). The gap between the two thresholds is what keeps a ratio hovering
// at the threshold from flapping. Defaults: 0.3, 0.24, 1m, 30s, 4h, 100,
// evaluated every 10s.
//
// The alert on all traffic has Resource "" and no resource label; the
// others carry label resource. Each sink has its own bounded queue and
// goroutine: a slow or failing sink never delays evaluation or the other
// sinks; notifications that find a queue full are dropped and counted
// (Stats). Sinks: SinkFunc, SlogSink, WebhookSink (Alertmanager webhook v4
// JSON, with retries and redacted errors) and AlertmanagerSink (Alertmanager's
// /api/v2/alerts).
//
// An Alerter is a metrics.AlertSource (its Firing method names only
// standard types, so this package does not import metrics): pass it to
// metrics.WithAlerts to export flowgate_alerts_firing{alert,resource}.
//
// This package owns the settings of a rules document's "alerting" section
// and their defaults: Section (Config field for field, plus Webhook) with
// Check for its problems and Options to build an Alerter; SetConfig applies
// a reloaded section. WithSnapshots watches counts that are not an
// engine's, such as the token service's decisions.
package alerting
