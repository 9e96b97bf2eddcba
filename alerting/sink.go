package alerting

import (
	"context"
	"log/slog"
	"time"
)

// Sink receives notifications. Notify is called from the sink's own
// goroutine, one notification at a time, in order; it should honour ctx,
// which is cancelled when Close gives up waiting. A slow or failing sink
// delays only its own queue.
type Sink interface {
	// Notify delivers a. An error is counted in Stats.Failed and logged;
	// the alerter does not retry, so a sink that wants retries does them.
	Notify(ctx context.Context, a Alert) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(context.Context, Alert) error

// Notify returns f(ctx, a).
func (f SinkFunc) Notify(ctx context.Context, a Alert) error { return f(ctx, a) }

// Repeater is implemented by sinks that want still-firing alerts re-sent at
// their own pace instead of Config.RepeatInterval, such as the Alertmanager
// push sink, which must re-send before Alertmanager times the alert out.
type Repeater interface {
	// RepeatInterval is how often a still-firing alert is re-sent to
	// this sink.
	RepeatInterval() time.Duration
}

// SlogSink logs each notification: firing at Warn, resolved at Info, with
// the alert's name, resource, ratio, counts and times as attributes.
type SlogSink struct {
	Logger *slog.Logger // must not be nil; NewSlogSink fills in slog.Default()
}

// NewSlogSink returns a sink that logs to l (slog.Default() when nil).
func NewSlogSink(l *slog.Logger) *SlogSink {
	if l == nil {
		l = slog.Default()
	}
	return &SlogSink{Logger: l}
}

// Notify logs a.
func (s *SlogSink) Notify(ctx context.Context, a Alert) error {
	level := slog.LevelWarn
	if a.Status == StatusResolved {
		level = slog.LevelInfo
	}
	attrs := []slog.Attr{
		slog.String("alert", a.Name),
		slog.String("status", a.Status),
		slog.String("resource", a.Resource),
		slog.Float64("ratio", a.Ratio),
		slog.Float64("threshold", a.Threshold),
		slog.Uint64("requests", a.Requests),
		slog.Uint64("blocked", a.Blocked),
		slog.Time("startsAt", a.StartsAt),
	}
	if a.Status == StatusResolved {
		attrs = append(attrs, slog.Time("endsAt", a.EndsAt))
	}
	s.Logger.LogAttrs(ctx, level, a.Annotations["summary"], attrs...)
	return nil
}

// String names the sink "slog" in the alerter's logs.
func (s *SlogSink) String() string { return "slog" }
